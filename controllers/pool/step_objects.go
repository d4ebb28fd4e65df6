package pool

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// The operator creates the fetcher's Role: it can grant only what it holds itself (configmaps get/list/watch,
// which it has for the sites' content).
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=roles;rolebindings,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch

// object is one desired object of the pool and how to read it back.
type object struct {
	kind    string
	live    client.Object
	desired runtime.ApplyConfiguration
	name    string
	extract func(client.Object) (any, error)
}

// reconcileFetcher applies the fetcher's objects, its identity first.
func (r *Reconciler) reconcileFetcher(ctx context.Context, o *observation) error {
	p, name := o.pool, poolplacement.FetcherName(o.pool.Name)
	return r.applyAll(ctx, o, []object{
		{"ServiceAccount", &corev1.ServiceAccount{}, fetcherServiceAccount(p), name, extractServiceAccount},
		{"Role", &rbacv1.Role{}, fetcherRole(p), name, extractRole},
		{"RoleBinding", &rbacv1.RoleBinding{}, fetcherRoleBinding(p), name, extractRoleBinding},
		{"NetworkPolicy", &networkingv1.NetworkPolicy{}, fetcherNetworkPolicy(p, r.OperatorNamespace), name, extractNetworkPolicy},
		{"Service", &corev1.Service{}, fetcherService(p), name, extractService},
		{"Deployment", &appsv1.Deployment{}, fetcherDeployment(p, r.ContentAgentImage), name, extractDeployment},
	})
}

// reconcileServer applies the server pods' Deployment and PodDisruptionBudget, after the index they mount.
func (r *Reconciler) reconcileServer(ctx context.Context, o *observation) error {
	p, name := o.pool, poolplacement.ServerName(o.pool.Name)
	d := &appsv1.Deployment{}
	if err := r.applyAll(ctx, o, []object{
		{"Deployment", d, serverDeployment(p, o.serverReplicas, r.ServerImage, r.ContentAgentImage), name, extractDeployment},
		{"PodDisruptionBudget", &policyv1.PodDisruptionBudget{}, disruptionBudget(p), name, extractPodDisruptionBudget},
	}); err != nil {
		return err
	}
	if d.UID != "" && metav1.IsControlledBy(d, p) {
		o.deployment = d // as it was before this pass's apply: its status is what the pods did
	}
	return nil
}

func (r *Reconciler) applyAll(ctx context.Context, o *observation, objects []object) error {
	for _, obj := range objects {
		key := types.NamespacedName{Namespace: o.pool.Spec.Namespace, Name: obj.name}
		if _, err := r.applyOrReject(ctx, o, obj.kind, obj.live, obj.desired, key, obj.extract); err != nil {
			return err
		}
	}
	return nil
}
