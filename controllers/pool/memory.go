package pool

import (
	"hyperstatic.dev/hyperstatic/internal/poolscale"
	"hyperstatic.dev/hyperstatic/internal/pooltraffic"
)

// poolMemory is what the controller keeps of one pool between its passes (one pool's passes are serial; the map
// holding these is shared by every pool's): the last counters of its Auto sites (step_traffic.go) and, with
// spec.autoscaling, its rate and scale-down window (step_scale.go), and the events of its scale-downs not yet
// recorded (events.go). Forgotten with the pool; an operator restart
// starts them again, which only delays a demotion or a scale-down.
type poolMemory struct {
	traffic pooltraffic.Meter
	scale   *scaleState // nil without spec.autoscaling
	// events: what passes did beyond the pool's status, to record once a status write goes through (events.go).
	events []pendingEvent
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
		m = &poolMemory{traffic: pooltraffic.Meter{MinInterval: r.TrafficMinInterval}}
		r.memory[pool] = m
	}
	return m
}

// forget drops pool's memory (the pool is gone).
func (r *Reconciler) forget(pool string) {
	r.memoryMu.Lock()
	defer r.memoryMu.Unlock()
	delete(r.memory, pool)
}
