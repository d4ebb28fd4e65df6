package staticsite

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// The status of placement (pool.go), part of deriveStatus: status.placement and Placed for every site, and the
// whole progress of a site a pool serves. Pure, like deriveStatus.

// derivePlacement sets status.placement (where the site runs now and why) and the Placed condition.
func derivePlacement(s *v1alpha1.StaticSiteStatus, site *v1alpha1.StaticSite, o *observation, set reconcile.Conditions) {
	p := o.pool
	now := &v1alpha1.PlacementStatus{Mode: v1alpha1.PlacementDedicated, Reason: v1alpha1.PlacementReasonRequested}
	var placed metav1.Condition
	switch {
	case p == nil:
		placed = metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDedicated, Message: "the site runs on its own pods"}
	case p.phase == phaseMovingIn:
		placed = poolPlaced(p)
		placed.Message += "; the site's own pods serve it until the pool does"
	case p.phase == phasePooled && o.rejected != nil && !p.servicePooled:
		// Its Service or slice was refused (Stalled): the site runs where it ran.
		placed = poolPlaced(p)
		now = site.Status.Placement.DeepCopy() // nil for a new site: it runs nowhere yet
	case p.phase == phasePooled:
		now = poolPlacement(p)
		placed = poolPlaced(p)
	case p.phase == phaseMovingOut && (!p.selectorBack || p.sliceExists):
		// The pool serves it (its Service's endpoints include the pool's pods) until the hand-over is done.
		now = poolPlacement(p)
		now.Reason = v1alpha1.ReasonMovingToDedicated
		placed = metav1.Condition{Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonMovingToDedicated,
			Message: fmt.Sprintf("StaticSitePool %s serves the site until its own pods are ready and its Service selects them", p.name)}
	default: // moved out this pass
		placed = metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDedicated, Message: "the site runs on its own pods"}
	}
	autoPlacement(now, o.auto) // poolauto.go
	switch old := site.Status.Placement; {
	case now == nil:
	case old != nil && old.Mode == now.Mode && old.Pool == now.Pool && old.Since != nil:
		now.Since = old.Since.DeepCopy()
	default:
		now.Since = &metav1.Time{Time: o.now}
	}
	s.Placement = now
	set.Set(v1alpha1.ConditionPlaced, placed.Status, placed.Reason, placed.Message)
}

// poolPlacement is status.placement of a site in pool p.
func poolPlacement(p *poolPass) *v1alpha1.PlacementStatus {
	pl := &v1alpha1.PlacementStatus{Mode: v1alpha1.PlacementPool, Pool: p.name, Reason: v1alpha1.PlacementReasonRequested}
	if p.known && p.served.Pool == p.name {
		pl.ServedBy, pl.ReadyPods = p.served.ServedBy, p.served.ReadyPods
	}
	return pl
}

// poolPlaced is Placed for a site in (or moving into) pool p, from the Board: True when every ready pool pod
// serves its current value and content, Unknown while the pool has not reported it or catches up, False with the
// fetcher's or a pod's error, or without a ready pool pod.
func poolPlaced(p *poolPass) metav1.Condition {
	s := p.served
	switch {
	case !p.known || s.Pool != p.name:
		return metav1.Condition{Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonPoolNotReported,
			Message: fmt.Sprintf("StaticSitePool %s has not reported the site yet", p.name)}
	case s.FetchError != "":
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPoolFetchError,
			Message: fmt.Sprintf("the fetcher of StaticSitePool %s: %s (%d of %d ready pool pods serve the site)", p.name, s.FetchError, s.ServedBy, s.ReadyPods)}
	case s.PodError != "":
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonPoolPodError,
			Message: fmt.Sprintf("a pod of StaticSitePool %s: %s (%d of %d ready pool pods serve the site)", p.name, s.PodError, s.ServedBy, s.ReadyPods)}
	case s.ReadyPods == 0:
		return metav1.Condition{Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonNoReadyPoolPods,
			Message: fmt.Sprintf("StaticSitePool %s has no ready pod", p.name)}
	case s.ServedBy == s.ReadyPods:
		return metav1.Condition{Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonServedByPool,
			Message: fmt.Sprintf("all %d ready pods of StaticSitePool %s serve the site's current value and content", s.ReadyPods, p.name)}
	}
	return metav1.Condition{Status: metav1.ConditionUnknown, Reason: v1alpha1.ReasonPoolCatchingUp,
		Message: fmt.Sprintf("%d of %d ready pods of StaticSitePool %s serve the site's current value and content", s.ServedBy, s.ReadyPods, p.name)}
}

// derivePooled is the status of a site a pool serves, after the fields every site has: no pod of its own (replicas
// 0, no memory, no pod readings), content from the pool, and Ready from what the pool serves. A pool that serves
// the site on some pods keeps it Ready (catching up with new content or a new value is Reconciling); one that
// serves it on none makes it not Ready: Stalled for an error someone must fix (the fetcher's, a pod's: the
// site's limits), Reconciling otherwise.
func derivePooled(s *v1alpha1.StaticSiteStatus, site *v1alpha1.StaticSite, o *observation, set reconcile.Conditions) {
	p := o.pool
	s.Replicas, s.ReadyReplicas, s.UpdatedReplicas = 0, 0, 0
	s.Memory, s.Content, s.SiteValue = nil, nil, nil
	s.ContentSource = o.content.Source
	if o.content.Revision != "" {
		s.ContentRevision = o.content.Revision
	}
	for _, t := range []string{v1alpha1.ConditionPinned, v1alpha1.ConditionContentInMemory, v1alpha1.ConditionSiteValueApplied} {
		set.Remove(t) // about the site's own pods, which it does not have
	}
	content := contentVerdictOf(o)
	if p.gitContent != nil && o.contentProblem == nil {
		c := *p.gitContent
		content = contentVerdict{status: c.Status, reason: c.Reason, message: c.Message}
	}
	set.Set(v1alpha1.ConditionContentAvailable, content.status, content.reason, content.message)
	for _, e := range []struct {
		typ string
		c   *metav1.Condition
	}{{v1alpha1.ConditionTLSReady, nil}, {v1alpha1.ConditionCertificateReady, nil}, {v1alpha1.ConditionRouteApplied, o.route},
		{v1alpha1.ConditionPodMonitorApplied, nil}} {
		if e.c == nil {
			set.Remove(e.typ)
		} else {
			set.Set(e.typ, e.c.Status, e.c.Reason, e.c.Message)
		}
	}
	deriveCapacity(s, site, o, set) // nothing wanted: removed

	placed := poolPlaced(p)
	servedBy := int32(0)
	if p.known && p.served.Pool == p.name {
		servedBy = p.served.ServedBy
	}
	stalled := content.stall
	if stalled == nil {
		stalled = o.rejected
	}
	if stalled == nil && servedBy == 0 && placed.Status == metav1.ConditionFalse && placed.Reason != v1alpha1.ReasonNoReadyPoolPods {
		stalled = &problem{Reason: placed.Reason, Message: placed.Message}
	}
	switch {
	case stalled != nil:
		setStalled(set, stalled)
	case servedBy > 0:
		set.Remove(v1alpha1.ConditionStalled)
		if placed.Status == metav1.ConditionUnknown {
			set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, placed.Reason, placed.Message)
		} else {
			set.Remove(v1alpha1.ConditionReconciling)
		}
		set.Set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable,
			fmt.Sprintf("%d of %d ready pods of StaticSitePool %s serve %s at %s", servedBy, p.served.ReadyPods, p.name, s.ContentRevision, s.URL))
	default:
		set.Remove(v1alpha1.ConditionStalled)
		set.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonWaitingForPool, placed.Message)
		set.Set(v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonWaitingForPool, placed.Message)
	}
}

// moveInProgress: Reconciling while a site waits for its pool (its own pods serve it) or for its own pods (the
// pool serves it); "" otherwise.
func moveInProgress(o *observation) (reason, message string) {
	p := o.pool
	switch {
	case p == nil:
		return "", ""
	case p.phase == phaseMovingIn:
		pl := poolPlaced(p)
		return v1alpha1.ReasonMovingToPool, "moving to StaticSitePool " + p.name + ": " + pl.Message + "; the site's own pods serve it until then"
	case p.phase == phaseMovingOut && (!p.selectorBack || p.sliceExists):
		return v1alpha1.ReasonMovingToDedicated, "moving to its own pods: StaticSitePool " + p.name + " serves the site until they are ready"
	}
	return "", ""
}

// servedByPoolMeanwhile: a site leaving a pool whose own pods are not ready yet is served by the pool: Ready stays
// as it was (a move is not an outage).
func servedByPoolMeanwhile(site *v1alpha1.StaticSite, o *observation) bool {
	p := o.pool
	return p != nil && p.phase == phaseMovingOut && !p.selectorBack && p.servicePooled &&
		meta.IsStatusConditionTrue(site.Status.Conditions, v1alpha1.ConditionReady) && desired.Replicas(site) > 0
}
