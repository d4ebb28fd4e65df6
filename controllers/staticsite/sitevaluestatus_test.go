package staticsite

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// SiteValueApplied from what the steps saw: the first case that applies wins.
func TestSiteValueVerdict(t *testing.T) {
	rendered := sitevalue.Rendered{Revision: "sha256:00000000000000aa"}
	for _, c := range []struct {
		name    string
		sv      siteValueState
		status  metav1.ConditionStatus
		reason  string
		message string
		stall   bool
		pending bool
	}{
		{"served", siteValueState{readyPods: 2, servedBy: 2}, metav1.ConditionTrue, v1alpha1.ReasonSiteValueServed, "all 2 ready pods serve site value sha256:00000000000000aa", false, false},
		{"no ready pod", siteValueState{}, metav1.ConditionUnknown, v1alpha1.ReasonNoReadyPods, "no ready pod", false, false},
		{"pending", siteValueState{readyPods: 2, servedBy: 1, pending: []string{"b"}}, metav1.ConditionUnknown, v1alpha1.ReasonSiteValuePending, "1 of 2 ready pods serve site value sha256:00000000000000aa; waiting for b", false, true},
		{"refused wins over pending", siteValueState{readyPods: 2, refused: []string{"pod a serves sha256:1: bad"}, pending: []string{"b"}},
			metav1.ConditionFalse, v1alpha1.ReasonSiteValueRefused, "refused, the previous one keeps serving: pod a serves sha256:1: bad", true, false},
		{"unreadable", siteValueState{readyPods: 1, unreadable: []string{"a: connection refused"}}, metav1.ConditionUnknown, v1alpha1.ReasonMetricsUnavailable, "a: connection refused", false, false},
		{"old server", siteValueState{readyPods: 1, notReported: []string{"a"}}, metav1.ConditionUnknown, v1alpha1.ReasonSiteValueNotReported, "the server of a does not report", false, false},
		{"not applied wins", siteValueState{notApplied: &problem{Reason: v1alpha1.ReasonSiteValueConfigMapNotOwned, Message: "ConfigMap ns/x.site-value exists"}, readyPods: 1, refused: []string{"x"}},
			metav1.ConditionFalse, v1alpha1.ReasonSiteValueConfigMapNotOwned, "ConfigMap ns/x.site-value exists", false, false},
		{"pods that may not be annotated are said", siteValueState{readyPods: 1, pending: []string{"a"}, unannounced: []string{"a: forbidden"}},
			metav1.ConditionUnknown, v1alpha1.ReasonSiteValuePending, "pods not annotated, they refresh at the kubelet's pace: a: forbidden", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.sv.rendered = rendered
			v := siteValueVerdictOf(&c.sv)
			if v.condition.Type != v1alpha1.ConditionSiteValueApplied || v.condition.Status != c.status || v.condition.Reason != c.reason ||
				!strings.Contains(v.condition.Message, c.message) {
				t.Errorf("condition %+v, want %s %s containing %q", v.condition, c.status, c.reason, c.message)
			}
			if (v.stall != nil) != c.stall || (v.pending != "") != c.pending {
				t.Errorf("stall %v pending %q, want stall %v pending %v", v.stall, v.pending, c.stall, c.pending)
			}
		})
	}
}

// A refused site value makes the server's load fail (hyperstatic_content_load_failed) while the content loads
// fine: it is said in SiteValueApplied, not as a content failure; a content failure still is one.
func TestRefusedSiteValueIsNotAContentFailure(t *testing.T) {
	st := (&Reconciler{}).newObservation(newSite(v1alpha1.ContentSource{Image: "x"}))
	observeReloadFailure(st, "a", podmetrics.Sample{LoadFailed: true, SiteValueLoadFailures: 1, LoadError: "site value: notFoundPage /missing.html is not in the content"})
	if st.contentProblem != nil {
		t.Fatalf("a refused site value reported as content: %+v", st.contentProblem)
	}
	observeReloadFailure(st, "a", podmetrics.Sample{LoadFailed: true, LoadError: "_redirects:2: status 418 is not supported"})
	if st.contentProblem == nil || st.contentProblem.Reason != v1alpha1.ReasonContentLoadFailed {
		t.Fatalf("a content failure not reported: %+v", st.contentProblem)
	}
}

// A site stored before the CRD refused site-rule flags in extraArgs: the site value is not applied, the Deployment
// is left alone, and the status names the argument.
func TestSiteRuleFlagInStoredExtraArgs(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Spec.Server.ExtraArgs = []string{"--access-log", "--default-cache-control", "public"}
	r := &Reconciler{}
	st := r.newObservation(site)
	if err := r.reconcileSiteValue(context.Background(), st); err != nil {
		t.Fatal(err)
	}
	if !st.skipDeployment || st.rejected == nil || st.rejected.Reason != v1alpha1.ReasonSiteRuleFlagInExtraArgs ||
		!strings.Contains(st.rejected.Message, `spec.server.extraArgs[1] "--default-cache-control"`) {
		t.Fatalf("skip %v, rejected %+v", st.skipDeployment, st.rejected)
	}
	if c := siteValueVerdictOf(st.siteValue).condition; c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonSiteRuleFlagInExtraArgs {
		t.Fatalf("condition %+v", c)
	}
}

// A pod's reading of the rendered revision, or of no site value at all, is kept for the server's life: later passes
// do not scrape it. A pod still on an older revision is read in every pass, and the pass asks to run again soon.
func TestSiteValueReadingsKept(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	rendered := sitevalue.Render(site)
	pod := func(restarts int32) corev1.Pod {
		return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "docs-a", UID: types.UID("uid-docs-a")},
			Status: corev1.PodStatus{Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: sitechild.ContainerName, RestartCount: restarts}}}}
	}
	for _, tc := range []struct {
		name          string
		revision      string
		restartsLater int32
		wantScrapes   int
		wantRetry     bool
		wantServedBy  int32
	}{
		{"serves the rendered value", rendered.Revision, 0, 1, false, 1},
		{"serves the rendered value, then restarts", rendered.Revision, 1, 2, false, 1},
		{"reports no site value", "", 0, 1, false, 0},
		{"serves an older value", "sha256:0000000000000000", 0, 2, true, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc := &countingScraper{sample: podmetrics.Sample{SiteValueRevision: tc.revision}}
			r := &Reconciler{Scraper: sc, SiteValueRetry: 3 * time.Second}
			for pass, restarts := range []int32{0, tc.restartsLater} {
				st := r.newObservation(site)
				st.siteValue = &siteValueState{rendered: rendered}
				p := pod(restarts)
				r.observeSiteValue(context.Background(), st, &p)
				if st.siteValue.servedBy != tc.wantServedBy || st.siteValue.readyPods != 1 {
					t.Errorf("pass %d: served by %d of %d, want %d of 1", pass, st.siteValue.servedBy, st.siteValue.readyPods, tc.wantServedBy)
				}
				if got := len(st.siteValue.pending) > 0; got != tc.wantRetry {
					t.Errorf("pass %d: pending %v, want %v", pass, st.siteValue.pending, tc.wantRetry)
				}
			}
			if sc.calls != tc.wantScrapes {
				t.Errorf("%d scrapes over two passes, want %d", sc.calls, tc.wantScrapes)
			}
		})
	}
}
