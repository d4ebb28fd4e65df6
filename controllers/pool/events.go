package pool

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// Event reasons besides the conditions' own.
const (
	// EventSitesAdmitted (Normal): the number of sites in the pool changed.
	EventSitesAdmitted = "SitesAdmitted"
	// EventSitesRefused (Warning): the number of refused sites changed and is not 0; the message names a few.
	EventSitesRefused = "SitesRefused"
	// EventIndexUpdated (Normal): the index changed; the message names the shards rewritten.
	EventIndexUpdated = "IndexUpdated"
	// EventPoolScaled (Normal): the autoscaler changed the pool's pod count; the message says why.
	EventPoolScaled = "PoolScaled"
	// EventPodsDraining (Normal): a scale-down marked the pods it removes (step_drain.go); EventPodsDrained
	// (Normal) they left every site's slice and the replicas go down; EventDrainTimedOut (Warning) some slices
	// still listed them after poolplacement.DrainTimeout, and the replicas go down anyway.
	EventPodsDraining  = "PodsDraining"
	EventPodsDrained   = "PodsDrained"
	EventDrainTimedOut = "DrainTimedOut"
	// EventPodReleased (Normal): no site's slice sends a terminating pool pod new connections any more (it left
	// every one, or each that lists it lists it not ready beside a ready pod), and its held drain was released
	// (step_release.go).
	EventPodReleased = "PodReleased"
	// maxNamed bounds the sites an event names.
	maxNamed = 5
)

var polarity = reconcile.NewPolarity(v1alpha1.StaticSitePoolAbnormalTrueConditions)

// recordEvents records the pass's events once its status write is in (reconcile.WriteStatus): a lost write
// neither repeats nor invents one.
func (r *Reconciler) recordEvents(before, after *v1alpha1.StaticSitePool, o *observation) {
	for _, t := range []string{v1alpha1.PoolConditionReady, v1alpha1.ConditionStalled} {
		if tr := reconcile.TransitionOf(before.Status.Conditions, after.Status.Conditions, t); tr.Changed() {
			r.Recorder.Event(after, polarity.EventType(*tr.After), tr.After.Reason, tr.After.Message)
		}
	}
	b, a := before.Status, after.Status
	if a.Sites != b.Sites {
		r.Recorder.Eventf(after, corev1.EventTypeNormal, EventSitesAdmitted, "%d sites in the pool (was %d)", a.Sites, b.Sites)
	}
	if a.RefusedSites != b.RefusedSites && a.RefusedSites > 0 {
		r.Recorder.Eventf(after, corev1.EventTypeWarning, EventSitesRefused, "%d sites asked for the pool and were refused: %s",
			a.RefusedSites, namedRefusals(o.refused))
	}
	if was, now := desiredOf(b.Autoscaling, after), desiredOf(a.Autoscaling, after); a.Autoscaling != nil && now != was {
		r.Recorder.Eventf(after, corev1.EventTypeNormal, EventPoolScaled, "%d pool pods (was %d): %s", now, was, a.Autoscaling.Message)
	}
	if a.IndexRevision != b.IndexRevision && len(o.shardsWritten) > 0 {
		shards := make([]string, 0, len(o.shardsWritten))
		for _, i := range o.shardsWritten {
			shards = append(shards, strconv.Itoa(i))
		}
		r.Recorder.Eventf(after, corev1.EventTypeNormal, EventIndexUpdated, "index %s: shard(s) %s rewritten", a.IndexRevision, strings.Join(shards, ", "))
	}
}

// desiredOf is the autoscaler's decision in a status; before any, the pool's floor (spec.replicas).
func desiredOf(s *v1alpha1.PoolAutoscalingStatus, pool *v1alpha1.StaticSitePool) int32 {
	if s == nil || s.DesiredReplicas == 0 {
		return floorOf(pool)
	}
	return s.DesiredReplicas
}

// namedRefusals names the first few refused sites and why.
func namedRefusals(refused []refusedSite) string {
	parts := make([]string, 0, min(len(refused), maxNamed)+1)
	for i, s := range refused {
		if i == maxNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(refused)-maxNamed))
			break
		}
		parts = append(parts, fmt.Sprintf("%s/%s (%s)", s.namespace, s.name, s.refusal.Reason))
	}
	return strings.Join(parts, ", ")
}

// drainEvents are the events of a pass's scale-down (nil d: none): pods marked, or the replicas going down.
func drainEvents(d *drainObservation, now time.Time) []pendingEvent {
	switch {
	case d == nil:
		return nil
	case len(d.marked) > 0:
		return []pendingEvent{{corev1.EventTypeNormal, EventPodsDraining, fmt.Sprintf(
			"draining %s before scaling down from %d to %d pool pods: every site's EndpointSlice drops them first",
			strings.Join(d.marked, ", "), d.from, d.to)}}
	case d.timedOut:
		return []pendingEvent{{corev1.EventTypeWarning, EventDrainTimedOut, fmt.Sprintf(
			"%d of %d site EndpointSlices still list %s after %s: scaling down to %d pool pods anyway",
			d.listing, d.slices, strings.Join(d.pods, ", "), poolplacement.DrainTimeout, d.to)}}
	case d.done:
		return []pendingEvent{{corev1.EventTypeNormal, EventPodsDrained, fmt.Sprintf(
			"%s left all %d site EndpointSlices after %s: scaling down from %d to %d pool pods",
			strings.Join(d.pods, ", "), d.slices, now.Sub(d.since).Round(time.Second), d.from, d.to)}}
	}
	return nil
}

// releaseEvents are the events of a pass's releases (step_release.go).
func releaseEvents(released []releasedPod) []pendingEvent {
	out := make([]pendingEvent, 0, len(released))
	for _, p := range released {
		what := fmt.Sprintf("left every site's EndpointSlice %s after its deletion", p.after.Round(100*time.Millisecond))
		if p.listing > 0 {
			what = fmt.Sprintf("is ready in no site's EndpointSlice %s after its deletion (%d list it not ready beside a ready pod)",
				p.after.Round(100*time.Millisecond), p.listing)
		}
		out = append(out, pendingEvent{corev1.EventTypeNormal, EventPodReleased, fmt.Sprintf(
			"pod %s %s: drain released, it stops accepting %s later", p.name, what, drainDelay)})
	}
	return out
}

// pendingEvent is an event of what a pass did to objects other than the pool (a pod marked, the replicas lowered),
// kept in the pool's memory until a pass's status write went through (or needed none). Unlike the status
// transitions, the pass after a refused write cannot tell them again: the pods are marked and the replicas
// lowered by then.
type pendingEvent struct{ typ, reason, message string }

// keepEvents adds a pass's events to the pool's pending ones.
func (r *Reconciler) keepEvents(pool string, evs []pendingEvent) {
	if len(evs) > 0 {
		m := r.memoryOf(pool)
		m.events = append(m.events, evs...)
	}
}

// flushEvents records the pool's pending events, once its status is written.
func (r *Reconciler) flushEvents(pool *v1alpha1.StaticSitePool) {
	m := r.memoryOf(pool.Name)
	for _, e := range m.events {
		r.Recorder.Event(pool, e.typ, e.reason, e.message)
	}
	m.events = nil
}
