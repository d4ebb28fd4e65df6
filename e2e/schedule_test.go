//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// How a suite's scenarios share one cluster.
//
// Most scenarios spend their time waiting: on pods to start, rollouts to finish, autoscalers to react, timers of
// their own. Run one after the other, the suite takes the sum of those waits while the machine's CPUs idle. So a
// suite is a list of scenarios and the scheduler here runs side by side every scenario that can share the cluster,
// within two budgets, and the few that cannot (`alone`) on a cluster with nothing else running:
//
//   - requests: the CPU a scenario's pods ask for at its peak (millicores). The running scenarios' requests stay
//     within what the schedulable nodes have left when the suite starts, so no pod of one scenario waits Pending
//     behind another's and times a wait out for a reason that is not its own.
//   - load: its share (percent) of the machine's real CPUs while it drives traffic. A scenario whose assertions
//     compare measured figures (capacity, the performance gate) asks for the whole machine's load budget, so the
//     figures it compares are taken on a machine that other load generators leave alone; scenarios that only wait
//     or make a handful of requests ask for none and still run beside it.
//
// Scenarios start in list order (first come, first served: a big one at the head is not overtaken, so it cannot
// starve), each as its own subtest with its usual name (`-run 'TestE2E/14'` selects it as before), in its own
// namespaces. An `alone` scenario waits until every scenario before it has ended, and the ones after it wait for
// it. Each scenario's log says how long it waited for room and how long it ran, and the suite ends with a table of
// them all.

// scenario is one step of a suite and what it needs while it runs.
type scenario struct {
	name string
	run  func(*testing.T)
	// alone: it changes what every other scenario relies on (the operator's release, a node), or needs the
	// cluster quiet: it runs with no other scenario beside it, in list order.
	alone bool
	// required: the suite stops when it fails (the operator's install: every later scenario would only repeat
	// that failure).
	required bool
	// requests is the most CPU its pods request at once, in millicores (sites with their surge pods, clients,
	// k6, measurement probes).
	requests int64
	// load is its share of the machine's CPUs while it generates load, in percent; 100 for scenarios that
	// compare measured throughput.
	load int
}

// budget is what the running scenarios may use together: requests in millicores, load in percent.
type budget struct {
	requests int64
	load     int
}

// scenarioTiming is what the suite's closing table says of one scenario.
type scenarioTiming struct {
	name         string
	waited, took time.Duration
	failed       bool
	skipped      bool
}

// pool hands out the budget. First come, first served is runScenarios' doing: it lets the next scenario ask only
// once the one before it holds its share, so at most one scenario waits here at a time.
type pool struct {
	mu     sync.Mutex
	cond   *sync.Cond
	free   budget
	active int // scenarios running
}

func newPool(total budget) *pool {
	p := &pool{free: total}
	p.cond = sync.NewCond(&p.mu)
	return p
}

// fits says whether a need fits the free budget. A need larger than the whole budget fits an idle pool, so a
// scenario bigger than the cluster still runs (alone) instead of waiting for ever.
func (p *pool) fits(need budget) bool {
	if p.active == 0 {
		return true
	}
	return need.requests <= p.free.requests && need.load <= p.free.load
}

// acquire blocks until need fits; alone waits for an idle pool.
func (p *pool) acquire(need budget, alone bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for !p.fits(need) || (alone && p.active > 0) {
		p.cond.Wait()
	}
	p.free.requests -= need.requests
	p.free.load -= need.load
	p.active++
}

func (p *pool) release(need budget) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.free.requests += need.requests
	p.free.load += need.load
	p.active--
	p.cond.Broadcast()
}

// runScenarios runs the suite's scenarios as the package comment says. Every scenario's t.Run returns before it
// does, as the testing package requires of subtests run from other goroutines.
func runScenarios(t *testing.T, scenarios []scenario) {
	t.Helper()
	total := schedulableBudget(t)
	t.Logf("scenario budget: %d millicores of requests left on the schedulable nodes, load %d %%", total.requests, total.load)
	p := newPool(total)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		timings = make([]scenarioTiming, len(scenarios))
		started = time.Now()
	)
	for i, sc := range scenarios {
		need := budget{requests: sc.requests, load: sc.load}
		if sc.alone {
			wg.Wait() // every scenario before it has ended; the ones after it start once it has
		}
		// First come, first served: scenario i+1 asks for room only once scenario i holds its share (or was not
		// selected by -run).
		holdsShare := make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			queued := time.Now()
			var ran bool
			t.Run(sc.name, func(t *testing.T) {
				ran = true
				p.acquire(need, sc.alone)
				close(holdsShare)
				defer p.release(need)
				waited := time.Since(queued)
				t.Logf("scenario %s: started after waiting %s for room (requests %dm, load %d%%, alone %v)",
					sc.name, waited.Round(time.Second), sc.requests, sc.load, sc.alone)
				begin := time.Now()
				defer func() {
					mu.Lock()
					timings[i] = scenarioTiming{name: sc.name, waited: waited, took: time.Since(begin), failed: t.Failed(), skipped: t.Skipped()}
					mu.Unlock()
				}()
				sc.run(t)
			})
			if !ran { // not selected by -run
				close(holdsShare)
			}
		}()
		<-holdsShare
		if sc.alone {
			wg.Wait()
			mu.Lock()
			stop := sc.required && timings[i].failed
			mu.Unlock()
			if stop {
				t.Fatalf("%s failed: the other scenarios would only repeat that failure", sc.name)
			}
		}
	}
	wg.Wait()
	logTimings(t, timings, time.Since(started))
}

// logTimings prints the suite's closing table: each scenario's wait for room and run time.
func logTimings(t *testing.T, timings []scenarioTiming, wall time.Duration) {
	t.Helper()
	var b strings.Builder
	var sum time.Duration
	fmt.Fprintf(&b, "%-40s %8s %8s  %s\n", "scenario", "waited", "ran", "result")
	for _, s := range timings {
		if s.name == "" { // not selected by -run
			continue
		}
		result := "pass"
		switch {
		case s.failed:
			result = "FAIL"
		case s.skipped:
			result = "skipped"
		}
		sum += s.took
		fmt.Fprintf(&b, "%-40s %7.0fs %7.0fs  %s\n", s.name, s.waited.Seconds(), s.took.Seconds(), result)
	}
	t.Logf("MEASURED scenarios: %.0f s of scenario time in %.0f s of wall time\n%s", sum.Seconds(), wall.Seconds(), b.String())
}

// schedulableBudget is the CPU left for the scenarios: on every node that takes ordinary pods (no NoSchedule or
// NoExecute taint), its allocatable CPU less what its pods already request (the control plane's, CoreDNS, the
// operator), summed; less one tenth as slack for what a budget of sums cannot see (a pod needs all its CPU on
// one node). The load budget is the whole machine, 100 %.
func schedulableBudget(t *testing.T) budget {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list nodes: %v", err)
	}
	pods, err := cs.CoreV1().Pods("").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	var free int64
	for _, n := range nodes.Items {
		if slices.ContainsFunc(n.Spec.Taints, func(tn corev1.Taint) bool {
			return tn.Effect == corev1.TaintEffectNoSchedule || tn.Effect == corev1.TaintEffectNoExecute
		}) || n.Spec.Unschedulable {
			continue
		}
		left := n.Status.Allocatable.Cpu().MilliValue()
		for _, p := range pods.Items {
			if p.Spec.NodeName != n.Name || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
				continue
			}
			for _, c := range p.Spec.Containers {
				left -= c.Resources.Requests.Cpu().MilliValue()
			}
		}
		free += max(0, left)
	}
	return budget{requests: free * 9 / 10, load: 100}
}
