package desired

import (
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// PodDisruptionBudget is the site's PodDisruptionBudget, or nil when the site should have none: a site
// without spec.disruption gets maxUnavailable 1 once it runs more than one replica (a single replica with a budget
// of 0 would block node drains forever). Pods that are not ready may always be evicted: they serve nothing.
func PodDisruptionBudget(site *v1alpha1.StaticSite) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	var maxUnavailable intstr.IntOrString
	switch {
	case site.Spec.Disruption != nil:
		maxUnavailable = site.Spec.Disruption.MaxUnavailable
	case Replicas(site) > 1:
		maxUnavailable = intstr.FromInt32(1)
	default:
		return nil
	}
	return policyv1ac.PodDisruptionBudget(site.Name, site.Namespace).
		WithLabels(sitechild.ObjectLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(maxUnavailable).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(sitechild.SelectorLabels(site))).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
}
