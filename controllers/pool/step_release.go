package pool

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolread"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// releaseTimeout bounds one release, so that a pod that does not answer cannot stall the pass (it is tried again
// a second later, and its hold ends it anyway).
const releaseTimeout = time.Second

// releasedPod is a terminating pod whose drain a pass released, how long after its deletion, and how many pool
// site slices still listed it (not ready, beside a ready pod).
type releasedPod struct {
	name    string
	after   time.Duration
	listing int
}

// releaseDrained ends the held drain of every terminating pool server pod that no pool site's EndpointSlice sends
// new connections any more (releasable; internal/poolplacement/drain.go, steps 4 and 5): however it ends (a
// rollout, an eviction, a scale-down, a deletion by hand), a pool pod keeps serving until the proxies no longer
// send it anything new, which for N sites takes N slice writes, and for a pool of one pod also its replacement's
// readiness. Each pod is released once (AnnotationDrainReleased); one that must wait, or whose release failed, is
// looked at again after drainPoll. The slices are polled, not watched: a watch would wake the pool for each of its
// N sites' writes, each pass reading every pod's /sites, where a poll costs one pass a second while a pod waits.
func (r *Reconciler) releaseDrained(ctx context.Context, o *observation) error {
	if r.Releaser == nil {
		return nil
	}
	ns := o.pool.Spec.Namespace
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(poolplacement.PodSelector(o.pool.Name))); err != nil {
		return fmt.Errorf("list the pool's pods: %w", err)
	}
	waiting := podsToRelease(pods.Items)
	if len(waiting) == 0 {
		return nil
	}
	list, err := r.poolSlices(ctx, o.pool.Name)
	if err != nil {
		return err
	}
	for _, p := range waiting {
		ok, listing := releasable(p, list.Items)
		if !ok {
			o.requeue(drainPoll)
			continue
		}
		released, err := r.release(ctx, p, o.now)
		if err != nil {
			return err
		}
		if !released {
			o.requeue(drainPoll)
			continue
		}
		o.released = append(o.released, releasedPod{name: p.Name, after: o.now.Sub(poolplacement.DeletionRequested(p)), listing: listing})
	}
	return nil
}

// releaseAll releases every pod of a pool that is gone or being deleted at once, whatever the slices say: its
// sites are no longer served by it anyway, and nothing else would end the pods' hold before poolplacement.DrainHold
// (the pool's passes no longer run). Its pods are found by their labels in every namespace (the pool, and its
// spec.namespace with it, may be gone from the cache).
func (r *Reconciler) releaseAll(ctx context.Context, pool string) (ctrlreconcile.Result, error) {
	if r.Releaser == nil {
		return ctrlreconcile.Result{}, nil
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.MatchingLabels(poolplacement.PodSelector(pool))); err != nil {
		return ctrlreconcile.Result{}, fmt.Errorf("list the deleted pool's pods: %w", err)
	}
	again := false
	for _, p := range podsToRelease(pods.Items) {
		released, err := r.release(ctx, p, reconcile.Now(r.Clock))
		if err != nil {
			return ctrlreconcile.Result{}, err
		}
		again = again || !released
	}
	if again {
		return ctrlreconcile.Result{RequeueAfter: drainPoll}, nil
	}
	return ctrlreconcile.Result{}, nil
}

// release sends p its release and marks it released; false when p refused it or could not be reached (its
// SIGTERM has not come yet, or it is gone): the caller tries again.
func (r *Reconciler) release(ctx context.Context, p *corev1.Pod, now time.Time) (bool, error) {
	rctx, cancel := context.WithTimeout(ctx, releaseTimeout)
	err := r.Releaser.ReleaseDrain(rctx, p)
	cancel()
	if err != nil {
		if !errors.Is(err, poolread.ErrNotDraining) {
			log.FromContext(ctx).Info("pool pod's drain not released yet", "pod", p.Name, "error", err.Error())
		}
		return false, nil
	}
	if err := r.patchPodAnnotations(ctx, p, map[string]string{poolplacement.AnnotationDrainReleased: now.UTC().Format(time.RFC3339)}); err != nil {
		return false, fmt.Errorf("mark pod %s released: %w", p.Name, err)
	}
	return true, nil
}

// podsToRelease are the pods holding their drain.
func podsToRelease(pods []corev1.Pod) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		if poolplacement.HoldingDrain(&pods[i]) {
			out = append(out, &pods[i])
		}
	}
	return out
}

// poolSlices are the pool sites' EndpointSlices (every namespace), from the manager's cache (they are the
// operator's).
func (r *Reconciler) poolSlices(ctx context.Context, pool string) (*discoveryv1.EndpointSliceList, error) {
	list := &discoveryv1.EndpointSliceList{}
	if err := r.List(ctx, list, client.MatchingLabels{poolplacement.LabelPool: pool,
		discoveryv1.LabelManagedBy: desired.EndpointSliceManagedBy}); err != nil {
		return nil, fmt.Errorf("list the pool sites' EndpointSlices: %w", err)
	}
	return list, nil
}
