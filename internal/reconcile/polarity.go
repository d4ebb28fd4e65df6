package reconcile

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Polarity tells the conditions that are True when something needs attention (abnormal-true, kstatus' term;
// flux's "negative polarity": Stalled, Reconciling, Failed) from the ones that are True when things are well
// (normal-true: Ready, ContentAvailable). Each API group declares its abnormal-true list beside its condition types
// (api/v1alpha1), so the list is data, not knowledge spread over the controllers.
type Polarity struct{ abnormalTrue map[string]bool }

// NewPolarity returns the polarity of a set of condition types: the ones listed are abnormal-true, every other is
// normal-true.
func NewPolarity(abnormalTrue []string) Polarity {
	p := Polarity{abnormalTrue: make(map[string]bool, len(abnormalTrue))}
	for _, t := range abnormalTrue {
		p.abnormalTrue[t] = true
	}
	return p
}

// AbnormalTrue says condition type t is True when something needs attention.
func (p Polarity) AbnormalTrue(t string) bool { return p.abnormalTrue[t] }

// Healthy says c reports that things are well: a normal-true condition that is True, an abnormal-true one that is
// not. Unknown is never healthy.
func (p Polarity) Healthy(c metav1.Condition) bool {
	if c.Status == metav1.ConditionUnknown {
		return false
	}
	return (c.Status == metav1.ConditionTrue) != p.abnormalTrue[c.Type]
}

// EventType is the event type of a transition to c: Normal when c is healthy, Warning when it is not.
func (p Polarity) EventType(c metav1.Condition) string {
	if p.Healthy(c) {
		return corev1.EventTypeNormal
	}
	return corev1.EventTypeWarning
}
