package fairqueue

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"

	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Keys are "lane/name".
func laneOfKey(k string) string { return k[:strings.IndexByte(k, '/')] }

func newTestQueue(t *testing.T, o Options[string]) (*Queue[string], *clocktesting.FakeClock) {
	t.Helper()
	clk := clocktesting.NewFakeClock(time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC))
	if o.Clock == nil {
		o.Clock = clk
	}
	q := New("test", laneOfKey, o)
	t.Cleanup(q.ShutDown)
	return q, clk
}

// take hands out n keys, each marked Done at once, and returns them in order.
func take(t *testing.T, q *Queue[string], n int) []string {
	t.Helper()
	var got []string
	for range n {
		k, shutdown := q.Get()
		if shutdown {
			t.Fatalf("shut down after %v", got)
		}
		got = append(got, k)
		q.Done(k)
	}
	return got
}

func keys(lane string, from, to int) []string {
	var ks []string
	for i := from; i < to; i++ {
		ks = append(ks, fmt.Sprintf("%s/%d", lane, i))
	}
	return ks
}

func expect(t *testing.T, got []string, want ...string) {
	t.Helper()
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Fatalf("handed out %v, want %v", got, want)
	}
}

// A burst in one lane does not hold a key of another: it waits for one key of each busy lane, not for the burst.
func TestAnIdleLaneWaitsForOneKeyOfEachBusyLane(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	for _, k := range append(keys("a", 0, 100), keys("b", 0, 100)...) {
		q.Add(k)
	}
	expect(t, take(t, q, 3), "a/0", "b/0", "a/1")
	q.Add("c/0")
	// The round is b, a, then c: c waits for one key of b and one of a.
	expect(t, take(t, q, 4), "b/1", "a/2", "c/0", "b/2")
	if n := q.Len(); n != 194 {
		t.Fatalf("Len %d, want 194", n)
	}
}

// Each lane's keys go in the order they were added, the lanes in turn from the order they first had a key.
func TestEachLaneKeepsItsOrder(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	for _, k := range []string{"a/0", "a/1", "b/0", "a/2", "b/1", "c/0"} {
		q.Add(k)
	}
	expect(t, take(t, q, 6), "a/0", "b/0", "c/0", "a/1", "b/1", "a/2")
}

// Priorities go first; lanes take turns within a priority, and a key raised to a higher priority leaves its old
// turn for the back of its lane in the new one.
func TestPrioritiesBeforeTurns(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	low := priorityqueue.AddOpts{Priority: ptr.To(-100)}
	q.AddWithOpts(low, keys("pool", 0, 5)...)
	q.AddWithOpts(low, "other/low")
	q.Add("a/0")
	q.Add("b/0")
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(5)}, "pool/3")
	q.AddWithOpts(low, "a/0") // keeps its priority 0
	expect(t, take(t, q, 8), "pool/3", "a/0", "b/0", "pool/0", "other/low", "pool/1", "pool/2", "pool/4")
	if n := q.Len(); n != 0 {
		t.Fatalf("Len %d, want 0", n)
	}
}

// Within a priority, keys added without a delay go before the retries that fell due, whatever their lanes, as in
// controller-runtime's priority queue; added again without a delay, a retry is one no longer.
func TestFreshKeysBeforeRetries(t *testing.T) {
	q, clk := newTestQueue(t, Options[string]{})
	q.AddAfter("a/retry1", time.Second)
	q.AddAfter("b/retry2", time.Second)
	q.AddAfter("c/retry3", time.Second)
	clk.Step(time.Second)
	q.Add("a/fresh")
	q.Add("c/retry3")
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, "d/low")
	expect(t, take(t, q, 5), "a/fresh", "c/retry3", "a/retry1", "b/retry2", "d/low")
}

// A key is queued once; added while a worker holds it, it is not handed out again until Done.
func TestAKeyIsQueuedOnceAndNotHandedOutTwice(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	q.Add("a/0")
	q.Add("a/0")
	q.Add("b/0")
	k, _ := q.Get()
	q.Add(k) // changed while reconciled: waits for Done
	if n := q.Len(); n != 2 {
		t.Fatalf("Len %d, want 2 (b/0 and a/0 parked)", n)
	}
	expect(t, take(t, q, 1), "b/0")
	q.Add("c/0")
	expect(t, take(t, q, 1), "c/0")
	q.Done(k)
	expect(t, take(t, q, 1), "a/0")
	if n := q.Len(); n != 0 {
		t.Fatalf("Len %d, want 0", n)
	}
}

// A delayed key is ready when the clock says so (Get wakes), not before; adding it again keeps the earlier time,
// and adding it with no delay makes it ready at once.
func TestDelays(t *testing.T) {
	q, clk := newTestQueue(t, Options[string]{})
	q.AddAfter("a/late", time.Minute)
	q.AddAfter("a/soon", 10*time.Second)
	q.AddAfter("a/soon", time.Hour) // keeps 10 s
	q.AddAfter("b/now", time.Hour)
	q.Add("b/now")
	expect(t, take(t, q, 1), "b/now")
	if n := q.Len(); n != 0 {
		t.Fatalf("Len %d before any delay passed, want 0", n)
	}
	got := make(chan string)
	go func() {
		k, _ := q.Get()
		got <- k
	}()
	waitTimer(t, clk)
	clk.Step(10 * time.Second)
	if k := <-got; k != "a/soon" {
		t.Fatalf("after 10 s: %s", k)
	}
	q.Done("a/soon")
	if n := q.Len(); n != 0 {
		t.Fatalf("Len %d after 10 s, want 0", n)
	}
	clk.Step(50 * time.Second)
	expect(t, take(t, q, 1), "a/late")
}

// waitTimer waits until the queue's goroutine has set its timer for the next delayed key.
func waitTimer(t *testing.T, clk *clocktesting.FakeClock) {
	t.Helper()
	testenv.Eventually(t, "the queue's timer set", func() error {
		if !clk.HasWaiters() {
			return fmt.Errorf("no timer yet")
		}
		return nil
	})
}

// AddRateLimited delays a key by the rate limiter's When; with After as well, the smaller delay; NumRequeues and
// Forget are the rate limiter's.
func TestRateLimited(t *testing.T) {
	rl := &fixedLimiter{delay: 30 * time.Second, requeues: map[string]int{}}
	q, clk := newTestQueue(t, Options[string]{RateLimiter: rl})
	q.AddRateLimited("a/0")
	q.AddWithOpts(priorityqueue.AddOpts{RateLimited: true, After: 5 * time.Second}, "b/0")
	if n := q.NumRequeues("a/0"); n != 1 {
		t.Fatalf("NumRequeues %d, want 1", n)
	}
	clk.Step(5 * time.Second)
	expect(t, take(t, q, 1), "b/0")
	clk.Step(25 * time.Second)
	expect(t, take(t, q, 1), "a/0")
	q.Forget("a/0")
	if n := q.NumRequeues("a/0"); n != 0 {
		t.Fatalf("NumRequeues %d after Forget, want 0", n)
	}
}

type fixedLimiter struct {
	delay    time.Duration
	mu       sync.Mutex
	requeues map[string]int
}

func (l *fixedLimiter) When(k string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.requeues[k]++
	return l.delay
}

func (l *fixedLimiter) Forget(k string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.requeues, k)
}

func (l *fixedLimiter) NumRequeues(k string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.requeues[k]
}

// ShutDown wakes a waiting Get, which reports it; adds after it are dropped.
func TestShutDown(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	stopped := make(chan bool)
	go func() {
		_, shutdown := q.Get()
		stopped <- shutdown
	}()
	q.ShutDown()
	if !<-stopped {
		t.Fatal("Get returned without shutdown")
	}
	q.Add("a/0")
	if n := q.Len(); n != 0 || !q.ShuttingDown() {
		t.Fatalf("Len %d, ShuttingDown %v after ShutDown", n, q.ShuttingDown())
	}
	if _, shutdown := q.Get(); !shutdown {
		t.Fatal("Get after ShutDown")
	}
}

// Workers and adders at once (for -race): no key is held by two workers, a key added during its pass comes back
// once after Done, and every key is handed out.
func TestConcurrentWorkers(t *testing.T) {
	q, _ := newTestQueue(t, Options[string]{})
	var (
		mu      sync.Mutex
		holding = map[string]bool{}
		passes  = map[string]int{}
		workers sync.WaitGroup
	)
	for range 4 {
		workers.Add(1)
		go func() {
			defer workers.Done()
			for {
				k, shutdown := q.Get()
				if shutdown {
					return
				}
				mu.Lock()
				if holding[k] {
					t.Errorf("%s handed out twice at once", k)
				}
				holding[k] = true
				passes[k]++
				first := passes[k] == 1
				mu.Unlock()
				if first {
					q.Add(k) // as a child's event during the pass: parked until Done
				}
				mu.Lock()
				holding[k] = false
				mu.Unlock()
				q.Done(k)
			}
		}()
	}
	var adders sync.WaitGroup
	for _, lane := range []string{"a", "b", "c"} {
		adders.Add(1)
		go func() {
			defer adders.Done()
			for _, k := range keys(lane, 0, 200) {
				q.Add(k)
			}
		}()
	}
	adders.Wait()
	testenv.Eventually(t, "every key handed out twice and the queue empty", func() error {
		mu.Lock()
		defer mu.Unlock()
		twice := 0
		for _, n := range passes {
			if n == 2 {
				twice++
			}
		}
		if twice != 600 || q.Len() != 0 {
			return fmt.Errorf("%d keys handed out twice, Len %d", twice, q.Len())
		}
		return nil
	})
	q.ShutDown()
	workers.Wait()
	for k, n := range passes {
		if n != 2 {
			t.Errorf("%s handed out %d times", k, n)
		}
	}
}

// The queue's metrics, through a provider: a key counts in the depth of its priority from ready to Get, moves
// with its priority, and a delayed add is a retry.
func TestMetrics(t *testing.T) {
	p := newCountingProvider()
	q, clk := newTestQueue(t, Options[string]{Metrics: p})
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, "a/0")
	q.Add("b/0")
	q.AddAfter("c/0", time.Second)
	if d := p.depthOf(); d != "-100:1 0:1" {
		t.Fatalf("depth %s", d)
	}
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(1)}, "a/0")
	if d := p.depthOf(); d != "-100:0 0:1 1:1" {
		t.Fatalf("depth after a/0 raised %s", d)
	}
	clk.Step(time.Second)
	take(t, q, 3)
	if d := p.depthOf(); d != "-100:0 0:0 1:0" {
		t.Fatalf("depth after every Get %s", d)
	}
	if p.adds != 3 || p.retries != 1 || p.latencies != 3 || p.durations != 3 {
		t.Fatalf("adds %d retries %d latencies %d durations %d, want 3 1 3 3", p.adds, p.retries, p.latencies, p.durations)
	}
}

// countingProvider counts what the queue reports (the Queue's lock serialises the calls).
type countingProvider struct {
	depth                               map[int]int
	adds, retries, latencies, durations int
}

func newCountingProvider() *countingProvider { return &countingProvider{depth: map[int]int{}} }

func (p *countingProvider) depthOf() string {
	var s []string
	for _, pr := range []int{-100, 0, 1} {
		if d, ok := p.depth[pr]; ok {
			s = append(s, fmt.Sprintf("%d:%d", pr, d))
		}
	}
	return strings.Join(s, " ")
}

func (p *countingProvider) NewDepthMetricWithPriority(string) DepthByPriority {
	return countingDepth{p}
}
func (p *countingProvider) NewDepthMetric(string) workqueue.GaugeMetric  { return nopMetric{} }
func (p *countingProvider) NewAddsMetric(string) workqueue.CounterMetric { return counter{&p.adds} }
func (p *countingProvider) NewLatencyMetric(string) workqueue.HistogramMetric {
	return counter{&p.latencies}
}
func (p *countingProvider) NewWorkDurationMetric(string) workqueue.HistogramMetric {
	return counter{&p.durations}
}
func (p *countingProvider) NewUnfinishedWorkSecondsMetric(string) workqueue.SettableGaugeMetric {
	return nopMetric{}
}
func (p *countingProvider) NewLongestRunningProcessorSecondsMetric(string) workqueue.SettableGaugeMetric {
	return nopMetric{}
}
func (p *countingProvider) NewRetriesMetric(string) workqueue.CounterMetric {
	return counter{&p.retries}
}

type countingDepth struct{ p *countingProvider }

func (d countingDepth) Inc(priority int) { d.p.depth[priority]++ }
func (d countingDepth) Dec(priority int) { d.p.depth[priority]-- }

type counter struct{ n *int }

func (c counter) Inc()            { *c.n++ }
func (c counter) Observe(float64) { *c.n++ }

type nopMetric struct{}

func (nopMetric) Inc()        {}
func (nopMetric) Dec()        {}
func (nopMetric) Set(float64) {}
