package staticsite

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// A Git site's pin (docs/design/deploys.md): the DeployPinned condition in the status, its events after the status
// write. gitcontent decides the condition; this file only places it.

// setDeployPinned sets the DeployPinned condition, or removes it (c nil: the site asks for no pin).
func setDeployPinned(set reconcile.Conditions, c *metav1.Condition) {
	if c == nil {
		set.Remove(v1alpha1.ConditionDeployPinned)
		return
	}
	set.Set(c.Type, c.Status, c.Reason, c.Message)
}

// recordDeployPinned emits an event when DeployPinned changes: Normal once every pod serves the pin, Warning for a
// pin refused (not in the history, or not a commit), Normal when the pin is lifted. Rolling out and not yet
// delivered are passing states: no event.
func (r *Reconciler) recordDeployPinned(before, after *v1alpha1.StaticSite) {
	tr := reconcile.TransitionOf(before.Status.Conditions, after.Status.Conditions, v1alpha1.ConditionDeployPinned)
	switch {
	case tr.Before != nil && tr.After == nil:
		r.Recorder.Event(after, corev1.EventTypeNormal, "Unpinned", "the pin is lifted: the newest deploy of the ref is served again")
	case !tr.Changed():
	case tr.After.Status == metav1.ConditionTrue:
		r.Recorder.Event(after, corev1.EventTypeNormal, tr.After.Reason, "DeployPinned: "+tr.After.Message)
	case tr.After.Reason == v1alpha1.ReasonPinNotInHistory || tr.After.Reason == v1alpha1.ReasonPinInvalid:
		r.Recorder.Event(after, corev1.EventTypeWarning, tr.After.Reason, "DeployPinned False: "+tr.After.Message)
	}
}
