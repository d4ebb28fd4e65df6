package staticsite

// The performance gate's hold on the Deployment (docs/design/capacity.md): with spec.rollout.performanceGate, a
// desired pod template whose identity differs from the live one reaches the Deployment only once the gate passed
// it (status.performanceGate.candidate is it, phase Passed or Overridden) or a person overrode the gate for it
// (AnnotationPerformanceGateOverride names its id). Until then the Deployment keeps its live template while every
// other field (replicas from the scale subresource, the strategy) still applies; step_capacity.go measures the
// candidate on a canary pod.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// gateView is what reconcileDeployment learned for the gate: the live (serving) and desired templates' identities,
// and whether the desired one was held back or let through by the override.
type gateView struct {
	serving, desired v1alpha1.TemplateIdentity
	desiredTemplate  corev1.PodTemplateSpec
	held             bool // the Deployment kept its live template
	overridden       bool // the override annotation names the desired template, which rolls out
}

// gateAdmits: the gate's last decision (status) or the override lets the desired template roll out.
func gateAdmits(site *v1alpha1.StaticSite, desiredID string) (admit, overridden bool) {
	if site.Annotations[v1alpha1.AnnotationPerformanceGateOverride] == desiredID {
		return true, true
	}
	g := site.Status.PerformanceGate
	return g != nil && g.Candidate.ID == desiredID && (g.Phase == v1alpha1.GatePassed || g.Phase == v1alpha1.GateOverridden), false
}

// holdTemplate puts the live pod template into desired when the gate does not admit the desired one, and records
// the gate's view in st. A site without a Deployment yet (nothing serves, nothing to compare with) is not gated.
func (r *Reconciler) holdTemplate(ctx context.Context, st *observation, key types.NamespacedName, desired *appsv1ac.DeploymentApplyConfiguration) error {
	st.gate = nil
	if gateSpec(st.site) == nil {
		return nil
	}
	live := &appsv1.Deployment{}
	if err := r.Get(ctx, key, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if !metav1.IsControlledBy(live, st.site) {
		return nil // refused by the apply
	}
	desiredTemplate, err := podTemplateOf(desired.Spec.Template)
	if err != nil {
		return fmt.Errorf("read the desired pod template: %w", err)
	}
	v := &gateView{serving: templateIdentity(&live.Spec.Template, st.content), desired: templateIdentity(&desiredTemplate, st.content),
		desiredTemplate: desiredTemplate}
	st.gate = v
	if v.serving.ID == v.desired.ID {
		return nil
	}
	admit, overridden := gateAdmits(st.site, v.desired.ID)
	v.overridden = overridden
	if admit {
		return nil
	}
	// The template as this operator last applied it (the fields it owns), not the API server's defaulted copy.
	owned, err := appsv1ac.ExtractDeployment(live, FieldOwner)
	if err != nil {
		return fmt.Errorf("extract the live Deployment's template: %w", err)
	}
	if owned.Spec == nil || owned.Spec.Template == nil {
		return nil // nothing of ours to keep: let the desired template through
	}
	desired.Spec.Template = owned.Spec.Template
	v.held = true
	return nil
}
