package benchmark

import (
	"time"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// requeueAfter is when the next pass is due, from the pass's clock reading: the next server sample point, the
// run's deadline, or the moment a Benchmark waiting for its target gives up, whichever comes first, and at most
// pollInterval away (the Job's and the children's events trigger passes too). A recorded outcome needs no timer.
func requeueAfter(b *v1alpha1.Benchmark, o *observation) time.Duration {
	if outcomeRecorded(b.Status) {
		return 0
	}
	wait := pollInterval
	sooner := func(d time.Duration) {
		if d > 0 && d < wait {
			wait = d
		}
	}
	switch {
	case o.targetWait != nil:
		sooner(targetGiveUpAt(b.Status, b, o.now).Sub(o.now))
	case o.job != nil:
		sooner(o.nextSample)
		sooner(o.deadline.Sub(o.now))
	}
	return wait
}
