package staticsite

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch

// reconcileService applies the Service in front of the pods. A site leaving a pool (pool.go) keeps the pool's
// Service, without a selector, until its own pods are ready.
func (r *Reconciler) reconcileService(ctx context.Context, st *observation) error {
	site := st.site
	want := desired.Service(site)
	if p := st.pool; p != nil && p.phase == phaseMovingOut {
		if p.servicePooled && !ownPodsReady(st) {
			want = desired.PoolService(site)
		} else {
			p.selectorBack = true
		}
	}
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "Service", &corev1.Service{}, want,
		types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, extractService)
	if err != nil {
		return childRefused(st, "Service", v1alpha1.ReasonServiceRejected, err)
	}
	r.recordApply(site, "Service", res)
	return nil
}

// ownPodsReady: the site's Deployment is rolled out and has a ready pod (or is meant to have none).
func ownPodsReady(st *observation) bool {
	want := desired.Replicas(st.site)
	if want == 0 {
		return true
	}
	return st.deployment != nil && st.deployment.Status.ReadyReplicas > 0 && rolloutOf(st.deployment, want, st.templateChanged).done
}
