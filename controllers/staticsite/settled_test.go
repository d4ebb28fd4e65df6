package staticsite

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
)

// countingScraper answers every pod with one sample and counts the requests.
type countingScraper struct {
	sample podmetrics.Sample
	calls  int
}

func (c *countingScraper) Scrape(context.Context, *corev1.Pod) (podmetrics.Sample, error) {
	c.calls++
	return c.sample, nil
}

// A settled reading is taken once per server: later passes neither scrape the pod nor ask for a periodic pass.
// Anything that can still move the reading (live-reloaded content, variants being made, a refused load, a
// restarted server) keeps the periodic re-read.
func TestSettledContentReading(t *testing.T) {
	image := desired.ImageContent(v1alpha1.ContentSourceImage, "example/docs:v3", "")
	configMaps := desired.Content{Source: v1alpha1.ContentSourceConfigMaps, Revision: "pages@1"}
	done := &podmetrics.Content{Files: 1, Bytes: 10, MemoryBytes: 10, FitMemoryLimitBytes: 19 * mi}
	encoding := &podmetrics.Content{Files: 1, Bytes: 10, MemoryBytes: 10, FitMemoryLimitBytes: 19 * mi, EncodingsPending: 1}
	pod := func(c desired.Content, restarts int32) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "docs-a", UID: types.UID("uid-docs-a"), Annotations: map[string]string{sitechild.AnnotationContentHash: c.RollHash}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: sitechild.ContainerName,
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}}}}},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: sitechild.ContainerName, RestartCount: restarts}}}}
	}
	for _, tc := range []struct {
		name           string
		content        desired.Content
		sample         podmetrics.Sample
		restartsLater  int32 // the server container's restart count in the second pass
		wantScrapes    int   // over two passes
		wantPeriodic   bool  // whether each pass asks for a pass after ContentRefresh
		wantServedFrom string
	}{
		{"image, every variant made", image, podmetrics.Sample{CPUs: "1", Content: done}, 0, 1, false, "docs-a"},
		{"image, variants still being made", image, podmetrics.Sample{CPUs: "1", Content: encoding}, 0, 2, true, "docs-a"},
		{"image, the server restarted", image, podmetrics.Sample{CPUs: "1", Content: done}, 1, 2, false, "docs-a"},
		{"image, a refused load", image, podmetrics.Sample{CPUs: "1", Content: done, LoadFailed: true, LoadError: "bad"}, 0, 2, true, "docs-a"},
		{"configMaps reload live", configMaps, podmetrics.Sample{CPUs: "1", Content: done}, 0, 2, true, "docs-a"},
		{"an old server without content metrics", image, podmetrics.Sample{CPUs: "1"}, 0, 2, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &countingScraper{sample: tc.sample}
			r := &Reconciler{Scraper: sc, ContentRefresh: 30 * time.Second}
			for pass, restarts := range []int32{0, tc.restartsLater} {
				st := r.newObservation(newSite(v1alpha1.ContentSource{Image: "example/docs:v3"}))
				st.content, st.memory, st.pods = tc.content, resource.MustParse("64Mi"), []corev1.Pod{pod(tc.content, restarts)}
				r.observeServedContent(context.Background(), st)
				if got := st.requeueAfter == 30*time.Second; got != tc.wantPeriodic {
					t.Errorf("pass %d: requeue after %v, want periodic=%v", pass, st.requeueAfter, tc.wantPeriodic)
				}
				if from := ""; st.served != nil {
					from = st.served.Pod
					if from != tc.wantServedFrom {
						t.Errorf("pass %d: served from %q, want %q", pass, from, tc.wantServedFrom)
					}
				} else if tc.wantServedFrom != "" {
					t.Errorf("pass %d: no reading (%s)", pass, st.notMeasured)
				}
			}
			if sc.calls != tc.wantScrapes {
				t.Errorf("%d scrapes over two passes, want %d", sc.calls, tc.wantScrapes)
			}
		})
	}
}
