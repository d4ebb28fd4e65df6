package pool

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// applyResult says what an apply did.
type applyResult string

const (
	applyCreated   applyResult = "Created"
	applyUpdated   applyResult = "Updated"
	applyUnchanged applyResult = "Unchanged"
)

// ReasonNotOwned / ReasonRejected (Stalled): an object with a pool object's name that the pool does not control,
// or one the API server refused.
const (
	ReasonNotOwned         = v1alpha1.ReasonNotOwned
	ReasonRejected         = "ObjectRejected"
	ReasonNamespaceMissing = "NamespaceMissing"
)

// notOwnedError: an object with a pool object's name exists and is not controlled by the pool. The operator never
// takes it over (force-applying would make it the pool's, and the garbage collector would delete it with the pool).
type notOwnedError struct {
	kind string
	key  types.NamespacedName
}

func (e *notOwnedError) Error() string {
	return fmt.Sprintf("%s %s exists and is not owned by this StaticSitePool: the operator does not take over objects it did not create; delete or rename it", e.kind, e.key)
}

// apply server-side applies desired as the operator's field manager, forcing ownership of conflicting fields, unless
// the fields the operator owns in the live object (the cache's, else a direct read) already equal desired: then no
// request is sent. live receives the object as it was before.
func (r *Reconciler) apply(ctx context.Context, pool *v1alpha1.StaticSitePool, kind string, live client.Object,
	desired runtime.ApplyConfiguration, key types.NamespacedName, extract func(client.Object) (any, error)) (applyResult, error) {
	existed := true
	if err := r.Get(ctx, key, live); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", err
		}
		if err := r.APIReader.Get(ctx, key, live); err != nil {
			if !apierrors.IsNotFound(err) {
				return "", err
			}
			existed = false
		}
	}
	if existed && !metav1.IsControlledBy(live, pool) {
		return "", &notOwnedError{kind: kind, key: key}
	}
	if existed {
		owned, err := extract(live)
		if err != nil {
			return "", fmt.Errorf("extract fields of %s owned by %s: %w", key, sitechild.FieldOwner, err)
		}
		if equality.Semantic.DeepEqual(owned, desired) {
			return applyUnchanged, nil
		}
	}
	if err := r.Apply(ctx, desired, client.FieldOwner(sitechild.FieldOwner), client.ForceOwnership); err != nil {
		return "", err
	}
	if existed {
		return applyUpdated, nil
	}
	return applyCreated, nil
}

// applyOrReject applies and turns what only a person can fix (a foreign object of that name, a refusal by the API
// server) into the pool's Stalled problem; other errors are returned to retry the pass.
func (r *Reconciler) applyOrReject(ctx context.Context, o *observation, kind string, live client.Object,
	desired runtime.ApplyConfiguration, key types.NamespacedName, extract func(client.Object) (any, error)) (applyResult, error) {
	res, err := r.apply(ctx, o.pool, kind, live, desired, key, extract)
	if err == nil {
		return res, nil
	}
	var foreign *notOwnedError
	switch {
	case errors.As(err, &foreign):
		o.reject(&reconcile.Problem{Reason: ReasonNotOwned, Message: err.Error()})
	case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
		o.reject(reconcile.Problemf(ReasonRejected, "%s %s: %v", kind, key, err))
	default:
		return "", fmt.Errorf("apply %s %s: %w", kind, key, err)
	}
	return applyUnchanged, nil
}

func extractConfigMap(o client.Object) (any, error) {
	return corev1ac.ExtractConfigMap(o.(*corev1.ConfigMap), sitechild.FieldOwner)
}

func extractDeployment(o client.Object) (any, error) {
	return appsv1ac.ExtractDeployment(o.(*appsv1.Deployment), sitechild.FieldOwner)
}

func extractService(o client.Object) (any, error) {
	return corev1ac.ExtractService(o.(*corev1.Service), sitechild.FieldOwner)
}

func extractPodDisruptionBudget(o client.Object) (any, error) {
	return policyv1ac.ExtractPodDisruptionBudget(o.(*policyv1.PodDisruptionBudget), sitechild.FieldOwner)
}

func extractNetworkPolicy(o client.Object) (any, error) {
	return networkingv1ac.ExtractNetworkPolicy(o.(*networkingv1.NetworkPolicy), sitechild.FieldOwner)
}

func extractServiceAccount(o client.Object) (any, error) {
	return corev1ac.ExtractServiceAccount(o.(*corev1.ServiceAccount), sitechild.FieldOwner)
}

func extractRole(o client.Object) (any, error) {
	return rbacv1ac.ExtractRole(o.(*rbacv1.Role), sitechild.FieldOwner)
}

func extractRoleBinding(o client.Object) (any, error) {
	return rbacv1ac.ExtractRoleBinding(o.(*rbacv1.RoleBinding), sitechild.FieldOwner)
}
