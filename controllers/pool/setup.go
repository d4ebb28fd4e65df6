package pool

import (
	"context"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/managercache"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// ControllerName names the controller (its events' source is the operator's field owner, as every object's).
const ControllerName = "staticsitepool"

// Field indexes over StaticSites: the pool a site asks for, and the "<namespace>/<name>" of each ConfigMap of a site
// that asks for a pool (the StaticSite controller indexes ConfigMaps by name for every site; a second index of its
// own keeps the two controllers independent).
const (
	indexPool          = "pool.placement"
	indexPoolConfigMap = "pool.spec.content.configMaps"
)

// SetupWithManager registers the controller: it watches the pools, the objects they own, the StaticSites that ask
// for a pool (spec changes and the hostnames they hold), the pools' pods, and every ConfigMap's metadata (the
// tenants' sources and the pool's mirrors, from a metadata-only cache: their data never enters the operator's
// memory; managercache.ReferencedMetadata, shared with the StaticSite controller).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.StaticSite{}, indexPool, func(o client.Object) []string {
		return poolplacement.Pools(o.(*v1alpha1.StaticSite))
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.StaticSite{}, indexPoolConfigMap, func(o client.Object) []string {
		site := o.(*v1alpha1.StaticSite)
		if len(poolplacement.Pools(site)) == 0 {
			return nil
		}
		keys := make([]string, 0, len(site.Spec.Content.ConfigMaps))
		for _, cm := range site.Spec.Content.ConfigMaps {
			keys = append(keys, site.Namespace+"/"+cm.Name)
		}
		return keys
	}); err != nil {
		return err
	}
	if r.Recorder == nil {
		r.Recorder = mgr.GetEventRecorderFor(sitechild.FieldOwner)
	}
	if r.APIReader == nil {
		r.APIReader = mgr.GetAPIReader()
	}
	referenced, err := managercache.ReferencedMetadata(mgr)
	if err != nil {
		return err
	}
	r.referenced = referenced
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&v1alpha1.StaticSitePool{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}). // the index shards (mirrors come through the metadata watch below)
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Watches(&v1alpha1.StaticSite{}, handler.EnqueueRequestsFromMapFunc(poolOfSite), builder.WithPredicates(siteChangedForPool)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(poolOfPod)).
		WatchesRawSource(source.Kind(referenced, client.Object(configMapMeta()), handler.EnqueueRequestsFromMapFunc(r.poolsOfConfigMap))).
		Complete(r)
}

// poolOfSite maps a site to the pools it asks for or runs in (an update is mapped from both its old and new forms,
// so the pool a site leaves hears of it too).
func poolOfSite(_ context.Context, o client.Object) []reconcile.Request {
	var out []reconcile.Request
	for _, p := range poolplacement.Pools(o.(*v1alpha1.StaticSite)) {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Name: p}})
	}
	return out
}

// siteChangedForPool passes what changes a site's entry: its spec (generation), the hostnames it holds, the pool
// its status says it runs in (a site that finished moving out leaves the index), its creation and deletion; the
// site controller's other status writes wake no pool.
var siteChangedForPool = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	o, n := e.ObjectOld.(*v1alpha1.StaticSite), e.ObjectNew.(*v1alpha1.StaticSite)
	return o.Generation != n.Generation || !slices.Equal(o.Status.Hostnames, n.Status.Hostnames) ||
		poolplacement.Placed(o) != poolplacement.Placed(n) ||
		(o.DeletionTimestamp == nil) != (n.DeletionTimestamp == nil)
}}

// poolOfPod maps a pool's server or fetcher pod to its pool.
func poolOfPod(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if p, ok := l[poolplacement.LabelPool]; ok && l[sitechild.LabelName] == poolplacement.AppName {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p}}}
	}
	return nil
}

// poolsOfConfigMap maps a mirror to its pool, and a tenant's ConfigMap to the pools of the sites that use it.
func (r *Reconciler) poolsOfConfigMap(ctx context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	if p, ok := l[poolplacement.LabelPool]; ok && l[poolplacement.LabelComponent] == componentMirror {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: p}}}
	}
	sites := &v1alpha1.StaticSiteList{}
	if err := r.List(ctx, sites, client.InNamespace(o.GetNamespace()),
		client.MatchingFields{indexPoolConfigMap: o.GetNamespace() + "/" + o.GetName()}); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range sites.Items {
		reqs = append(reqs, poolOfSite(ctx, &sites.Items[i])...)
	}
	return reqs
}
