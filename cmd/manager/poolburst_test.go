package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// What 200 pool sites created at once (e2e scenario 20-pool) cost another tenant's site, with the manager as the
// operator runs it (its flags' defaults: API budget, worker counts; the operator's RBAC) on a real API server.
//
// First, measured: during the burst, a site of another namespace that names a missing ConfigMap (Stalled,
// ConfigMapNotFound, a Warning event); the time from its creation to its status and to its event is logged
// (MEASURED) and bounded only far above what was measured, since a loaded machine may be slow.
//
// Then, asserted without a clock: the pool tenants' event writes are held (eventGate: the API server is slow for
// them, as it is under a deep queue of their events), more pool sites are created so that some of their events
// wait, and another namespace's site must get its Warning event while they still wait. One writer for every event
// of the process (controller-runtime's recorder) cannot do that: its one goroutine is stuck in a held write.
// Once the gate opens, every pool site's events are written: none was lost.
func TestPoolBurstDoesNotDelayOtherTenantsEvents(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	gate := newEventGate()
	cfg := asOperator(t, env)
	cfg.Wrap(gate.wrap)

	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o := bindFlags(fs)
	testenv.Must(t, fs.Parse(nil))
	o.metricsAddr, o.probeAddr = "0", "0"
	o.serverImage, o.contentAgentImage = "hyperstatic/server:under-test", "hyperstatic/content-agent:under-test"
	o.operatorNamespace = operatorNamespace
	o.skipNameValidation = true
	mgr, events, err := newManager(cfg, o)
	testenv.Must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	defer func() {
		gate.open() // a held write would keep the manager from stopping
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
		events.Stop()
	}()

	c := env.Client
	tenants := []string{"tenant-a", "tenant-b"}
	for _, ns := range append([]string{"burst-pool", "other", "another"}, tenants...) {
		testenv.Must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	}
	testenv.Must(t, c.Create(ctx, &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: "burst"},
		Spec: v1alpha1.StaticSitePoolSpec{Namespace: "burst-pool", Namespaces: tenants}}))

	// The burst, and another tenant's site while it runs.
	const sites, extra = 200, 8
	burst := time.Now()
	half := make(chan struct{})
	created := make(chan error, 1)
	go func() { created <- createPoolSites(ctx, c, "burst", tenants, 0, sites, half) }()
	<-half
	status, event := siteRefusedAfter(t, c, "other", "unrelated", 2*time.Minute)
	reconciled := poolSitesWithStatus(t, c, tenants)
	testenv.Must(t, <-created)
	poolEventsWritten(t, c, tenants, sites, 2*time.Minute)
	t.Logf("MEASURED a site of another namespace created during %d pool sites' creation: Stalled status after %.2f s, its Warning event after %.2f s (%d pool sites had a status then); every pool site's Created Service event written %.2f s after the burst began; the pool tenants' events by reason: %v",
		sites, status.Seconds(), event.Seconds(), reconciled, time.Since(burst).Seconds(), eventsByReason(t, c, tenants))

	// The pool tenants' events held: another namespace's still come.
	gate.hold(tenants...)
	testenv.Must(t, createPoolSites(ctx, c, "burst", tenants, sites, sites+extra, nil))
	testenv.Eventually(t, "a pool tenant's event write held", func() error {
		if gate.waiting.Load() == 0 {
			return errors.New("no event write held yet")
		}
		return nil
	})
	status, event = siteRefusedAfter(t, c, "another", "unrelated", testenv.EventuallyTimeout)
	if gate.waiting.Load() == 0 {
		t.Fatal("the gate holds no write any more: the pool tenants' events did not wait")
	}
	t.Logf("MEASURED with the pool tenants' event writes held: another namespace's site Stalled after %.2f s, its Warning event after %.2f s",
		status.Seconds(), event.Seconds())
	gate.open()
	poolEventsWritten(t, c, tenants, sites+extra, 2*time.Minute)
}

// siteRefusedAfter creates a site in ns naming a ConfigMap that does not exist and returns how long after its
// creation its Stalled condition (ConfigMapNotFound) and its Warning event were there; it fails the test past
// bound.
func siteRefusedAfter(t *testing.T, c client.Client, ns, name string, bound time.Duration) (status, event time.Duration) {
	t.Helper()
	ctx := context.Background()
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "missing"}}}}}
	begin := time.Now()
	testenv.Must(t, c.Create(ctx, site))
	for status == 0 || event == 0 {
		if time.Since(begin) > bound {
			t.Fatalf("site %s/%s: after %s, Stalled seen after %s, Warning event after %s (0: not seen)", ns, name, bound, status, event)
		}
		if status == 0 {
			s := &v1alpha1.StaticSite{}
			testenv.Must(t, c.Get(ctx, client.ObjectKeyFromObject(site), s))
			if cond := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionStalled); cond != nil &&
				cond.Status == metav1.ConditionTrue && cond.Reason == v1alpha1.ReasonConfigMapNotFound {
				status = time.Since(begin)
			}
		}
		if event == 0 {
			evs := &corev1.EventList{}
			testenv.Must(t, c.List(ctx, evs, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": name, "type": corev1.EventTypeWarning}))
			for _, e := range evs.Items {
				if e.Reason == v1alpha1.ReasonConfigMapNotFound {
					event = time.Since(begin)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return status, event
}

// eventsByReason counts the events in namespaces by reason (each event counted once, whatever its count).
func eventsByReason(t *testing.T, c client.Client, namespaces []string) map[string]int {
	t.Helper()
	by := map[string]int{}
	for _, ns := range namespaces {
		evs := &corev1.EventList{}
		testenv.Must(t, c.List(context.Background(), evs, client.InNamespace(ns)))
		for _, e := range evs.Items {
			by[e.Reason]++
		}
	}
	return by
}

// poolSitesWithStatus counts the pool sites that have a status written.
func poolSitesWithStatus(t *testing.T, c client.Client, tenants []string) int {
	t.Helper()
	n := 0
	for _, ns := range tenants {
		list := &v1alpha1.StaticSiteList{}
		testenv.Must(t, c.List(context.Background(), list, client.InNamespace(ns)))
		for _, s := range list.Items {
			if len(s.Status.Conditions) > 0 {
				n++
			}
		}
	}
	return n
}

// poolEventsWritten waits until each of the first count pool sites has its Created Service event; it fails the
// test past bound.
func poolEventsWritten(t *testing.T, c client.Client, tenants []string, count int, bound time.Duration) {
	t.Helper()
	begin := time.Now()
	for {
		written := 0
		for _, ns := range tenants {
			evs := &corev1.EventList{}
			testenv.Must(t, c.List(context.Background(), evs, client.InNamespace(ns), client.MatchingFields{"reason": "Created"}))
			for _, e := range evs.Items {
				if strings.HasPrefix(e.Message, "Created Service ") {
					written++
				}
			}
		}
		if written >= count {
			return
		}
		if time.Since(begin) > bound {
			t.Fatalf("after %s, %d of %d pool sites' Created Service events written", bound, written, count)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// createPoolSites creates the pool sites numbered [from, to), alternately in each tenant namespace, each with a
// small ConfigMap of its own, eight at a time as e2e 20-pool does. half, when not nil, is closed once half of
// them are created.
func createPoolSites(ctx context.Context, c client.Client, pool string, tenants []string, from, to int, half chan struct{}) error {
	var (
		wg    sync.WaitGroup
		made  atomic.Int32
		once  sync.Once
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
			if half != nil && int(made.Add(1)) >= (to-from)/2 {
				once.Do(func() { close(half) })
			}
		}()
	}
	wg.Wait()
	return first
}

// eventGate holds the operator's event writes into some namespaces until it is opened: it stands for an API server
// that is slow for one tenant's events (as a deep queue of them makes it for everything behind), deterministically.
// The requests are real and reach the real API server once let through.
type eventGate struct {
	mu      sync.Mutex
	held    map[string]bool
	opened  chan struct{}
	once    sync.Once
	waiting atomic.Int32 // writes held now
}

func newEventGate() *eventGate {
	return &eventGate{held: map[string]bool{}, opened: make(chan struct{})}
}

// hold makes event writes into namespaces wait until open.
func (g *eventGate) hold(namespaces ...string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, ns := range namespaces {
		g.held[ns] = true
	}
}

// open lets every held write through, and those after it.
func (g *eventGate) open() { g.once.Do(func() { close(g.opened) }) }

func (g *eventGate) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		if g.holds(req) {
			g.waiting.Add(1)
			select {
			case <-g.opened:
			case <-req.Context().Done():
			}
			g.waiting.Add(-1)
		}
		return rt.RoundTrip(req)
	})
}

// holds: a write of an Event (POST to .../events, PATCH or PUT of one) in a held namespace.
func (g *eventGate) holds(req *http.Request) bool {
	if req.Method == http.MethodGet {
		return false
	}
	p := strings.Split(strings.Trim(req.URL.Path, "/"), "/") // api v1 namespaces NS events [NAME]
	if len(p) < 5 || p[0] != "api" || p[1] != "v1" || p[2] != "namespaces" || p[4] != "events" {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.held[p[3]]
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
