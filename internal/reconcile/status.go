package reconcile

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// WriteStatus writes obj's status when changed and, only once the write is in, records its transitions. Update,
// not patch: the resourceVersion makes a pass that read an old object lose (a conflict, returned as is for the
// caller to requeue), not overwrite what another writer put there meanwhile (the autoscaler writes its own fields
// of a StaticSite's status). Recording after the write means a lost write never repeats or invents an event: the
// next pass sees the same transition again and records it then.
func WriteStatus(ctx context.Context, c client.StatusClient, obj client.Object, changed bool, recordTransitions func()) error {
	if !changed {
		return nil
	}
	if err := c.Status().Update(ctx, obj); err != nil {
		return err
	}
	recordTransitions()
	return nil
}

// Transition is condition t's change between the status a pass read (Before, nil when absent) and the one it wrote
// (After, nil when absent).
type Transition struct{ Before, After *metav1.Condition }

// TransitionOf finds condition t in both lists.
func TransitionOf(before, after []metav1.Condition, t string) Transition {
	return Transition{Before: meta.FindStatusCondition(before, t), After: meta.FindStatusCondition(after, t)}
}

// Changed says the condition is present after the pass and was absent before, or has another status or reason.
func (tr Transition) Changed() bool {
	return tr.After != nil && (tr.Before == nil || tr.Before.Status != tr.After.Status || tr.Before.Reason != tr.After.Reason)
}

// Became says the condition has status s after the pass and did not before.
func (tr Transition) Became(s metav1.ConditionStatus) bool {
	return tr.After != nil && tr.After.Status == s && (tr.Before == nil || tr.Before.Status != s)
}

// Was says the condition had status s before the pass.
func (tr Transition) Was(s metav1.ConditionStatus) bool {
	return tr.Before != nil && tr.Before.Status == s
}
