// Package retrybudget spaces the periodic retries of objects stuck on a problem the operator cannot watch (a
// Stalled StaticSite: a quota, an admission webhook, RBAC, a foreign object in the way) so that all of them
// together cost at most a budget of passes per second, however many are stuck.
//
// The contract:
//
//   - Stuck(key) records an object as stuck and says when to try it again: after Min while few are stuck, and
//     after n/PerSecond once n stuck objects retried every Min would pass PerSecond a second. A problem that stalls
//     every site at once (a webhook down, a namespace's quota) then costs PerSecond passes a second, not n/Min: at
//     10,000 sites and a minute, 167 passes a second, each with at least one refused write, against the operator's
//     budget of 50 requests a second for that kind of object (cmd/manager --kube-api-qps, one bucket per kind),
//     which the healthy sites' writes of the same kind wait behind.
//   - Each key's interval is lengthened by up to a tenth, by a hash of the key (no clock, no random source), so
//     objects stuck in the same second do not all retry in the same second ever after.
//   - Unstuck(key) forgets it: a pass that found it healthy, or its deletion. The set lives in memory; an operator
//     restart starts it empty and every object's first pass fills it again.
//   - Only the periodic retry is spaced: an event of the object's own (an edit, a child changed) still runs its
//     pass at once.
package retrybudget

import (
	"hash/fnv"
	"sync"
	"time"
)

// Budget is the set of stuck objects and how often they may be retried. Safe for concurrent use.
type Budget struct {
	// Min is the interval while the budget allows it (a Stalled site's StalledRetry).
	Min time.Duration
	// PerSecond is the most retries a second of all the stuck objects together (> 0).
	PerSecond float64

	mu    sync.Mutex
	stuck map[string]struct{}
}

// Stuck records key as stuck and returns how long until its next retry.
func (b *Budget) Stuck(key string) time.Duration {
	b.mu.Lock()
	if b.stuck == nil {
		b.stuck = map[string]struct{}{}
	}
	b.stuck[key] = struct{}{}
	n := len(b.stuck)
	b.mu.Unlock()
	return Interval(b.Min, b.PerSecond, n, key)
}

// Unstuck forgets key.
func (b *Budget) Unstuck(key string) {
	b.mu.Lock()
	delete(b.stuck, key)
	b.mu.Unlock()
}

// Len is how many objects are stuck.
func (b *Budget) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.stuck)
}

// Interval is key's retry interval when n objects are stuck: the longer of min and n/perSecond seconds, plus
// key's share of a tenth of it.
func Interval(minimum time.Duration, perSecond float64, n int, key string) time.Duration {
	base := minimum
	if perSecond > 0 {
		base = max(base, time.Duration(float64(n)/perSecond*float64(time.Second)))
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(key))
	return base + base*time.Duration(h.Sum32()%1000)/10000
}
