package staticsite

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch

// reconcileService applies the Service in front of the pods.
func (r *Reconciler) reconcileService(ctx context.Context, st *observation) error {
	site := st.site
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "Service", &corev1.Service{}, desired.Service(site),
		types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, extractService)
	if err != nil {
		return childRefused(st, "Service", v1alpha1.ReasonServiceRejected, err)
	}
	r.recordApply(site, "Service", res)
	return nil
}
