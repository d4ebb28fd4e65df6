package autoscaling

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
)

// faultyScraper answers through the load model, except for the pods the test breaks: those in fail get an error at
// once, those in hang wait until their context ends (as an HTTP scrape of a pod that never answers does). It
// records which pods were scraped and the deadline each scrape had.
type faultyScraper struct {
	load *loadModel

	mu        sync.Mutex
	fail      map[string]bool
	hang      map[string]bool
	scrapes   []string    // pod names, in the order the scrapes started
	deadlines []time.Time // the context deadline of each scrape (zero: none)
}

func newFaultyScraper(load *loadModel) *faultyScraper {
	return &faultyScraper{load: load, fail: map[string]bool{}, hang: map[string]bool{}}
}

func (f *faultyScraper) Scrape(ctx context.Context, pod *corev1.Pod) (podmetrics.Sample, error) {
	f.mu.Lock()
	deadline, _ := ctx.Deadline()
	f.scrapes = append(f.scrapes, pod.Name)
	f.deadlines = append(f.deadlines, deadline)
	fail, hang := f.fail[pod.Name], f.hang[pod.Name]
	f.mu.Unlock()
	switch {
	case fail:
		return podmetrics.Sample{}, fmt.Errorf("scrape %s: connection refused", pod.Name)
	case hang:
		<-ctx.Done()
		return podmetrics.Sample{}, fmt.Errorf("scrape %s: %w", pod.Name, ctx.Err())
	}
	return f.load.Scrape(ctx, pod)
}

// started says a scrape of pod has started (it may still be hanging); unlike take, it forgets nothing.
func (f *faultyScraper) started(pod string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Contains(f.scrapes, pod)
}

// take returns and forgets what was recorded since the last take.
func (f *faultyScraper) take() (scrapes []string, deadlines []time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	scrapes, deadlines = f.scrapes, f.deadlines
	f.scrapes, f.deadlines = nil, nil
	slices.Sort(scrapes)
	return scrapes, deadlines
}

func (f *faultyScraper) set(m map[string]bool, pod string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	m[pod] = on
}

// useScraper makes the stepper's autoscaler scrape through f.
func (s *stepper) useScraper(f podmetrics.Scraper) { s.r.scraper = f }

// A pod whose scrape failed is not scraped again for 1, 2, 4, then at most maxBackoffPasses passes, and is counted
// as missing meanwhile; once a scrape succeeds, the next pass scrapes it again. The other pods are scraped on
// every pass.
func TestFailingPodIsBackedOff(t *testing.T) {
	ns := newNamespace(t, "autoscale-backoff")
	s := newStepper(t, newSite(ns, "web", 3, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))
	f := newFaultyScraper(s.load)
	s.useScraper(f)
	s.load.setRPS(siteKey(ns, "web"), 300)
	s.pass()
	s.step()
	f.take()

	f.set(f.fail, "web-02", true)
	var scrapedAt []int // the passes (from 1) that scraped web-02
	for pass := 1; pass <= 40; pass++ {
		if pass == 33 {
			f.set(f.fail, "web-02", false) // the pod recovers while backed off
		}
		s.step()
		scrapes, _ := f.take()
		if slices.Contains(scrapes, "web-02") {
			scrapedAt = append(scrapedAt, pass)
		}
		for _, healthy := range []string{"web-01", "web-03"} {
			if !slices.Contains(scrapes, healthy) {
				t.Fatalf("pass %d did not scrape %s (scraped %v)", pass, healthy, scrapes)
			}
		}
	}
	// Failures at 1, 3, 6, 11, 18, 25 and 32, each followed by 1, 2, 4, 6, 6, 6 and 6 skipped passes. It recovered
	// at 33: the next scrape, at 39, succeeds, and from then on it is scraped at every pass.
	want := []int{1, 3, 6, 11, 18, 25, 32, 39, 40}
	if maxBackoffPasses != 6 {
		t.Fatalf("maxBackoffPasses = %d; this test's numbers assume 6", maxBackoffPasses)
	}
	if !slices.Equal(scrapedAt, want) {
		t.Fatalf("web-02 scraped at passes %v, want %v", scrapedAt, want)
	}
	// While backed off, it was a ready pod without a metric: 2 of 3 pods measured.
	if a := s.site().Status.Autoscaling; a.MeasuredPods != 3 || a.CurrentReplicas != 3 {
		t.Fatalf("after recovery: status %s, want 3 measured pods of 3", statusString(a))
	}
}

// All the scrapes of one pass share one deadline; a pod that does not answer by then is backed off, and counts
// as missing while it has no rate. The load model answers at once whatever the context says, so what is measured
// does not depend on how fast the machine is: only the hung pods wait for the deadline.
func TestScrapesOfAPassShareOneDeadline(t *testing.T) {
	ns := newNamespace(t, "autoscale-deadline")
	const pods = DefaultMaxConcurrentScrapes + 4 // more than run at once: queued scrapes wait under the same deadline
	s := newStepper(t, newSite(ns, "web", pods, &v1alpha1.AutoscalingSpec{MaxReplicas: pods, TargetRPSPerPod: ptr.To[int64](100)}),
		WithScrapeTimeout(100*time.Millisecond))
	f := newFaultyScraper(s.load)
	s.useScraper(f)
	s.load.setRPS(siteKey(ns, "web"), 100*pods)
	f.set(f.hang, "web-01", true)
	f.set(f.hang, "web-02", true)

	// 0 s: every pod is scraped, under one deadline.
	s.pass()
	scrapes, deadlines := f.take()
	if len(scrapes) != pods {
		t.Fatalf("scraped %d pods, want all %d: %v", len(scrapes), pods, scrapes)
	}
	if deadlines[0].IsZero() {
		t.Fatal("scrapes ran without a deadline")
	}
	for i, d := range deadlines {
		if !d.Equal(deadlines[0]) {
			t.Fatalf("scrape %d had deadline %v, scrape 0 had %v: want one deadline for the pass", i, d, deadlines[0])
		}
	}

	// 5 s: the hung pods are backed off, not scraped; the others have rates, and the hung ones none: 100 req/s on
	// each of 18 pods, the 2 missing at 0 (ratio 1 counts as a scale-up), 0.9 is within tolerance.
	s.step()
	scrapes, _ = f.take()
	if slices.Contains(scrapes, "web-01") || slices.Contains(scrapes, "web-02") || len(scrapes) != pods-2 {
		t.Fatalf("the pass after a timeout scraped %v, want all but web-01 and web-02", scrapes)
	}
	if a := s.site().Status.Autoscaling; a.MeasuredPods != pods-2 || a.DesiredReplicas != pods {
		t.Fatalf("status %s, want %d measured pods (all but the two hung), %d desired", statusString(a), pods-2, pods)
	}

	// 10 s: one pass skipped; they are tried again.
	s.step()
	if scrapes, _ = f.take(); len(scrapes) != pods {
		t.Fatalf("the second pass after a timeout scraped %v, want all %d pods again", scrapes, pods)
	}
}

// When no pod has a rate because the scrapes fail, ScalingActive says why: it quotes the scrape error (for a pod
// serving a body over podmetrics' limits, the error names the pod and the limit).
func TestScrapeErrorIsReportedWhenNoPodHasARate(t *testing.T) {
	ns := newNamespace(t, "autoscale-scrape-error")
	s := newStepper(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))
	f := newFaultyScraper(s.load)
	s.useScraper(f)
	f.set(f.fail, "web-01", true)
	s.pass()
	site := s.site()
	assertCondition(t, site, v1alpha1.ConditionScalingActive, metav1.ConditionFalse, v1alpha1.ReasonFailedGetRPS)
	c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionScalingActive)
	if want := "last scrape error: scrape web-01: connection refused"; !strings.Contains(c.Message, want) {
		t.Fatalf("ScalingActive message %q does not contain %q", c.Message, want)
	}
	// Backed off, the pod is not scraped at 5 s, and the condition still says why.
	f.take()
	s.step()
	c = meta.FindStatusCondition(s.site().Status.Conditions, v1alpha1.ConditionScalingActive)
	if scrapes, _ := f.take(); len(scrapes) != 0 || !strings.Contains(c.Message, "connection refused") {
		t.Fatalf("at 5 s: scrapes %v, ScalingActive %q", scrapes, c.Message)
	}
}
