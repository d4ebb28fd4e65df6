// Package fairqueue is a controller's work queue that serves its tenants in turn.
//
// Why: one controller serves the sites of every namespace with a few workers. controller-runtime's queues (the
// client-go rate-limiting queue, its priority queue) hand out requests of the same priority first come, first
// served, so a burst of requests in one namespace (200 pool sites created at once) makes a request of another
// namespace wait for the whole burst: its status came 17-41 s late in envtest (docs/bench/events-2026-12-02.md,
// docs/bench/fairqueue-2026-12-03.md).
//
// The contract, for a queue of keys T each belonging to one lane (the StaticSite controller: a request's namespace):
//
//   - Classes first, as controller-runtime's priority queue orders them. A ready key of a higher priority
//     (AddOpts.Priority, handler.LowPriority) is handed out before any key of a lower one: the pool's fan-out stays
//     behind people's changes. Within a priority, the keys added without a delay go before the retries (keys made
//     ready by a delay: After, RateLimited).
//   - Lanes in turn within a class. The lanes holding ready keys of one class are served round-robin, one key per
//     turn, each lane's keys in the order they became ready. A lane that gets its first ready key joins the back of
//     the round, so a key of an idle lane waits for the keys of the classes before its own, one key of each busy lane
//     of its class, and what the workers already hold, whatever the busy lanes' backlog.
//   - controller-runtime's queue semantics otherwise. A key is queued at most once: adding it again keeps the
//     higher of the two priorities and the earlier of the two ready times (added without a delay, it is no longer
//     a retry). After and RateLimited delay a key (the smaller of the two delays when both are given; NumRequeues
//     and Forget are the rate limiter's). A key handed out by Get is not handed out again until Done; added
//     meanwhile, it waits and becomes ready at Done. ShutDown wakes every Get, which then reports shutdown; adds
//     after it are dropped. Len counts the ready keys.
//   - Metrics: workqueue_depth (by priority), adds, queue latency, work duration and retries, through a
//     workqueue.MetricsProvider (ControllerRuntimeMetrics: controller-runtime's own series, by the controller's
//     name). The unfinished-work and longest-running gauges are not kept (they stay 0).
//
// Time is the injected clock's (delays are measured and woken by it), so tests step it instead of sleeping.
package fairqueue

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)

// Options configure a Queue; every field may be left zero.
type Options[T comparable] struct {
	// RateLimiter decides AddRateLimited's delays. Default: per key, exponential from 5 ms to 1000 s
	// (controller-runtime's priority queue's).
	RateLimiter workqueue.TypedRateLimiter[T]
	// Metrics provides the queue's metrics, named after the queue. Default: none.
	Metrics workqueue.MetricsProvider
	// Clock measures and wakes delays. Default: the real clock.
	Clock clock.WithTicker
}

// Queue is the fair queue; it implements controller-runtime's priorityqueue.PriorityQueue, so controllers and
// handlers use its priorities.
type Queue[T comparable] struct {
	laneOf      func(T) string
	rateLimiter workqueue.TypedRateLimiter[T]
	clock       clock.WithTicker
	metrics     *metrics[T]

	mu         sync.Mutex
	ready      *sync.Cond // signalled when a key becomes ready, a Get may return, or the queue shuts down
	keys       map[T]*entry[T]
	queued     uint64      // keys queued so far: each entry's seq
	processing sets.Set[T] // handed out by Get, not Done yet
	waiting    waitHeap[T] // keys not ready yet, earliest first
	turns      rounds[T]   // ready keys, by priority and lane
	shutdown   bool

	// rearm tells the goroutine that wakes delayed keys that the earliest ready time may have changed.
	rearm chan struct{}
	done  chan struct{}
}

// entry is a queued key: waiting (readyAt set, in the heap), ready (in its lane) or ready while the key is being
// processed (parked: it joins its lane at Done).
type entry[T comparable] struct {
	key      T
	seq      uint64 // the order in which keys were queued
	lane     string
	priority int
	retry    bool      // made ready by a delay: served after the keys of its priority added without one
	readyAt  time.Time // zero once ready
	heapAt   int       // index in the waiting heap; -1 when not in it
	parked   bool
	turn     *turnSlot[T] // where it waits in its lane; nil when not there
}

var _ priorityqueue.PriorityQueue[string] = (*Queue[string])(nil)

// New returns a running queue named name (its metrics' label) whose keys belong to the lanes laneOf gives.
func New[T comparable](name string, laneOf func(T) string, o Options[T]) *Queue[T] {
	if o.RateLimiter == nil {
		o.RateLimiter = workqueue.NewTypedItemExponentialFailureRateLimiter[T](5*time.Millisecond, 1000*time.Second)
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	q := &Queue[T]{
		laneOf: laneOf, rateLimiter: o.RateLimiter, clock: o.Clock, metrics: newMetrics[T](o.Metrics, name, o.Clock),
		keys: map[T]*entry[T]{}, processing: sets.New[T](), turns: newRounds[T](),
		rearm: make(chan struct{}, 1), done: make(chan struct{}),
	}
	q.ready = sync.NewCond(&q.mu)
	go q.wakeDelayed()
	return q
}

// AddWithOpts queues items with o's priority and delay (see the package's contract for a key already queued).
func (q *Queue[T]) AddWithOpts(o priorityqueue.AddOpts, items ...T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	now := q.clock.Now()
	priority := ptr.Deref(o.Priority, 0)
	for _, key := range items {
		after := o.After
		if o.RateLimited {
			if rl := q.rateLimiter.When(key); after == 0 || rl < after {
				after = rl
			}
		}
		var readyAt time.Time
		if after > 0 {
			readyAt = now.Add(after)
			q.metrics.retry()
		}
		q.add(key, priority, readyAt)
	}
}

// add queues key or updates its entry. Caller holds q.mu.
func (q *Queue[T]) add(key T, priority int, readyAt time.Time) {
	e, queued := q.keys[key]
	if !queued {
		e = &entry[T]{key: key, seq: q.queued, lane: q.laneOf(key), priority: priority, retry: !readyAt.IsZero(),
			readyAt: readyAt, heapAt: -1}
		q.queued++
		q.keys[key] = e
		if readyAt.IsZero() {
			q.becomeReady(e)
		} else {
			q.waiting.push(e)
			q.poke()
		}
		return
	}
	raised, fresh := priority > e.priority, readyAt.IsZero() && e.retry
	if raised && e.readyAt.IsZero() {
		q.metrics.reprioritized(e.priority, priority)
	}
	if (raised || fresh) && e.turn != nil {
		// A new class: the back of its lane there.
		q.turns.remove(e)
		e.priority, e.retry = max(e.priority, priority), e.retry && !fresh
		q.turns.push(e)
	} else {
		e.priority, e.retry = max(e.priority, priority), e.retry && !fresh
	}
	if !e.readyAt.IsZero() && (readyAt.IsZero() || readyAt.Before(e.readyAt)) {
		if readyAt.IsZero() {
			q.waiting.remove(e)
			q.becomeReady(e)
		} else {
			e.readyAt = readyAt
			q.waiting.fix(e)
			q.poke()
		}
	}
}

// becomeReady puts a key whose time has come in its lane, or parks it while a worker holds it. Caller holds q.mu.
func (q *Queue[T]) becomeReady(e *entry[T]) {
	e.readyAt = time.Time{}
	q.metrics.add(e.key, e.priority)
	if q.processing.Has(e.key) {
		e.parked = true
		return
	}
	q.turns.push(e)
	q.ready.Signal()
}

// readyDue makes ready the waiting keys whose time has come. Caller holds q.mu.
func (q *Queue[T]) readyDue(now time.Time) {
	for {
		e := q.waiting.peek()
		if e == nil || e.readyAt.After(now) {
			return
		}
		q.waiting.remove(e)
		q.becomeReady(e)
	}
}

// GetWithPriority blocks until a key is ready or the queue shuts down, and hands out the next key in turn.
func (q *Queue[T]) GetWithPriority() (item T, priority int, shutdown bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for {
		if q.shutdown {
			var zero T
			return zero, 0, true
		}
		q.readyDue(q.clock.Now())
		if e := q.turns.pop(); e != nil {
			delete(q.keys, e.key)
			q.processing.Insert(e.key)
			q.metrics.get(e.key, e.priority)
			return e.key, e.priority, false
		}
		q.ready.Wait()
	}
}

// Get is GetWithPriority without the priority.
func (q *Queue[T]) Get() (item T, shutdown bool) {
	item, _, shutdown = q.GetWithPriority()
	return item, shutdown
}

// Done ends the processing of item: added meanwhile, it joins its lane now.
func (q *Queue[T]) Done(item T) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.processing.Delete(item)
	q.metrics.done(item)
	if e := q.keys[item]; e != nil && e.parked {
		e.parked = false
		q.turns.push(e)
		q.ready.Signal()
	}
}

func (q *Queue[T]) Add(item T) { q.AddWithOpts(priorityqueue.AddOpts{}, item) }

func (q *Queue[T]) AddAfter(item T, after time.Duration) {
	q.AddWithOpts(priorityqueue.AddOpts{After: after}, item)
}

func (q *Queue[T]) AddRateLimited(item T) {
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true}, item)
}

func (q *Queue[T]) Forget(item T) { q.rateLimiter.Forget(item) }

func (q *Queue[T]) NumRequeues(item T) int { return q.rateLimiter.NumRequeues(item) }

// Len is the number of keys ready to be handed out (parked ones included, as controller-runtime counts them).
func (q *Queue[T]) Len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.readyDue(q.clock.Now())
	return len(q.keys) - q.waiting.Len()
}

// ShutDown stops the queue: every Get returns shutdown, adds are dropped.
func (q *Queue[T]) ShutDown() {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.shutdown {
		return
	}
	q.shutdown = true
	close(q.done)
	q.ready.Broadcast()
}

// ShutDownWithDrain is ShutDown, as in controller-runtime's priority queue (its controllers do not drain).
func (q *Queue[T]) ShutDownWithDrain() { q.ShutDown() }

func (q *Queue[T]) ShuttingDown() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.shutdown
}

// poke tells wakeDelayed to look at the earliest ready time again. Caller holds q.mu.
func (q *Queue[T]) poke() {
	select {
	case q.rearm <- struct{}{}:
	default:
	}
}

// wakeDelayed makes delayed keys ready when their time comes (Get does it too, but a Get already waiting needs the
// wake-up), until ShutDown.
func (q *Queue[T]) wakeDelayed() {
	for {
		q.mu.Lock()
		now := q.clock.Now()
		q.readyDue(now)
		var timer clock.Timer
		var fired <-chan time.Time
		if e := q.waiting.peek(); e != nil {
			timer = q.clock.NewTimer(e.readyAt.Sub(now))
			fired = timer.C()
		}
		q.mu.Unlock()
		select {
		case <-q.done:
		case <-q.rearm:
		case <-fired:
		}
		if timer != nil {
			timer.Stop()
		}
		select {
		case <-q.done:
			return
		default:
		}
	}
}
