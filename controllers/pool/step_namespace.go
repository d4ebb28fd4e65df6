package pool

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get

// reconcileNamespace checks that spec.namespace exists. The platform creates it (and its policies: Pod Security,
// quotas, egress); the operator never does, so a typo does not become a namespace. Read directly, not through a
// cache: the operator needs no watch on every namespace for this one Get per pass.
func (r *Reconciler) reconcileNamespace(ctx context.Context, o *observation) error {
	err := r.APIReader.Get(ctx, client.ObjectKey{Name: o.pool.Spec.Namespace}, &corev1.Namespace{})
	if apierrors.IsNotFound(err) {
		o.namespaceMissing = true
		return nil
	}
	return err
}
