package pool

import (
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/internal/poolscale"
	"hyperstatic.dev/hyperstatic/internal/pooltraffic"
)

// poolMemory is what the controller keeps of one pool between its passes (one pool's passes are serial; the map
// holding these is shared by every pool's): the last counters of its Auto sites (step_traffic.go) and, with
// spec.autoscaling, its rate and scale-down window (step_scale.go), the events of its scale-downs not yet
// recorded (events.go), and what its pods were told of the index and when (step_deliver.go, step_retell.go).
// Forgotten with the pool; an operator restart starts them again, which only delays a demotion, a scale-down or
// a re-tell.
type poolMemory struct {
	traffic pooltraffic.Meter
	scale   *scaleState // nil without spec.autoscaling
	// events: what passes did beyond the pool's status, to record once a status write goes through (events.go).
	events []pendingEvent
	// told: per pod that reads the index (by UID), what it was last told and since when (retell_rule.go); the
	// pods no longer listed are dropped by deliverIndex.
	told map[types.UID]toldMark
}

// scaleState is the pool autoscaler's memory.
type scaleState struct {
	meter  pooltraffic.Meter
	window poolscale.Window
}

// memoryOf is pool's memory, made on first use.
func (r *Reconciler) memoryOf(pool string) *poolMemory {
	r.memoryMu.Lock()
	defer r.memoryMu.Unlock()
	if r.memory == nil {
		r.memory = map[string]*poolMemory{}
	}
	m := r.memory[pool]
	if m == nil {
		m = &poolMemory{traffic: pooltraffic.Meter{MinInterval: r.TrafficMinInterval}, told: map[types.UID]toldMark{}}
		r.memory[pool] = m
	}
	return m
}

// forget drops pool's memory and its re-tell counter's series (the pool is gone).
func (r *Reconciler) forget(pool string) {
	r.memoryMu.Lock()
	defer r.memoryMu.Unlock()
	delete(r.memory, pool)
	indexRetells.DeleteLabelValues(pool)
}
