// Package poolscale decides how many server pods a StaticSitePool with spec.autoscaling runs, from the requests
// per second of all its sites together (internal/pooltraffic measures them from the pool pods' per-site counters).
//
// The contract:
//
//   - The pods a rate needs are ceil(rate / targetRPSPerPod), at least spec.replicas (the floor) and at most
//     maxReplicas. No pool runs fewer than its floor, whatever is measured.
//   - Up at once: when the rate needs more pods than run, the decision is that many now. A rate that is only a
//     lower bound (Measured false: a pod or a site not counted this reading) may still add pods, since the true
//     rate is at least that; it never removes one.
//   - Down after a delay: when a measured rate needs fewer pods, the pool waits until every reading for
//     scaleDownDelay has needed fewer, then goes to the most pods any of those readings needed (a short dip
//     inside a busy hour removes nothing; the window's peak is what the pool keeps). A reading that needs as many
//     as run, or more, or is not measured, starts the window again.
//   - The window lives in Window, which the caller keeps between passes (in memory: an operator restart starts
//     it again, which only delays a scale-down). The clock is the caller's.
//   - No reading at all (Known false: nothing could be read, or the pool has no site) changes nothing but the
//     bounds: the previous decision, clamped to the spec's floor and ceiling, which may have changed.
package poolscale

import (
	"fmt"
	"math"
	"time"
)

// Spec is what the pool asks for.
type Spec struct {
	Floor, Max      int32 // spec.replicas, spec.autoscaling.maxReplicas
	TargetRPSPerPod int64
	ScaleDownDelay  time.Duration
}

// Reading is one pass's measurement of the pool's rate.
type Reading struct {
	// Known: a rate was computed (from a previous and this reading of at least one pod).
	Known bool
	// RPS over every ready pool pod; a lower bound unless Measured.
	RPS      float64
	Measured bool
}

// Window is the scale-down window the caller keeps between passes.
type Window struct {
	// Since is when the readings started needing fewer pods than run (zero: no window open).
	Since time.Time
	// Peak is the most pods a reading of the window needed.
	Peak int32
}

// Decision is the pods to run and why.
type Decision struct {
	Replicas int32
	Message  string
}

// Needed is the pods rps needs at target each, within the spec's bounds.
func Needed(s Spec, rps float64) int32 {
	n := s.Floor
	if s.TargetRPSPerPod > 0 && rps > 0 {
		want := math.Ceil(rps / float64(s.TargetRPSPerPod))
		if want > float64(s.Max) {
			want = float64(s.Max)
		}
		n = max(n, int32(want))
	}
	return min(max(n, s.Floor), max(s.Max, s.Floor))
}

// Decide is the decision for a pass at now: current is what the pool runs (the previous decision), w the window,
// updated in place.
func Decide(s Spec, current int32, r Reading, w *Window, now time.Time) Decision {
	ceiling := max(s.Max, s.Floor)
	bounded := min(max(current, s.Floor), ceiling)
	if !r.Known {
		*w = Window{}
		return Decision{Replicas: bounded, Message: fmt.Sprintf("no rate measured yet: %d pods (%d to %d)", bounded, s.Floor, ceiling)}
	}
	need := Needed(s, r.RPS)
	rate := fmt.Sprintf("%.0f req/s", r.RPS)
	if !r.Measured {
		rate = fmt.Sprintf("at least %.0f req/s", r.RPS)
	}
	switch {
	case need > bounded:
		*w = Window{}
		return Decision{Replicas: need, Message: fmt.Sprintf("%s at %d req/s per pod needs %d pods", rate, s.TargetRPSPerPod, need)}
	case need == bounded || !r.Measured:
		*w = Window{}
		return Decision{Replicas: bounded, Message: fmt.Sprintf("%s at %d req/s per pod: %d pods", rate, s.TargetRPSPerPod, bounded)}
	}
	if w.Since.IsZero() || now.Before(w.Since) {
		*w = Window{Since: now, Peak: need}
	} else {
		w.Peak = max(w.Peak, need)
	}
	if waited := now.Sub(w.Since); waited < s.ScaleDownDelay {
		return Decision{Replicas: bounded, Message: fmt.Sprintf("%s at %d req/s per pod needs %d pods: %d kept until the rate has stayed low for %s (%s so far)",
			rate, s.TargetRPSPerPod, need, bounded, s.ScaleDownDelay, waited.Round(time.Second))}
	}
	to := w.Peak
	*w = Window{}
	return Decision{Replicas: to, Message: fmt.Sprintf("%s at %d req/s per pod: %d pods, the most needed over the last %s",
		rate, s.TargetRPSPerPod, to, s.ScaleDownDelay)}
}
