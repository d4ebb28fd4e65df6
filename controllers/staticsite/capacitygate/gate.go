package capacitygate

// The performance gate's hold on the Deployment: with spec.rollout.performanceGate, a desired pod template whose
// identity differs from the live one reaches the Deployment only once the gate passed it
// (status.performanceGate.candidate is it, phase Passed or Overridden) or a person overrode the gate for it
// (AnnotationPerformanceGateOverride names its id). Until then the Deployment keeps its live template while every
// other field (replicas from the scale subresource, the strategy) still applies; step.go measures the candidate on
// a canary pod.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// gateAdmits: the gate's last decision (status) or the override lets the desired template roll out.
func gateAdmits(site *v1alpha1.StaticSite, desiredID string) (admit, overridden bool) {
	if site.Annotations[v1alpha1.AnnotationPerformanceGateOverride] == desiredID {
		return true, true
	}
	g := site.Status.PerformanceGate
	return g != nil && g.Candidate.ID == desiredID && (g.Phase == v1alpha1.GatePassed || g.Phase == v1alpha1.GateOverridden), false
}

// Hold puts the live pod template into desired (the site's Deployment, key) when the gate does not admit the
// desired one, and returns the gate's view (nil: the gate is off, or there is no Deployment of the site yet:
// nothing serves, nothing to compare with). The view comes back with an error that follows it.
func (s Step) Hold(ctx context.Context, site *v1alpha1.StaticSite, content Content, key types.NamespacedName,
	desired *appsv1ac.DeploymentApplyConfiguration) (*View, error) {
	if GateSpec(site) == nil {
		return nil, nil
	}
	live := &appsv1.Deployment{}
	if err := s.Client.Get(ctx, key, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if !metav1.IsControlledBy(live, site) {
		return nil, nil // refused by the apply
	}
	desiredTemplate, err := PodTemplateOf(desired.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("read the desired pod template: %w", err)
	}
	v := &View{serving: Identify(&live.Spec.Template, content), desired: Identify(&desiredTemplate, content),
		desiredTemplate: desiredTemplate}
	if v.serving.ID == v.desired.ID {
		return v, nil
	}
	admit, overridden := gateAdmits(site, v.desired.ID)
	v.overridden = overridden
	if admit {
		return v, nil
	}
	// The template as this operator last applied it (the fields it owns), not the API server's defaulted copy.
	owned, err := appsv1ac.ExtractDeployment(live, sitechild.FieldOwner)
	if err != nil {
		return v, fmt.Errorf("extract the live Deployment's template: %w", err)
	}
	if owned.Spec == nil || owned.Spec.Template == nil {
		return v, nil // nothing of ours to keep: let the desired template through
	}
	desired.Spec.Template = owned.Spec.Template
	v.held = true
	return v, nil
}
