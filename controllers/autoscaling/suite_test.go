package autoscaling

import (
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The suite runs the autoscaler in a real manager against a real kube-apiserver (envtest). There is no kubelet
// and no server: the tests play both. A "kubelet" loop keeps as many Ready pods as spec.replicas says, and a load
// model answers scrapes with request counters that grow at the site's load spread evenly over its ready pods
// (what kube-proxy does), in fake time. The fake clock runs 10× faster than the wall clock.
var (
	env   *testenv.Env
	clk   *clocktesting.FakeClock
	load  *loadModel
	start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
)

const (
	realTick  = 100 * time.Millisecond
	fakeTick  = time.Second
	passEvery = 100 * time.Millisecond
)

func TestMain(m *testing.M) {
	logs := io.Discard // AUTOSCALER_TEST_DEBUG=1 shows the controller's logs
	if os.Getenv("AUTOSCALER_TEST_DEBUG") != "" {
		logs = os.Stderr
	}
	ctrl.SetLogger(zap.New(zap.UseDevMode(true), zap.WriteTo(logs)))
	var err error
	env, err = testenv.Start()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	clk = clocktesting.NewFakeClock(start)
	load = newLoadModel(clk)

	mgr, err := env.NewManager()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	r := New(mgr.GetClient(), mgr.GetEventRecorderFor(ControllerName), load,
		WithClock(clk), WithScrapeInterval(passEvery), WithWindow(15*time.Second))
	if err := r.SetupWithManager(mgr); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		if err := mgr.Start(ctx); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
	}()
	go func() { // fake time: 1 s every 100 ms
		t := time.NewTicker(realTick)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				clk.Step(fakeTick)
			}
		}
	}()
	code := m.Run()
	cancel()
	if err := env.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, err)
	}
	os.Exit(code)
}

// loadModel is the fed podmetrics.Scraper: per site ("namespace/name") a total request rate, spread over the
// site's ready pods.
type loadModel struct {
	mu       sync.Mutex
	clock    *clocktesting.FakeClock
	total    map[string]float64 // site → total req/s
	ready    map[string]int     // site → ready pods (set by the kubelet loop)
	counters map[types.UID]*counter
	scrapes  map[string]int // site → scrapes served
	siteOf   map[types.UID]string
}

type counter struct {
	at    time.Time
	value float64
}

func newLoadModel(c *clocktesting.FakeClock) *loadModel {
	return &loadModel{clock: c, total: map[string]float64{}, ready: map[string]int{},
		counters: map[types.UID]*counter{}, scrapes: map[string]int{}, siteOf: map[types.UID]string{}}
}

func (l *loadModel) set(site string, rps float64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.advanceAll(site)
	l.total[site] = rps
}

func (l *loadModel) setReady(site string, n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.ready[site] != n {
		l.advanceAll(site)
		l.ready[site] = n
	}
}

// advanceAll brings every counter up to now at the current rates before a rate changes. Counters are keyed by
// pod UID; l.siteOf maps them to sites.
func (l *loadModel) advanceAll(site string) {
	now := l.clock.Now()
	for uid, c := range l.counters {
		if l.siteOf[uid] == site {
			c.value += l.perPod(site) * now.Sub(c.at).Seconds()
			c.at = now
		}
	}
}

func (l *loadModel) perPod(site string) float64 {
	if l.ready[site] == 0 {
		return 0
	}
	return l.total[site] / float64(l.ready[site])
}

func (l *loadModel) Scrape(_ context.Context, pod *corev1.Pod) (podmetrics.Sample, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	site := pod.Namespace + "/" + pod.Labels[v1alpha1.LabelSite]
	l.scrapes[site]++
	now := l.clock.Now()
	c, ok := l.counters[pod.UID]
	if !ok {
		c = &counter{at: now, value: 1000} // a server that already served some requests
		l.counters[pod.UID] = c
		l.siteOf[pod.UID] = site
	}
	c.value += l.perPod(site) * now.Sub(c.at).Seconds()
	c.at = now
	return podmetrics.Sample{Pod: pod.Name, Time: now, Requests: c.value}, nil
}

func (l *loadModel) scrapesOf(site string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.scrapes[site]
}

// kubelet keeps spec.replicas Ready pods for the site until ctx ends (pods get an IP and Ready through the
// status subresource; removed pods go away at once, as there is no kubelet to drain them).
func kubelet(ctx context.Context, t *testing.T, ns, site string) {
	c := env.Client
	n := 0
	for ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		s := &v1alpha1.StaticSite{}
		if err := c.Get(ctx, types.NamespacedName{Namespace: ns, Name: site}, s); err != nil {
			continue
		}
		want := 1
		if s.Spec.Replicas != nil {
			want = int(*s.Spec.Replicas)
		}
		pods := &corev1.PodList{}
		if err := c.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelSite: site}); err != nil {
			continue
		}
		have := len(pods.Items)
		for i := have; i < want; i++ {
			n++
			p := &corev1.Pod{}
			p.Namespace, p.Name = ns, fmt.Sprintf("%s-%d", site, n)
			p.Labels = map[string]string{v1alpha1.LabelSite: site}
			p.Spec.Containers = []corev1.Container{{Name: "server", Image: "hyperstatic/server:test"}}
			if err := c.Create(ctx, p); err != nil {
				t.Logf("kubelet: create pod: %v", err)
				continue
			}
			p.Status.Phase = corev1.PodRunning
			p.Status.PodIP = fmt.Sprintf("10.0.0.%d", n%250+1)
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
			if err := c.Status().Update(ctx, p); err != nil {
				t.Logf("kubelet: pod status: %v", err)
			}
		}
		for i := want; i < have; i++ {
			_ = c.Delete(ctx, &pods.Items[i], client.GracePeriodSeconds(0))
		}
		load.setReady(ns+"/"+site, want)
	}
}
