package pool

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=patch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch

// drainPoll is how often a pass looks at the slices again while a scale-down waits for them.
const drainPoll = time.Second

// reconcileDrain decides the server Deployment's replicas for this pass (o.serverReplicas): the pool's count
// (replicasOf) at once when it grows or holds; when it shrinks, only once the pods it removes are out of every
// pool site's EndpointSlice (the order and why: internal/poolplacement/drain.go). It marks the pods to remove,
// takes the mark off pods no scale-down removes any more, and reads the slices from the manager's cache (they are
// the operator's).
func (r *Reconciler) reconcileDrain(ctx context.Context, o *observation) error {
	want := replicasOf(o.pool)
	o.serverReplicas = want
	ns := o.pool.Spec.Namespace
	live := &appsv1.Deployment{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: ns, Name: poolplacement.ServerName(o.pool.Name)}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // created at the pool's count: no pod to remove
		}
		return fmt.Errorf("read the server Deployment: %w", err)
	}
	if !metav1.IsControlledBy(live, o.pool) || live.Spec.Replicas == nil {
		return nil // not the pool's: reconcileServer refuses to touch it
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(poolplacement.PodSelector(o.pool.Name))); err != nil {
		return fmt.Errorf("list the pool's pods: %w", err)
	}
	plan := planDrain(pods.Items, *live.Spec.Replicas, want)
	for _, p := range plan.unmark {
		if err := r.markDraining(ctx, p, ""); err != nil {
			return err
		}
	}
	if len(plan.victims) == 0 {
		return nil
	}
	d := &drainObservation{from: *live.Spec.Replicas, to: want, since: o.now}
	for _, p := range plan.victims {
		d.pods = append(d.pods, p.Name)
		since, ok := poolplacement.DrainingSince(p)
		switch {
		case !poolplacement.Draining(p):
			if err := r.markDraining(ctx, p, o.now.UTC().Format(time.RFC3339)); err != nil {
				return err
			}
			d.marked = append(d.marked, p.Name)
		case !ok:
			d.since = time.Time{} // a mark that is not a time: begun long ago
		case since.Before(d.since):
			d.since = since
		}
	}
	listing, total, err := r.slicesListing(ctx, o.pool.Name, ns, d.pods)
	if err != nil {
		return err
	}
	d.listing, d.slices = listing, total
	o.drain = d
	switch {
	case len(d.marked) > 0:
		// Not in the pass that marked them: the ReplicaSet controller must see the marks (its own cache) before the
		// replicas go down, or it may pick other pods.
	case listing == 0:
		d.done = true
	case o.now.Sub(d.since) >= poolplacement.DrainTimeout:
		d.done, d.timedOut = true, true
	}
	if !d.done {
		o.serverReplicas = *live.Spec.Replicas
		o.requeue(drainPoll)
	}
	return nil
}

// drainObservation is a pass's scale-down by drain: from and to replicas, the pods it removes, those this pass
// marked, since when they drain, how many of the pool's slices still list one of them; done once the replicas may
// go down (timedOut: the slices did not all drop them within poolplacement.DrainTimeout).
type drainObservation struct {
	from, to        int32
	pods, marked    []string
	since           time.Time
	listing, slices int
	done, timedOut  bool
}

// drainPlan is which pods a scale-down removes (victims) and which marks come off (unmark).
type drainPlan struct {
	victims, unmark []*corev1.Pod
}

// planDrain is the pure choice of a pass: with the Deployment at current replicas and the pool wanting want, the
// pods that go are as many as exist beyond want (pods that were never created need no drain), in the order a
// person would pick them: those already draining (a choice once made stays), then those not ready (in no slice:
// nothing to wait for, and the ReplicaSet controller removes the unready first anyway), then the newest. The ready
// pods left are always the oldest, so the pool never drains its last ready pod. Terminating pods are on their way
// out already and count for nothing.
//
// A marked pod that is not a victim is unmarked, but only once no more pods are alive than the Deployment asks
// for: right after the replicas went down the victims are still alive until the ReplicaSet controller deletes
// them, and must keep their marks until then; a marked pod alive after that was spared (the controller picked
// another) or its scale-down was cancelled.
func planDrain(pods []corev1.Pod, current, want int32) drainPlan {
	var alive []*corev1.Pod
	for i := range pods {
		if pods[i].DeletionTimestamp.IsZero() {
			alive = append(alive, &pods[i])
		}
	}
	extra := 0
	if want < current {
		extra = max(0, len(alive)-int(want))
	}
	slices.SortStableFunc(alive, func(a, b *corev1.Pod) int {
		if c := cmpBool(poolplacement.Draining(a), poolplacement.Draining(b)); c != 0 {
			return c
		}
		if c := cmpBool(!podstate.Serving(a), !podstate.Serving(b)); c != 0 {
			return c
		}
		if c := b.CreationTimestamp.Compare(a.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(b.Name, a.Name)
	})
	plan := drainPlan{victims: alive[:extra]}
	if extra == 0 && len(alive) > int(current) {
		return plan // a scale-down under way: the ReplicaSet controller has not deleted its pods yet
	}
	for _, p := range alive[extra:] {
		if poolplacement.Draining(p) {
			plan.unmark = append(plan.unmark, p)
		}
	}
	return plan
}

// cmpBool orders true before false.
func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// markDraining marks p as draining since the given time, with the lowest deletion cost; "" takes both off.
func (r *Reconciler) markDraining(ctx context.Context, p *corev1.Pod, since string) error {
	cost := ""
	if since != "" {
		cost = poolplacement.DrainingDeletionCost
	}
	if err := r.patchPodAnnotations(ctx, p, map[string]string{poolplacement.AnnotationDraining: since,
		poolplacement.AnnotationDeletionCost: cost}); err != nil {
		return fmt.Errorf("mark pod %s draining (%q): %w", p.Name, since, err)
	}
	return nil
}

// slicesListing counts the pool sites' EndpointSlices (every namespace) and those that still list one of pods, in
// any condition: a site's pass leaves a marked pod out of its slice whatever else the pool has (PoolEndpointsOf),
// so a slice that lists one has not been rewritten since the mark.
func (r *Reconciler) slicesListing(ctx context.Context, pool, ns string, pods []string) (listing, total int, err error) {
	list, err := r.poolSlices(ctx, pool)
	if err != nil {
		return 0, 0, err
	}
	for i := range list.Items {
		if slices.ContainsFunc(list.Items[i].Endpoints, func(e discoveryv1.Endpoint) bool {
			return slices.ContainsFunc(pods, func(name string) bool { return isPod(e, ns, name) })
		}) {
			listing++
		}
	}
	return listing, len(list.Items), nil
}
