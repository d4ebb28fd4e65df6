package reconcile

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Conditions sets the conditions of one object's status in one pass: every condition it sets carries the object's
// generation and, when its status changes, the pass's one clock reading as its transition time (an unchanged
// status keeps the time it had, as meta.SetStatusCondition does).
type Conditions struct {
	list       *[]metav1.Condition
	generation int64
	now        time.Time
}

// NewConditions returns the setter for list, for an object at generation, in a pass that read the clock at now.
func NewConditions(list *[]metav1.Condition, generation int64, now time.Time) Conditions {
	return Conditions{list: list, generation: generation, now: now}
}

// Set sets condition t.
func (c Conditions) Set(t string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(c.list, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message,
		ObservedGeneration: c.generation, LastTransitionTime: metav1.NewTime(c.now)})
}

// SetProblem sets condition t to status with the problem's reason and message.
func (c Conditions) SetProblem(t string, status metav1.ConditionStatus, p *Problem) {
	c.Set(t, status, p.Reason, p.Message)
}

// Remove removes condition t (an abnormal-true condition that no longer holds is absent, not False).
func (c Conditions) Remove(t string) { meta.RemoveStatusCondition(c.list, t) }
