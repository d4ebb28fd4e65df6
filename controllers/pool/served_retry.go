package pool

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
)

// minServedRetry is the soonest the pods are read again while a site waits to be served by all of them.
const minServedRetry = time.Second

// servedRetryAfter is how soon reconcileServed reads the pods again while a site is not yet served by every ready
// pod: half the time since the pods were last told of the index (lastTold, zero when unknown), between
// minServedRetry and longest (the ServedRetry tunable, 5 s by default). What a tell starts takes a few seconds (the
// kubelet's remount, the fetcher's and the pullers' 2 s reads, the load), so a site served 3 s after its tell is
// seen a second or so later instead of up to 5 s later, and a pool whose pods stay behind is soon read no more
// often than the tunable says. A longest below minServedRetry (tests) is kept as it is.
func servedRetryAfter(now, lastTold time.Time, longest time.Duration) time.Duration {
	if lastTold.IsZero() || longest <= minServedRetry {
		return longest
	}
	return min(max(now.Sub(lastTold)/2, minServedRetry), longest)
}

// lastTold is when a pod was last told index revision (deliverIndex, retellIndex), zero when no mark names it.
func lastTold(marks map[types.UID]toldMark, revision string) time.Time {
	var t time.Time
	for _, m := range marks {
		if m.revision == revision && m.since.After(t) {
			t = m.since
		}
	}
	return t
}
