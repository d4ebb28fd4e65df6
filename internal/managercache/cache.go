// Package managercache holds the operator manager's cache settings, shared by the operator binary and the
// controller suites so that tests run against the same partial view of the cluster as production.
package managercache

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// ManagerOptions is the manager's cache: the kinds the operator creates limited to its own objects
// (OwnedObjectsOnly), and every object with only the managed fields of ownManagers, the operator's field managers
// (KeepOwnManagedFields).
func ManagerOptions(ownManagers ...string) cache.Options {
	return cache.Options{ByObject: OwnedObjectsOnly(), DefaultTransform: KeepOwnManagedFields(ownManagers...)}
}

// OwnedObjectsOnly limits the manager's cache of the kinds the operator creates (pods through Deployments, Jobs
// and the Benchmarks' script and results ConfigMaps, pool sites' EndpointSlices; a pool's pods carry the label
// too, see internal/poolplacement) to the objects it labelled as its own, so the operator's
// memory does not grow with everything else in the cluster.
//
// ConfigMaps are filtered too, although StaticSites serve the user's own: a cluster's ConfigMaps can add up to
// gigabytes, and any full-object informer (a Get through the manager's client, an Owns or Watches of
// corev1.ConfigMap) would hold them all. The StaticSite controller follows the ConfigMaps and claims that sites
// name through a separate metadata-only cache (ReferencedMetadata) and reads their data directly, by name.
// The filter applies to every informer of the kind in this cache, metadata-only ones included: that is why the
// referenced objects need a cache of their own.
//
// A consequence every controller must respect: an object missing from the cache may still exist (unlabelled, made
// by someone else). Before creating a child, read around the cache (the manager's API reader).
func OwnedObjectsOnly() map[client.Object]cache.ByObject {
	owned := cache.ByObject{Label: ownedSelector()}
	return map[client.Object]cache.ByObject{
		&corev1.Pod{}:                   owned,
		&appsv1.Deployment{}:            owned,
		&corev1.Service{}:               owned,
		&policyv1.PodDisruptionBudget{}: owned,
		&networkingv1.Ingress{}:         owned,
		&networkingv1.NetworkPolicy{}:   owned,
		&batchv1.Job{}:                  owned,
		&corev1.ConfigMap{}:             owned,
		// A pool site's EndpointSlice (the cluster's own slices, one or more per Service, are not the operator's).
		&discoveryv1.EndpointSlice{}: owned,
		// A pool fetcher's identity (controllers/pool): the only ServiceAccounts, Roles and RoleBindings the
		// operator makes.
		&corev1.ServiceAccount{}: owned,
		&rbacv1.Role{}:           owned,
		&rbacv1.RoleBinding{}:    owned,
	}
}

// ownedSelector selects the objects the operator labelled as its own.
func ownedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue})
}
