package staticsite

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// What wakes a pool site besides its own objects (setup.go): its pool's spec, its pool's server pods becoming
// ready or not, ending or released (its EndpointSlice lists them), and the Board's announcements (a channel
// source).

// sitePools is the indexPool value of a site: the pool it asks for and the pool its status says it runs in.
func sitePools(o client.Object) []string {
	return poolplacement.Pools(o.(*v1alpha1.StaticSite))
}

// sitesOfPool maps a StaticSitePool to its sites.
func (r *Reconciler) sitesOfPool(ctx context.Context, o client.Object) []reconcile.Request {
	return r.sitesInPool(ctx, o.GetName())
}

// sitesOfPoolPod maps a pool's server pod to the pool's sites.
func (r *Reconciler) sitesOfPoolPod(ctx context.Context, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	pool, ok := l[poolplacement.LabelPool]
	if !ok || l[poolplacement.LabelComponent] != poolplacement.ComponentServer {
		return nil
	}
	return r.sitesInPool(ctx, pool)
}

func (r *Reconciler) sitesInPool(ctx context.Context, pool string) []reconcile.Request {
	sites := &v1alpha1.StaticSiteList{}
	if err := r.List(ctx, sites, client.MatchingFields{indexPool: pool}); err != nil {
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(sites.Items))
	for _, s := range sites.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
	}
	return reqs
}

// poolPodEndpointChanged passes the events of pool server pods that can change an EndpointSlice: created,
// deleted, or an update of readiness, addresses, deletion, the pool's drain mark (poolplacement.Draining) or
// whether it holds its drain (its release, or its end: poolplacement.HoldingDrain; a held pod is listed while the
// pool has no ready pod, desired.PoolEndpointsOf). A pool pod's other status updates (every probe change of a
// container, for instance) would wake each of the pool's sites for nothing.
var poolPodEndpointChanged = predicate.Funcs{
	CreateFunc:  func(e event.CreateEvent) bool { return isPoolServerPod(e.Object) },
	DeleteFunc:  func(e event.DeleteEvent) bool { return isPoolServerPod(e.Object) },
	GenericFunc: func(e event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		if !isPoolServerPod(e.ObjectNew) {
			return false
		}
		was, now := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
		return podstate.Ready(was) != podstate.Ready(now) || was.Status.PodIP != now.Status.PodIP ||
			len(was.Status.PodIPs) != len(now.Status.PodIPs) || was.DeletionTimestamp.IsZero() != now.DeletionTimestamp.IsZero() ||
			was.Spec.NodeName != now.Spec.NodeName || poolplacement.Draining(was) != poolplacement.Draining(now) ||
			poolplacement.HoldingDrain(was) != poolplacement.HoldingDrain(now)
	},
}

func isPoolServerPod(o client.Object) bool {
	_, ok := o.GetLabels()[poolplacement.LabelPool]
	return ok && o.GetLabels()[poolplacement.LabelComponent] == poolplacement.ComponentServer
}
