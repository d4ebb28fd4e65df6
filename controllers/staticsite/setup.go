package staticsite

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/fairqueue"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/managercache"
)

// Field indexes over StaticSites, so a ConfigMap or claim event finds the sites that use it without a scan.
const (
	indexConfigMap = "spec.content.configMaps.name"
	indexClaim     = "spec.content.persistentVolumeClaim.claimName"
	// indexPool: the pool a site asks for and the pool it runs in (status.placement), so a pool's or its pods'
	// events find the sites moving into, running in and leaving it.
	indexPool = "spec.placement.pool"
)

// SetupWithManager registers the controller: it watches StaticSites, the children it owns, the ConfigMaps and
// claims sites reference (to refresh ContentAvailable and the revision), and the sites' pods (readiness, pinning).
// TLS Secrets are not watched (see reconcileTLS); HTTPRoutes, PodMonitors and Certificates once their CRDs are seen,
// and those CRDs themselves by name (optionalcrds.go).
//
// The referenced ConfigMaps and claims are the user's, unlabelled, anywhere in the cluster: they are watched as
// metadata only, from a cache apart from the manager's (managercache.ReferencedMetadata, one per manager, shared
// with the pool controller), so that the operator's memory does not hold the cluster's ConfigMap data; reconcileContent reads the few a site names directly.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	ctx := context.Background()
	idx := mgr.GetFieldIndexer()
	if err := idx.IndexField(ctx, &v1alpha1.StaticSite{}, indexConfigMap, func(o client.Object) []string {
		var names []string
		for _, cm := range o.(*v1alpha1.StaticSite).Spec.Content.ConfigMaps {
			names = append(names, cm.Name)
		}
		return names
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.StaticSite{}, indexClaim, func(o client.Object) []string {
		if c := o.(*v1alpha1.StaticSite).Spec.Content.PersistentVolumeClaim; c != nil {
			return []string{c.ClaimName}
		}
		return nil
	}); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.StaticSite{}, indexHostname, siteHostnames); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.StaticSite{}, indexPool, sitePools); err != nil {
		return err
	}
	if err := idx.IndexField(ctx, &v1alpha1.StaticSite{}, indexOptionalCRD, siteOptionalCRDs); err != nil {
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
	owned, err := managercache.NewOwnedMetadata(mgr)
	if err != nil {
		return err
	}
	if err := r.setupPinPath(mgr); err != nil { // pinpath.go: before the passes can remember a fetcher for it
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr)
	if waiter, ok := r.GitReader.(gitrevision.Waiter); ok {
		// A Git site's pass reads its fetcher and leaves a long poll on it (step_git.go): its answer queues the site.
		woken := make(chan event.GenericEvent, 1024)
		r.gitWatch = gitrevision.NewWatch(waiter, func(s types.NamespacedName) {
			woken <- event.GenericEvent{Object: &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name}}}
		})
		b = b.WatchesRawSource(source.Channel(woken, &handler.EnqueueRequestForObject{}))
	}
	if r.Pools != nil {
		// A pool's pass announces the sites whose entry changed (internal/poolstate): exactly those wake.
		b = b.WatchesRawSource(source.Channel(r.Pools.Events(), atLowPriority(&handler.EnqueueRequestForObject{})))
	}
	// An optional child's CRD installed or removed wakes the sites that need it (optionalcrds.go).
	crdWatches, err := r.optionalCRDWatches(mgr)
	if err != nil {
		return err
	}
	for _, w := range crdWatches {
		b = b.WatchesRawSource(w)
	}
	queueMetrics, err := fairqueue.ControllerRuntimeMetrics()
	if err != nil {
		return err
	}
	c, err := b.
		Named("staticsite").
		// A person's change goes before the pool's fan-out (lowpriority.go), and the namespaces take turns: a burst
		// of one tenant's sites does not hold another's (internal/fairqueue). UsePriorityQueue keeps the rate
		// limiter controller-runtime gives priority queues (per site, no overall bucket).
		WithOptions(controller.Options{UsePriorityQueue: ptr.To(true), NewQueue: fairqueue.ByNamespace(queueMetrics)}).
		// Status writes (ours and the autoscaler's) do not change the generation: no reconcile for them.
		For(&v1alpha1.StaticSite{}, builder.WithPredicates(predicate.Or(predicate.GenerationChangedPredicate{}, predicate.LabelChangedPredicate{},
			capacityAnnotationsChanged))).
		Owns(&appsv1.Deployment{}).
		Owns(&corev1.Service{}).
		Owns(&corev1.ConfigMap{}). // the site value (step_sitevalue.go); the cache holds only the operator's ConfigMaps
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.Ingress{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&v1alpha1.Benchmark{}).        // capacity measurements (step_capacity.go)
		Owns(&discoveryv1.EndpointSlice{}). // a pool site's (step_pool.go); the cache holds only the operator's
		// A pool's spec (its namespaces admitted) and its server pods' readiness change its sites' placement and slices.
		// Both fan out to every site of the pool: at low priority (lowpriority.go).
		Watches(&v1alpha1.StaticSitePool{}, atLowPriority(handler.EnqueueRequestsFromMapFunc(r.sitesOfPool))).
		Watches(&corev1.Pod{}, atLowPriority(handler.EnqueueRequestsFromMapFunc(r.sitesOfPoolPod)), builder.WithPredicates(poolPodEndpointChanged)).
		WatchesRawSource(source.Kind(referenced, metadataOf("ConfigMap"), handler.EnqueueRequestsFromMapFunc(r.sitesUsing(indexConfigMap)))).
		WatchesRawSource(source.Kind(referenced, metadataOf("PersistentVolumeClaim"), handler.EnqueueRequestsFromMapFunc(r.sitesUsing(indexClaim)))).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(siteOfPod)).
		// A site that claims, holds or gives up a hostname wakes the other sites that claim it (hostnames.go).
		Watches(&v1alpha1.StaticSite{}, handler.EnqueueRequestsFromMapFunc(r.sitesWaitingFor), builder.WithPredicates(hostnameClaimsChanged)).
		Build(r)
	if err != nil {
		return err
	}
	// HTTPRoutes, PodMonitors and Certificates are watched from the first pass that finds their CRD installed
	// (children.go).
	r.optional = &optionalWatches{controller: c, cache: owned,
		handler: handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &v1alpha1.StaticSite{}, handler.OnlyControllerOwner())}
	return nil
}

// capacityAnnotationsChanged passes a site update that changes the annotations steering capacity measurements and
// the performance gate (a person's requests: a new measurement, an override), or the pin (a rollback,
// docs/design/deploys.md); other annotation changes wake no pass.
var capacityAnnotationsChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	if e.ObjectOld == nil || e.ObjectNew == nil {
		return false
	}
	for _, k := range []string{v1alpha1.AnnotationMeasureCapacity, v1alpha1.AnnotationPerformanceGateOverride, v1alpha1.AnnotationPin} {
		if e.ObjectOld.GetAnnotations()[k] != e.ObjectNew.GetAnnotations()[k] {
			return true
		}
	}
	return false
}}

// metadataOf is the metadata-only form of a core/v1 kind, for watches that need no more than names and versions.
func metadataOf(kind string) client.Object {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: corev1.SchemeGroupVersion.String(), Kind: kind}}
}

// sitesUsing maps an object to the sites in its namespace whose index field names it (the sites of every namespace
// for a cluster-scoped object, a CRD).
func (r *Reconciler) sitesUsing(index string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		sites := &v1alpha1.StaticSiteList{}
		if err := r.List(ctx, sites, client.InNamespace(o.GetNamespace()), client.MatchingFields{index: o.GetName()}); err != nil {
			return nil
		}
		reqs := make([]reconcile.Request, 0, len(sites.Items))
		for _, s := range sites.Items {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
		}
		return reqs
	}
}

// siteOfPod maps a server pod to its site through the site label, a capacity measurement pod through
// LabelCapacityProbeOf and a Git fetcher pod through LabelGitFetcherOf (neither carries the site label: the
// Service must not select them).
func siteOfPod(_ context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	name, ok := l[v1alpha1.LabelSite]
	if !ok || l[sitechild.LabelName] != sitechild.ServerAppName {
		if name, ok = l[v1alpha1.LabelCapacityProbeOf]; !ok || l[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
			if name, ok = l[v1alpha1.LabelGitFetcherOf]; !ok || l[sitechild.LabelName] != gitcontent.FetcherAppName {
				return nil
			}
		}
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}}
}
