package staticsite

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete

// reconcileDisruptionBudget applies the PodDisruptionBudget, or deletes the one it made when none is wanted.
func (r *Reconciler) reconcileDisruptionBudget(ctx context.Context, st *observation) error {
	site := st.site
	key := types.NamespacedName{Namespace: site.Namespace, Name: site.Name}
	want := desired.PodDisruptionBudget(site)
	if want == nil {
		live := &policyv1.PodDisruptionBudget{}
		if err := r.Get(ctx, key, live); err != nil {
			return ctrl.IgnoreNotFound(err)
		}
		if !metav1.IsControlledBy(live, site) {
			return nil // not ours: leave it
		}
		if err := r.Delete(ctx, live, ctrl.Preconditions{UID: &live.UID}); ctrl.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete PodDisruptionBudget: %w", err)
		}
		r.Recorder.Eventf(site, corev1.EventTypeNormal, eventDeleted, "Deleted PodDisruptionBudget %s: %d replica(s) need no budget", site.Name, desired.Replicas(site))
		return nil
	}
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "PodDisruptionBudget", &policyv1.PodDisruptionBudget{}, want, key, extractPodDisruptionBudget)
	if err != nil {
		return childRefused(st, "PodDisruptionBudget", v1alpha1.ReasonPodDisruptionBudgetRejected, err)
	}
	r.recordApply(site, "PodDisruptionBudget", res)
	return nil
}
