package staticsite

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// The tenancy policy (internal/tenancy) is checked before any step: a site that breaks it gets no child created or
// changed, whatever the API server admitted (the policy may have been tightened since, or set without the chart's
// admission policy). What already runs is left as it was: it was built from a spec the policy allowed then.

// policy is the Reconciler's policy; nil means the single-tenant one (tests that are not about tenancy).
func (r *Reconciler) policy() tenancy.Policy {
	if r.Policy == nil {
		return tenancy.Unrestricted()
	}
	return *r.Policy
}

// refuseByPolicy writes the status of a site the policy refuses: Stalled and not Ready, with reason
// PolicyViolation and the fields named. The rest of the status stays as the last allowed pass left it.
func (r *Reconciler) refuseByPolicy(site *v1alpha1.StaticSite, vs tenancy.Violations) {
	s := &site.Status
	msg := vs.Error()
	set := func(t string, status metav1.ConditionStatus) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: t, Status: status, Reason: v1alpha1.ReasonPolicyViolation,
			Message: msg, ObservedGeneration: site.Generation, LastTransitionTime: metav1.NewTime(r.now())})
	}
	s.ObservedGeneration = site.Generation
	set(v1alpha1.ConditionStalled, metav1.ConditionTrue)
	set(v1alpha1.ConditionReady, metav1.ConditionFalse)
	meta.RemoveStatusCondition(&s.Conditions, v1alpha1.ConditionReconciling)
}
