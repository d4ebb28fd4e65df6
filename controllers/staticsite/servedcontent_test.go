package staticsite

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
)

const mi = 1 << 20

func TestServedContent(t *testing.T) {
	got := servedContent("docs-0", &podmetrics.Content{Files: 12, Bytes: 9 * mi, MemoryBytes: 2 * mi, DiskBytes: 7 * mi,
		MemoryLimitBytes: 64 * mi, MemoryBudgetBytes: 20 * mi, FitMemoryLimitBytes: 96 * mi, EncodingsPending: 3})
	if got.Pod != "docs-0" || got.Files != 12 || got.Bytes != 9*mi || got.MemoryBytes != 2*mi || got.DiskBytes != 7*mi ||
		got.EncodingsPending != 3 || got.MemoryLimit.String() != "64Mi" || got.FitMemoryLimit.String() != "96Mi" {
		t.Errorf("servedContent = %+v (limit %s, fit %s)", got, got.MemoryLimit, got.FitMemoryLimit.String())
	}
	if noLimit := servedContent("docs-0", &podmetrics.Content{FitMemoryLimitBytes: 19 * mi}); noLimit.MemoryLimit != nil {
		t.Errorf("a server without a memory limit reports one: %s", noLimit.MemoryLimit)
	}
}

func served(disk, limit, fit int64, pending int64) *v1alpha1.ServedContent {
	s := &v1alpha1.ServedContent{Pod: "docs-0", Files: 12, Bytes: 9 * mi, MemoryBytes: 9*mi - disk, DiskBytes: disk,
		FitMemoryLimit: *resource.NewQuantity(fit, resource.BinarySI), EncodingsPending: pending}
	if limit > 0 {
		s.MemoryLimit = resource.NewQuantity(limit, resource.BinarySI)
	}
	return s
}

func TestContentInMemoryCondition(t *testing.T) {
	for _, tc := range []struct {
		name    string
		served  *v1alpha1.ServedContent
		status  metav1.ConditionStatus
		reason  string
		message []string // substrings
	}{
		{"not measured", nil, metav1.ConditionUnknown, v1alpha1.ReasonNotMeasured, []string{"no ready pod"}},
		{"all in memory", served(0, 64*mi, 40*mi, 0), metav1.ConditionTrue, v1alpha1.ReasonAllInMemory,
			[]string{"docs-0", "all 12 files (9437184 bytes) from memory"}},
		{"all in memory, still encoding", served(0, 64*mi, 40*mi, 5), metav1.ConditionTrue, v1alpha1.ReasonAllInMemory,
			[]string{"from memory", "variants of 5 files are still being made"}},
		{"the limit is too small", served(7*mi, 64*mi, 96*mi, 0), metav1.ConditionFalse, v1alpha1.ReasonPartlyOnDisk,
			[]string{"docs-0 serves 7340032 of 9437184 bytes from disk", "memory limit of 64Mi", "a memory limit of 96Mi (spec.memory)"}},
		{"large files, more memory would not help", served(7*mi, 64*mi, 40*mi, 0), metav1.ConditionFalse, v1alpha1.ReasonPartlyOnDisk,
			[]string{"7340032 of 9437184 bytes from disk", "--max-memory-file-size", "more memory would not change it"}},
		{"no limit at all", served(7*mi, 0, 40*mi, 0), metav1.ConditionFalse, v1alpha1.ReasonPartlyOnDisk,
			[]string{"more memory would not change it"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := contentInMemoryCondition(tc.served, "no ready pod runs the current spec")
			if c.Type != v1alpha1.ConditionContentInMemory || c.Status != tc.status || c.Reason != tc.reason {
				t.Fatalf("condition %+v, want %s/%s", c, tc.status, tc.reason)
			}
			for _, s := range tc.message {
				if !strings.Contains(c.Message, s) {
					t.Errorf("message %q does not say %q", c.Message, s)
				}
			}
		})
	}
}

// contentPods: only ready pods of the current spec describe the site, always in the same (name) order.
func TestContentPods(t *testing.T) {
	memory := resource.MustParse("64Mi")
	content := desired.ImageContent(v1alpha1.ContentSourceImage, "example/docs:v3", "")
	pod := func(name string, ready bool, mem string, hash string) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{sitechild.AnnotationContentHash: hash}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: sitechild.ContainerName,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(mem)}}}}}}
		if ready {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		}
		return p
	}
	st := &observation{content: content, memory: memory, pods: []corev1.Pod{
		pod("docs-c", true, "64Mi", content.RollHash),
		pod("docs-a", true, "64Mi", content.RollHash),
		pod("docs-b", false, "64Mi", content.RollHash),  // not ready
		pod("docs-0", true, "32Mi", content.RollHash),   // the old memory limit
		pod("docs-1", true, "64Mi", "an-older-content"), // the old image
	}}
	var names []string
	for _, p := range contentPods(st) {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "docs-a,docs-c" {
		t.Errorf("contentPods = %v, want docs-a,docs-c", names)
	}
}

// scriptedScraper answers per pod name: a sample or an error.
type scriptedScraper map[string]any

func (s scriptedScraper) Scrape(_ context.Context, p *corev1.Pod) (podmetrics.Sample, error) {
	switch v := s[p.Name].(type) {
	case podmetrics.Sample:
		return v, nil
	case error:
		return podmetrics.Sample{}, v
	}
	return podmetrics.Sample{}, context.DeadlineExceeded
}

func TestObserveServedContent(t *testing.T) {
	content := desired.ImageContent(v1alpha1.ContentSourceImage, "example/docs:v3", "")
	readyPod := func(name string) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name), Annotations: map[string]string{sitechild.AnnotationContentHash: content.RollHash}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: sitechild.ContainerName,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}}
	}
	newState := func(r *Reconciler, pods ...corev1.Pod) *observation {
		o := r.newObservation(newSite(v1alpha1.ContentSource{Image: "example/docs:v3"}))
		o.content, o.memory, o.pods = content, resource.MustParse("64Mi"), pods
		return o
	}
	withContent := podmetrics.Sample{CPUs: "1", Pinned: true, Content: &podmetrics.Content{Files: 1, Bytes: 10, MemoryBytes: 10, FitMemoryLimitBytes: 19 * mi}}

	t.Run("the first pod that answers", func(t *testing.T) {
		r := &Reconciler{Scraper: scriptedScraper{"docs-a": context.DeadlineExceeded, "docs-b": withContent}, ContentRefresh: 30 * time.Second}
		st := newState(r, readyPod("docs-b"), readyPod("docs-a"))
		r.observeServedContent(context.Background(), st)
		// Image content, every variant made: the reading is settled, so no periodic pass (settled_test.go).
		if st.served == nil || st.served.Pod != "docs-b" || st.requeueAfter != 0 {
			t.Fatalf("served %+v requeue %v", st.served, st.requeueAfter)
		}
		if _, ok := r.samples["uid-docs-b"]; !ok {
			t.Error("the reading's CPU set is not kept for the Pinned condition")
		}
	})
	t.Run("no pod answers", func(t *testing.T) {
		r := &Reconciler{Scraper: scriptedScraper{}, ScrapeRetry: 2 * time.Second}
		st := newState(r, readyPod("docs-a"))
		r.observeServedContent(context.Background(), st)
		if st.served != nil || !strings.Contains(st.notMeasured, "docs-a") || st.requeueAfter != 2*time.Second {
			t.Fatalf("served %+v notMeasured %q requeue %v", st.served, st.notMeasured, st.requeueAfter)
		}
	})
	t.Run("a server older than the content metrics", func(t *testing.T) {
		r := &Reconciler{Scraper: scriptedScraper{"docs-a": podmetrics.Sample{CPUs: "1"}}}
		st := newState(r, readyPod("docs-a"))
		r.observeServedContent(context.Background(), st)
		if st.served != nil || !strings.Contains(st.notMeasured, "does not report its content") || st.requeueAfter != DefaultContentRefresh {
			t.Fatalf("served %+v notMeasured %q requeue %v", st.served, st.notMeasured, st.requeueAfter)
		}
	})
	t.Run("no ready pod", func(t *testing.T) {
		r := &Reconciler{Scraper: scriptedScraper{}}
		st := newState(r)
		r.observeServedContent(context.Background(), st)
		if st.served != nil || st.notMeasured == "" || st.requeueAfter != 0 {
			t.Fatalf("served %+v notMeasured %q requeue %v: pod events trigger the next pass", st.served, st.notMeasured, st.requeueAfter)
		}
	})
}

// The summary carries the reading into status.content and ContentInMemory, never touches Ready with it, and the
// events fire on flips only.
func TestContentInMemoryStatusAndEvents(t *testing.T) {
	rec := record.NewFakeRecorder(100)
	r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Recorder: rec}
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	pass := func(s *v1alpha1.ServedContent) {
		before := site.DeepCopy()
		o := healthy()
		o.served, o.notMeasured = s, "no ready pod"
		derive(site, o)
		r.recordContentInMemory(before, site)
	}
	drain := func() []string {
		var out []string
		for {
			select {
			case e := <-rec.Events:
				out = append(out, e)
			default:
				return out
			}
		}
	}

	pass(served(7*mi, 64*mi, 96*mi, 0))
	if err := condition(site, v1alpha1.ConditionContentInMemory, metav1.ConditionFalse, v1alpha1.ReasonPartlyOnDisk); err != nil {
		t.Fatal(err)
	}
	if err := condition(site, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable); err != nil {
		t.Errorf("content on disk must not make the site unready: %v", err)
	}
	if site.Status.Content == nil || site.Status.Content.DiskBytes != 7*mi {
		t.Errorf("status.content = %+v", site.Status.Content)
	}
	ev := drain()
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Warning ContentPartlyOnDisk ") || !strings.Contains(ev[0], "7340032") || !strings.Contains(ev[0], "96Mi") {
		t.Errorf("events %q, want one ContentPartlyOnDisk warning naming the bytes on disk and the fitting limit", ev)
	}

	pass(served(7*mi, 64*mi, 96*mi, 0)) // the same again: no event
	if ev := drain(); len(ev) != 0 {
		t.Errorf("an unchanged condition recorded %q", ev)
	}

	pass(nil) // no reading: Unknown, and no old numbers left behind
	if err := condition(site, v1alpha1.ConditionContentInMemory, metav1.ConditionUnknown, v1alpha1.ReasonNotMeasured); err != nil {
		t.Error(err)
	}
	if site.Status.Content != nil {
		t.Errorf("status.content kept an old reading: %+v", site.Status.Content)
	}
	pass(served(7*mi, 64*mi, 96*mi, 0)) // read again: still on disk, which is no news
	if ev := drain(); len(ev) != 0 {
		t.Errorf("False → Unknown → False recorded %q", ev)
	}

	pass(nil) // a rollout to more memory: the old pods no longer count, the new one is not ready
	pass(served(0, 128*mi, 96*mi, 0))
	ev = drain()
	if len(ev) != 1 || !strings.HasPrefix(ev[0], "Normal ContentInMemory") {
		t.Errorf("events %q, want ContentInMemory once all of it is in memory again", ev)
	}

	// After an operator restart the last pass's condition stands in for the state known before.
	r = &Reconciler{Clock: r.Clock, Recorder: rec}
	pass(served(0, 128*mi, 96*mi, 0))
	if ev := drain(); len(ev) != 0 {
		t.Errorf("a restart recorded %q for an unchanged condition", ev)
	}
	if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionContentInMemory); c.Reason != v1alpha1.ReasonAllInMemory {
		t.Errorf("condition %+v", c)
	}
}
