package pool

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/autoplacement"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// stepClock moves the controller's clock forward by d, then waits until a pass that started after the move has
// read the pool pod s: that pass measured what the pods say now. A test changes what the pods say first and moves
// the clock after, so no pass pairs new counters with a time they were not read at (a pass at the old time
// measures nothing: pooltraffic's MinInterval). Passes of one pool are serial: the second read after the move is
// a pass that started after it. The wait is bounded by stepTimeout, not EventuallyTimeout: it waits for two
// passes of this pool, which on a loaded machine queue behind the passes of every pool the suite created.
func stepClock(t *testing.T, s *sitesServer, d time.Duration) time.Time {
	t.Helper()
	poolClock.SetTime(poolClock.Now().Add(d))
	at := poolClock.Now()
	from := s.reads()
	for deadline := time.Now().Add(stepTimeout); s.reads() < from+2; time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d reads of the pool pod in %v since the clock moved, want 2", s.reads()-from, stepTimeout)
		}
	}
	return at
}

// stepTimeout bounds stepClock's wait.
const stepTimeout = 3 * testenv.EventuallyTimeout

// metricsServer answers a site pod's /metrics with a hyperstatic_requests_total it is given, as the server's admin
// port does (images/server/src/admin/metrics.rs), at ip's admin port.
type metricsServer struct{ requests, calls atomic.Int64 }

func newMetricsServer(t *testing.T, ip string) *metricsServer {
	t.Helper()
	m := &metricsServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		m.calls.Add(1)
		fmt.Fprintf(w, "# TYPE hyperstatic_requests_total counter\nhyperstatic_requests_total{code=\"200\"} %d\nhyperstatic_requests_total{code=\"404\"} 0\n", m.requests.Load())
	}))
	t.Cleanup(srv.Close)
	metricsAddrs.mu.Lock()
	metricsAddrs.m[ip] = srv.Listener.Addr().String()
	metricsAddrs.mu.Unlock()
	return m
}

// ownPod plays the site controller, the ReplicaSet controller and the kubelet: a ready server pod of site at ip.
func ownPod(t *testing.T, site *v1alpha1.StaticSite, name, ip string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: name, Labels: sitechild.ObjectLabels(site)},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: sitechild.ContainerName, Image: testServerImage}}}}
	testenv.Must(t, k8s.Create(ctx, p))
	markRunning(t, p, ip)
	return p
}

func wantTraffic(band autoplacement.Band, rps float64, since time.Time) func(poolstate.Served) error {
	return func(s poolstate.Served) error {
		if s.Traffic.Band != band || s.Traffic.RPS != rps || !s.Traffic.Since.Equal(since) {
			return fmt.Errorf("traffic %+v, want %q %v req/s since %v", s.Traffic, band, rps, since)
		}
		return nil
	}
}

// The traffic of a site placed automatically, as the pool controller publishes it on the Board: the pool pods'
// per-site request counters (/sites) and the site's own pods' hyperstatic_requests_total (/metrics, read by the
// real scraper), each turned into a rate between two readings and summed; the band against the site's
// thresholds, with since when. A pool pod restarting (its counter going down) makes the rate unknown for a reading
// rather than low. A site in the pool that is not placed automatically gets no traffic.
func TestAutoSiteTraffic(t *testing.T) {
	ctx := context.Background()
	poolNS := namespace(t, uniqueName("pool"))
	tenant := uniqueName("tenant") // not restricted: the test creates the site's pods by hand
	testenv.Must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: tenant}}))
	pool := createPool(t, poolNS, []string{tenant}, 1)
	auto := gitSite(t, tenant, "auto", pool.Name)
	updateSite(t, auto, func(s *v1alpha1.StaticSite) {
		s.Spec.Placement = &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementAuto, Pool: pool.Name,
			PromoteAbove: ptr.To[int64](100), DemoteBelow: ptr.To[int64](10)}
	})
	gitSite(t, tenant, "fixed", pool.Name)
	autoID, fixedID := poolindex.ID(tenant, "auto"), poolindex.ID(tenant, "fixed")
	testenv.Eventually(t, "both sites in the index", func() error {
		index, err := indexIDs(t, pool)
		if err == nil && len(index) != 2 {
			err = fmt.Errorf("index holds %v", keys(index))
		}
		return err
	})
	d := getDeployment(t, poolNS, poolplacement.ServerName(pool.Name))
	completeRollout(t, d)
	pod := runPod(t, d, pool.Name+"-1")
	s1 := newSitesServer(t, poolNS, pod.Name)
	counts := func(auto, fixed int) {
		s1.answer(map[string]any{"id": autoID, "state": "memory", "requests": auto}, map[string]any{"id": fixedID, "state": "memory", "requests": fixed})
	}

	// A first reading to compare with.
	counts(1000, 0)
	stepClock(t, s1, 10*time.Second)

	// 2000 more requests in 10 s: 200 req/s, above promoteAbove 100.
	counts(3000, 5000)
	at := stepClock(t, s1, 10*time.Second)
	waitBoard(t, autoID, wantTraffic(autoplacement.BandAbove, 200, at))
	if s, _ := board.Get(fixedID); s.Traffic != (autoplacement.Traffic{}) {
		t.Errorf("a Pool site (not Auto) has traffic %+v", s.Traffic)
	}

	// Promoted (played here): its own pod serves it now, the pool's pod no more. A new pod gives no rate on its
	// first reading, so the site's rate is a lower bound: unknown, not low.
	own := newMetricsServer(t, "10.77.0.1")
	own.requests.Store(40)
	ownPod(t, auto, "auto-own-1", "10.77.0.1")
	testenv.Eventually(t, "the own pod read", func() error {
		if own.calls.Load() == 0 {
			return fmt.Errorf("not read yet")
		}
		return nil
	})
	at = stepClock(t, s1, 10*time.Second)
	waitBoard(t, autoID, wantTraffic(autoplacement.BandUnknown, 0, at))
	// 5000 requests in 10 s on its own pod: 500 req/s, above.
	own.requests.Store(5040)
	at = stepClock(t, s1, 10*time.Second)
	waitBoard(t, autoID, wantTraffic(autoplacement.BandAbove, 500, at))
	// Quiet: 50 requests in 10 s over both sides, below demoteBelow 10.
	own.requests.Store(5080)
	counts(3010, 5000)
	below := stepClock(t, s1, 10*time.Second)
	waitBoard(t, autoID, wantTraffic(autoplacement.BandBelow, 5, below))
	// Still quiet: the band and its start stay (no announcement wakes the site).
	own.requests.Store(5090)
	stepClock(t, s1, 10*time.Second)
	waitBoard(t, autoID, wantTraffic(autoplacement.BandBelow, 1, below))

	// The pool pod restarts: its counter starts again. That reading is a lower bound: unknown, not low.
	counts(2, 0)
	at = stepClock(t, s1, 10*time.Second)
	waitBoard(t, autoID, wantTraffic(autoplacement.BandUnknown, 0, at))
}
