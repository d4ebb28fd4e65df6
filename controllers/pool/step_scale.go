package pool

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolscale"
	"hyperstatic.dev/hyperstatic/internal/pooltraffic"
)

// The pool autoscaler (spec.autoscaling): the requests per second of all the pool's sites together, from the
// per-site counters of every ready pool pod's /sites that reconcileServed reads anyway (no extra request), turned
// into a rate by a pooltraffic.Meter of its own (one counter per pod and site, so a site entering or leaving the
// index or a pod restarting makes the rate a lower bound for one reading, never a wrong one), and decided by
// internal/poolscale. The decision goes to status.autoscaling.desiredReplicas; the next pass's server Deployment
// has that many replicas (replicasOf), and a changed decision runs that pass at once. Counting per pod and site
// keeps the pool's aggregate honest without trusting a pod's own total: a pod lies at most about the sites it
// serves, each bounded by pooltraffic.MaxRPSPerPod, and the worst it does is add pods up to maxReplicas.

// poolRateID is the one reading of a pool's scale meter.
const poolRateID = "pool"

// measureScale fills o.scale for a pool with spec.autoscaling from the pool pods' answers (nil sites: the pod
// could not be read, or was not asked because the pool has no site).
func (r *Reconciler) measureScale(o *observation, pods []poolPodCounts) {
	a := o.pool.Spec.Autoscaling
	mem := r.memoryOf(o.pool.Name)
	if a == nil {
		mem.scale = nil
		return
	}
	if mem.scale == nil {
		mem.scale = &scaleState{meter: pooltraffic.Meter{MinInterval: r.TrafficMinInterval}}
	}
	st := mem.scale
	reading := pooltraffic.Reading{}
	for _, p := range pods {
		if p.sites == nil {
			// Unreadable, or not read because the pool has no site (then it serves nothing: a rate of 0).
			reading.Missing = reading.Missing || len(o.admitted) > 0
			continue
		}
		for id, s := range p.sites {
			if !s.Counted {
				reading.Missing = true
				continue
			}
			reading.Counts = append(reading.Counts, pooltraffic.Count{Pod: p.uid + "/" + id, Requests: s.Requests})
		}
	}
	st.meter.Update(o.now, map[string]pooltraffic.Reading{poolRateID: reading})
	rps, complete, read := st.meter.Rate(poolRateID)
	spec := poolscale.Spec{Floor: floorOf(o.pool), Max: a.MaxReplicas, TargetRPSPerPod: a.TargetRPSPerPod,
		ScaleDownDelay: scaleDownDelayOf(a)}
	// Decided on a copy: the window moves on only once the status carrying this decision is written
	// (keepScaleWindow). A pass whose write is refused (a conflict: it read the pool before its previous pass'
	// write) would otherwise leave behind a window that already spent a decision never published: a scale-down
	// decided, its window closed, the status still at the old count, and the next pass opening a new window at the
	// old count, a whole scaleDownDelay more.
	window := st.window
	d := poolscale.Decide(spec, replicasOf(o.pool), poolscale.Reading{Known: read, RPS: rps, Measured: complete}, &window, o.now)
	o.scale = &scaleObservation{rps: rps, measured: complete && read, decision: d, window: window}
	if d.Replicas != replicasOf(o.pool) {
		o.requeue(time.Millisecond) // the next pass applies it
	}
	o.requeue(o.tun.trafficInterval) // the rate is read at least this often
}

// scaleObservation is the pass's reading and decision, and the window the decision leaves.
type scaleObservation struct {
	rps      float64
	measured bool
	decision poolscale.Decision
	window   poolscale.Window
}

// keepScaleWindow keeps the pass's scale-down window once its status is written (or needed no write).
func (r *Reconciler) keepScaleWindow(o *observation) {
	if o.scale == nil {
		return
	}
	if st := r.memoryOf(o.pool.Name).scale; st != nil {
		st.window = o.scale.window
	}
}

// autoscalingStatus is status.autoscaling from the pass's decision; the last scale time moves only when the
// decision does.
func autoscalingStatus(pool *v1alpha1.StaticSitePool, s *scaleObservation, now time.Time) *v1alpha1.PoolAutoscalingStatus {
	if pool.Spec.Autoscaling == nil {
		return nil
	}
	prev := pool.Status.Autoscaling
	if s == nil { // the pass read nothing (no site, or it stopped early): the last decision stands
		return prev.DeepCopy()
	}
	st := &v1alpha1.PoolAutoscalingStatus{CurrentRPS: int64(s.rps + 0.5), Measured: s.measured,
		DesiredReplicas: s.decision.Replicas, Message: s.decision.Message}
	switch {
	case prev != nil && prev.DesiredReplicas == st.DesiredReplicas:
		st.LastScaleTime = prev.LastScaleTime.DeepCopy()
	case prev != nil || st.DesiredReplicas != floorOf(pool):
		st.LastScaleTime = ptr.To(metav1.NewTime(now))
	}
	return st
}

// floorOf is the fewest pods the pool runs: spec.replicas.
func floorOf(pool *v1alpha1.StaticSitePool) int32 {
	if r := pool.Spec.Replicas; r != nil && *r > 0 {
		return *r
	}
	return defaultReplicas
}

// scaleDownDelayOf is spec.autoscaling.scaleDownDelaySeconds (the CRD's default when unset).
func scaleDownDelayOf(a *v1alpha1.PoolAutoscalingSpec) time.Duration {
	if a.ScaleDownDelaySeconds == nil {
		return DefaultScaleDownDelay
	}
	return time.Duration(*a.ScaleDownDelaySeconds) * time.Second
}

// DefaultScaleDownDelay is spec.autoscaling.scaleDownDelaySeconds' default (the CRD's).
const DefaultScaleDownDelay = 300 * time.Second
