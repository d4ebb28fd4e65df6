package autoscaling

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The autoscaler as the operator runs it: in a manager, woken by its watch and by RequeueAfter, reading the site
// and pods from the manager's cache, rescaling through /scale, recording events through the manager's broadcaster.
// The clock is the real one (nothing steps it) and the kubelet runs concurrently, so this test asserts only
// outcomes no timing can change; timing is asserted step by step (timing_test.go).
func TestAutoscalerInManager(t *testing.T) {
	ns := newNamespace(t, "autoscale-manager")
	load := newLoadModel(clock.RealClock{})
	// A long window next to a short interval: a pass delayed by a loaded machine still finds an earlier sample.
	startAutoscaler(t, load, WithScrapeInterval(200*time.Millisecond), WithWindow(10*time.Second))

	// A site without autoscaling, under heavy load, next to the autoscaled one.
	load.setRPS(siteKey(ns, "manual"), 10000)
	manual := newSite(ns, "manual", 2, nil)
	createSite(t, manual)

	// 340 req/s from the start against 100 per pod. The first rate is 340 on one pod: ceil(3.4) = 4, within the
	// default scale-up policy (max(1+4, 2×1) = 5). Spread over 4 pods, 85 each, ratio 0.85: ceil(3.4) = 4 holds.
	// Rates measured while pods start are never higher than that (see fakeKubelet), so nothing overshoots, and the
	// default 300 s scale-down window keeps anything from scaling down while the test runs.
	load.setRPS(siteKey(ns, "web"), 340)
	createSite(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))

	ctx, cancel := context.WithCancel(context.Background())
	kubelets := []<-chan struct{}{
		newFakeKubelet(env.Client, load, ns, "manual").run(ctx, t.Logf),
		newFakeKubelet(env.Client, load, ns, "web").run(ctx, t.Logf),
	}
	t.Cleanup(func() { // before the sites go (cleanups run last first)
		cancel()
		for _, done := range kubelets {
			<-done
		}
	})

	testenv.Eventually(t, "web at 4 replicas, measured and reported", func() error {
		s := getSite(t, ns, "web")
		a := s.Status.Autoscaling
		want := v1alpha1.AutoscalingStatus{CurrentRPS: 340, CurrentAverageRPS: 85, TargetRPSPerPod: 100, TargetSource: perPod100.source, TargetMessage: perPod100.message, MeasuredPods: 4,
			CurrentReplicas: 4, DesiredReplicas: 4}
		switch {
		case replicasOf(s) != 4:
			return fmt.Errorf("replicas %d", replicasOf(s))
		case a == nil || a.LastScaleTime == nil:
			return fmt.Errorf("status.autoscaling %s, no lastScaleTime", statusString(a))
		case withoutTime(*a) != want:
			return fmt.Errorf("status.autoscaling %s, want %s", statusString(a), statusString(&want))
		}
		if msg := conditionError(s, v1alpha1.ConditionScalingActive, metav1.ConditionTrue, v1alpha1.ReasonValidMetricFound); msg != "" {
			return fmt.Errorf("%s", msg)
		}
		if msg := conditionError(s, v1alpha1.ConditionAbleToScale, metav1.ConditionTrue, v1alpha1.ReasonReadyForNewScale); msg != "" {
			return fmt.Errorf("%s", msg)
		}
		return nil
	})
	const want = "Rescaled 1 → 4: requests per second per pod above target; 340 req/s per pod over 1 measured pods" +
		" (total 340 req/s), target 100"
	testenv.Eventually(t, "one Rescaled event, 1 → 4", func() error {
		msgs := rescaleEvents(t, ns, "web")
		if len(msgs) != 1 || msgs[0] != want {
			return fmt.Errorf("Rescaled events %q, want [%q]", msgs, want)
		}
		return nil
	})

	// The site without autoscaling: its creation went through the same watch and queue, and it was never
	// written or scraped.
	s := getSite(t, ns, "manual")
	switch {
	case replicasOf(s) != 2:
		t.Fatalf("manual site's replicas changed to %d", replicasOf(s))
	case s.ResourceVersion != manual.ResourceVersion:
		t.Fatalf("manual site written: %+v", s.Status)
	case load.scrapesOf(siteKey(ns, "manual")) != 0:
		t.Fatalf("manual site's pods scraped %d times", load.scrapesOf(siteKey(ns, "manual")))
	}
	if msgs := rescaleEvents(t, ns, "manual"); len(msgs) != 0 {
		t.Fatalf("manual site rescaled: %q", msgs)
	}
}

// A site whose pass hangs (its pods' scrapes never answer, and the scrape deadline is an hour) does not hold up the
// decisions for another site: the controller runs more than one reconcile at a time. With one worker, the hung
// pass would keep web's second pass, its first with a rate, from ever running.
func TestSlowSiteDoesNotHoldOthers(t *testing.T) {
	ns := newNamespace(t, "autoscale-slow")
	load := newLoadModel(clock.RealClock{})
	scraper := newFaultyScraper(load)
	for _, pod := range []string{"slow-01", "slow-02"} {
		scraper.set(scraper.hang, pod, true)
	}
	startAutoscaler(t, scraper, WithScrapeInterval(200*time.Millisecond), WithWindow(10*time.Second),
		WithScrapeTimeout(time.Hour))

	ctx, cancel := context.WithCancel(context.Background())
	var kubelets []<-chan struct{}
	t.Cleanup(func() {
		cancel()
		for _, done := range kubelets {
			<-done
		}
	})

	load.setRPS(siteKey(ns, "slow"), 1000)
	createSite(t, newSite(ns, "slow", 2, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))
	kubelets = append(kubelets, newFakeKubelet(env.Client, load, ns, "slow").run(ctx, t.Logf))
	// web comes only once a pass of slow hangs, so a single worker could never pick web up.
	testenv.Eventually(t, "a pass of slow hanging on its pods", func() error {
		if !scraper.started("slow-01") {
			return fmt.Errorf("slow-01 not scraped yet")
		}
		return nil
	})

	// As in TestAutoscalerInManager: every partial measurement gives at most 4.
	load.setRPS(siteKey(ns, "web"), 340)
	createSite(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))
	kubelets = append(kubelets, newFakeKubelet(env.Client, load, ns, "web").run(ctx, t.Logf))

	testenv.Eventually(t, "web rescaled to 4 while slow's pass hangs", func() error {
		if r := replicasOf(getSite(t, ns, "web")); r != 4 {
			return fmt.Errorf("web at %d replicas", r)
		}
		return nil
	})
	if r := replicasOf(getSite(t, ns, "slow")); r != 2 {
		t.Fatalf("slow has %d replicas, want its 2: its pass never finished", r)
	}
}

// startAutoscaler runs an autoscaler in its own manager until the test ends.
func startAutoscaler(t *testing.T, scraper podmetrics.Scraper, opts ...Option) {
	t.Helper()
	mgr, err := env.NewManager()
	if err != nil {
		t.Fatalf("manager: %v", err)
	}
	r := New(mgr.GetClient(), mgr.GetEventRecorderFor(ControllerName), scraper, opts...)
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatalf("setup: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-stopped; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
}

func rescaleEvents(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &corev1.EventList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list events: %v", err)
	}
	var msgs []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == v1alpha1.EventReasonRescaled {
			msgs = append(msgs, e.Message)
		}
	}
	return msgs
}

func withoutTime(a v1alpha1.AutoscalingStatus) v1alpha1.AutoscalingStatus {
	a.LastScaleTime = nil
	return a
}
