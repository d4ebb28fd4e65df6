package staticsite

// Automatic placement (spec.placement.mode Auto; internal/autoplacement has the decision and its contract). An
// Auto site is always in its pool's index (poolplacement.Wants), so the pool holds its tree wherever it runs. Each
// pass decides, from the last decision (status.placement.auto), the site's traffic (the Board: the pool
// controller measures it on the pool's pods and the site's own) and the clock, where it runs from now on; the
// pass then runs as for a site asking for that placement (pool.go), so the moves are the ones a person's edit
// makes, and lose no request:
//
//   - promoted (Pool → Dedicated): its own pods are created; the pool serves it until they are ready and its
//     Service selects them (phaseMovingOut);
//   - demoted (Dedicated → Pool): the pool already serves it (it never left the index), so the Service goes to
//     the pool's pods as soon as every ready pool pod serves the current value and content, and only then are its
//     own pods removed (phasePooled; phaseMovingIn while the pool catches up).
//
// The decision is recorded in status.placement.auto with the thresholds in effect; the events Promoted and
// Demoted are recorded once that status is written. When only time can change the decision (a demotion window
// or a cooldown ending) the pass is requeued for then; a change of the site's band on the Board wakes it.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/autoplacement"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

// autoPass is this pass's decision for an Auto site, with the thresholds it used.
type autoPass struct {
	autoplacement.Decision
	thresholds autoplacement.Thresholds
}

// decideAuto decides where an admitted Auto site runs this pass (pool is its StaticSitePool).
func (r *Reconciler) decideAuto(ctx context.Context, o *observation, pool *v1alpha1.StaticSitePool) error {
	site := o.site
	in := autoplacement.Input{Thresholds: autoplacement.ThresholdsOf(pool, site.Spec.Placement), Now: o.now}
	if pl := site.Status.Placement; pl != nil && pl.Auto != nil {
		in.Last = pl.Auto
	} else {
		// The first decision leaves the site where it is: on its own pods when it has them.
		own, err := r.hasOwnDeployment(ctx, site)
		if err != nil {
			return err
		}
		in.OwnPods = own
	}
	if served, ok := r.Pools.Get(poolindex.ID(site.Namespace, site.Name)); ok && served.Pool == pool.Name {
		in.Traffic = served.Traffic
	}
	d := autoplacement.Decide(in)
	if d.RecheckAfter > 0 {
		o.requeue(d.RecheckAfter)
	}
	o.auto = &autoPass{Decision: d, thresholds: in.Thresholds}
	return nil
}

// hasOwnDeployment: the site's Deployment exists (from the cache).
func (r *Reconciler) hasOwnDeployment(ctx context.Context, site *v1alpha1.StaticSite) (bool, error) {
	d := &appsv1.Deployment{}
	err := r.Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, d)
	switch {
	case err == nil:
		return metav1.IsControlledBy(d, site), nil
	case client.IgnoreNotFound(err) != nil:
		return false, fmt.Errorf("read the Deployment: %w", err)
	}
	return false, nil
}

// autoPlacement completes status.placement (now, where the site runs this pass) with the pass's decision: its
// record in auto, and as the reason the decision's while the site runs where it sends it, or the move under way.
func autoPlacement(now *v1alpha1.PlacementStatus, a *autoPass) {
	if a == nil || now == nil {
		return
	}
	now.Auto = autoplacement.Status(a.Decision, a.thresholds)
	switch {
	case now.Reason == v1alpha1.ReasonMovingToDedicated:
	case now.Mode != a.Target:
		now.Reason = v1alpha1.ReasonMovingToPool // its own pods serve it until the pool does
	default:
		now.Reason = a.Reason
	}
}

// recordAutoPlacement records Promoted or Demoted when the written status holds a new move.
func (r *Reconciler) recordAutoPlacement(before, after *v1alpha1.StaticSite) {
	var was, now *v1alpha1.AutoPlacementStatus
	if p := before.Status.Placement; p != nil {
		was = p.Auto
	}
	if p := after.Status.Placement; p != nil {
		now = p.Auto
	}
	if now == nil || (now.Reason != v1alpha1.PlacementReasonPromoted && now.Reason != v1alpha1.PlacementReasonDemoted) {
		return
	}
	if was != nil && was.Reason == now.Reason && was.Target == now.Target && was.DecidedAt.Equal(&now.DecidedAt) {
		return
	}
	r.Recorder.Event(after, corev1.EventTypeNormal, now.Reason, now.Message)
}
