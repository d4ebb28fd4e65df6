package reconcile

import (
	"time"

	"k8s.io/utils/clock"
)

// Now is the one way a controller reads its injected clock: a nil clock is the real one. A pass calls it once, at
// its start, and every decision and condition timestamp of the pass uses that reading (tests inject a fake
// clock.PassiveClock and move it themselves).
func Now(c clock.PassiveClock) time.Time {
	if c == nil {
		return time.Now()
	}
	return c.Now()
}
