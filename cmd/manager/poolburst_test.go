package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// What a burst of pool sites (e2e scenario 20-pool creates 200 at once) costs another tenant's site, with the
// manager as the operator runs it (its flags' defaults: API budget, 8 site workers; the operator's RBAC) on a real
// API server. Asserted by the order of things, not by a clock:
//
// The manager's writes into the pool tenants' namespaces are held at its HTTP client (gate: an API server slow for
// them). The burst's sites are created; every site worker takes one and waits in a held write, and the rest queue
// up (the site queue's depth, read from controller-runtime's metrics). Then a site of another namespace, naming a
// missing ConfigMap (Stalled ConfigMapNotFound, a Warning event), is created and queued behind the burst. The
// tenants' writes are let go, but for their events, which stay held:
//   - the other site's status must be written before half of the burst's statuses: the site queue serves the
//     namespaces in turn (internal/fairqueue). A first-come-first-served queue writes it after every pool site
//     queued before it (checked: it fails so);
//   - its Warning event must be written while the tenants' event writes are still held: each namespace's events
//     have their own lane (internal/eventlanes). One writer for the process is stuck in a held write.
//
// The times are logged (MEASURED) for docs/bench, not asserted.
func TestPoolBurstDoesNotDelayOtherTenants(t *testing.T) {
	gate := newWriteGate()
	env, mgr, o := startOperator(t, gate)
	// A manager that ran before in this process may have left sites counted in the queue's depth.
	depthBefore := siteQueueDepth(t)
	ctx := context.Background()

	c := env.Client
	tenants := []string{"tenant-a", "tenant-b"}
	for _, ns := range append([]string{"burst-pool", "other"}, tenants...) {
		testenv.Must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	gate.hold(tenants...)
	testenv.Must(t, c.Create(ctx, &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: "burst"},
		Spec: v1alpha1.StaticSitePoolSpec{Namespace: "burst-pool", Namespaces: tenants}}))

	const sites = 100
	workers := o.staticSiteConcurrency
	testenv.Must(t, createPoolSites(ctx, c, "burst", tenants, 0, sites))
	waitFor(t, "the burst queued behind the site workers", func() error {
		if d := siteQueueDepth(t) - depthBefore; d < float64(sites-workers) {
			return fmt.Errorf("%v sites queued, %d held by the workers", d, gate.heldWrites())
		}
		return nil
	})
	queued := siteQueueDepth(t)
	other := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "unrelated"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "missing"}}}}}
	testenv.Must(t, c.Create(ctx, other))
	waitFor(t, "the other tenant's site queued", func() error {
		if err := mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(other), &v1alpha1.StaticSite{}); err != nil {
			return err
		}
		if d := siteQueueDepth(t); d <= queued {
			return fmt.Errorf("depth %v, %v before", d, queued)
		}
		return nil
	})
	if gate.statusWrites() != nil {
		t.Fatalf("status written while the tenants' writes were held: %v", gate.statusWrites())
	}

	released := time.Now()
	gate.releaseAllButEvents()
	var status, event time.Duration
	waitFor(t, "the other tenant's site Stalled and its Warning event written", func() error {
		if status == 0 {
			s := &v1alpha1.StaticSite{}
			testenv.Must(t, c.Get(ctx, client.ObjectKeyFromObject(other), s))
			if cond := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionStalled); cond == nil ||
				cond.Status != metav1.ConditionTrue || cond.Reason != v1alpha1.ReasonConfigMapNotFound {
				return fmt.Errorf("not Stalled: %+v", cond)
			}
			status = time.Since(released)
		}
		evs := &corev1.EventList{}
		testenv.Must(t, c.List(ctx, evs, client.InNamespace("other"),
			client.MatchingFields{"involvedObject.name": other.Name, "type": corev1.EventTypeWarning, "reason": v1alpha1.ReasonConfigMapNotFound}))
		if len(evs.Items) == 0 {
			return errors.New("no Warning event yet")
		}
		event = time.Since(released)
		return nil
	})
	heldEvents := gate.heldWrites()
	writes := gate.statusWrites()
	before := slices.Index(writes, "other/unrelated")
	t.Logf("MEASURED %d pool sites queued, then another namespace's site: after the tenants' writes were let go, its status came %.2f s later, as status write %d of %d (%d pool sites' before it), its Warning event %.2f s later with %d pool tenants' event writes held",
		sites, status.Seconds(), before+1, len(writes), before, event.Seconds(), heldEvents)
	if before < 0 || before >= sites/2 {
		t.Errorf("the other tenant's status written after %d pool sites' status writes (%d sites queued before it): the site queue made it wait for the burst", before, sites)
	}
	if heldEvents == 0 {
		t.Error("no pool tenant's event write held when the other tenant's Warning was written: the test did not hold their events")
	}
}

// startOperator starts a real API server and the manager on it as the operator runs it (the flags' defaults, the
// operator's RBAC), its requests through gate; both stop when the test ends, the manager first.
func startOperator(tb testing.TB, gate *writeGate) (*testenv.Env, ctrl.Manager, *options) {
	tb.Helper()
	env, err := testenv.Start()
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = env.Stop() })
	cfg := asOperator(tb, env)
	cfg.Wrap(gate.wrap)
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o := bindFlags(fs)
	testenv.Must(tb, fs.Parse(nil))
	o.metricsAddr, o.probeAddr = "0", "0"
	o.serverImage, o.contentAgentImage = "hyperstatic/server:under-test", "hyperstatic/content-agent:under-test"
	o.operatorNamespace = operatorNamespace
	o.skipNameValidation = true
	mgr, events, err := newManager(cfg, o)
	testenv.Must(tb, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	tb.Cleanup(func() {
		gate.openAll() // a held write would keep the manager from stopping
		cancel()
		if err := <-done; err != nil {
			tb.Errorf("manager stopped with %v", err)
		}
		events.Stop()
	})
	return env, mgr, o
}

// siteQueueDepth is the StaticSite controller's queue depth at priority 0 (people's changes and creations; the
// pool's fan-out is at handler.LowPriority), from controller-runtime's metrics.
func siteQueueDepth(t testing.TB) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	testenv.Must(t, err)
	for _, f := range families {
		if f.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["name"] == "staticsite" && labels["priority"] == "0" {
				return m.GetGauge().GetValue()
			}
		}
	}
	return 0
}

// waitFor retries check every 50 ms until it returns nil, and fails the test after a minute: a loaded machine with
// -race takes a while to create and queue a hundred sites; nothing here waits for time to pass.
func waitFor(t *testing.T, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// createPoolSites creates the pool sites numbered [from, to), alternately in each tenant namespace, each with a
// small ConfigMap of its own, eight at a time as e2e 20-pool does.
func createPoolSites(ctx context.Context, c client.Client, pool string, tenants []string, from, to int) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	sem := make(chan struct{}, 8)
	for i := from; i < to; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			ns, name := tenants[i%len(tenants)], fmt.Sprintf("s-%03d", i)
			err := c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Data: map[string]string{"index.html": name}})
			if err == nil {
				err = c.Create(ctx, &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
					Spec: v1alpha1.StaticSiteSpec{
						Content:   v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: name}}},
						Placement: &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: pool},
					}})
			}
			if err != nil {
				mu.Lock()
				first = errors.Join(first, fmt.Errorf("pool site %s/%s: %w", ns, name, err))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// writeGate holds the manager's writes into some namespaces until it lets them go, first all but the Events, then
// those: it stands for an API server slow for one tenant (as a deep queue of its requests makes it for everything
// behind), deterministically. The requests are real and reach the real API server once let through. It also
// records, in the order they go through, the StaticSite status writes ("namespace/name").
type writeGate struct {
	mu       sync.Mutex
	held     map[string]bool
	writes   chan struct{} // closed: writes other than Events go through
	events   chan struct{} // closed: Event writes go through
	once     [2]sync.Once
	waiting  atomic.Int32 // writes held now
	statuses []string
}

func newWriteGate() *writeGate {
	return &writeGate{held: map[string]bool{}, writes: make(chan struct{}), events: make(chan struct{})}
}

// hold makes writes into namespaces wait.
func (g *writeGate) hold(namespaces ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, ns := range namespaces {
		g.held[ns] = true
	}
}

func (g *writeGate) releaseAllButEvents() { g.once[0].Do(func() { close(g.writes) }) }

func (g *writeGate) openAll() {
	g.releaseAllButEvents()
	g.once[1].Do(func() { close(g.events) })
}

func (g *writeGate) heldWrites() int { return int(g.waiting.Load()) }

func (g *writeGate) statusWrites() []string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return slices.Clone(g.statuses)
}

func (g *writeGate) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if req.Method == http.MethodGet {
			return rt.RoundTrip(req)
		}
		// /api/v1/namespaces/NS/events[/NAME] or /apis/GROUP/VERSION/namespaces/NS/RESOURCE[/NAME[/SUB]]
		p := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
		if p[0] == "apis" && len(p) > 2 {
			p = p[1:] // the group, so that both read [_, version, namespaces, NS, resource, ...]
		}
		if len(p) < 5 || p[2] != "namespaces" {
			return rt.RoundTrip(req)
		}
		ns, resource := p[3], p[4]
		g.mu.Lock()
		held := g.held[ns]
		g.mu.Unlock()
		if held {
			gate := g.writes
			if resource == "events" {
				gate = g.events
			}
			g.waiting.Add(1)
			select {
			case <-gate:
			case <-req.Context().Done():
			}
			g.waiting.Add(-1)
		}
		if resource == "staticsites" && len(p) == 7 && p[6] == "status" {
			g.mu.Lock()
			g.statuses = append(g.statuses, ns+"/"+p[5])
			g.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
