package benchmark

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func TestDeriveTargetChange(t *testing.T) {
	at := func(gen int64, ready int32) *v1alpha1.BenchmarkTargetState {
		return &v1alpha1.BenchmarkTargetState{StaticSite: "site", Generation: gen, Replicas: 2, ReadyReplicas: ready}
	}
	changed := withCondition(v1alpha1.BenchmarkTargetChanged, metav1.ConditionTrue, v1alpha1.BenchmarkReasonTargetReadyPodsChanged, derivedAt)
	changed.TargetAtStart = at(4, 2)
	for _, tc := range []struct {
		name    string
		prev    v1alpha1.BenchmarkStatus
		o       observation
		start   *v1alpha1.BenchmarkTargetState // status.targetAtStart after the pass
		want    want
		message string
	}{
		{name: "URL target: nothing recorded", o: observation{job: runningJob()}},
		{name: "no Job yet: nothing recorded", o: observation{site: at(4, 2)}},
		{name: "recorded when the Job is first seen", o: observation{job: runningJob(), site: at(4, 2)}, start: at(4, 2),
			want: want{"False", v1alpha1.BenchmarkReasonTargetUnchanged}},
		{name: "unchanged", prev: v1alpha1.BenchmarkStatus{TargetAtStart: at(4, 2)}, o: observation{job: runningJob(), site: at(4, 2)},
			start: at(4, 2), want: want{"False", v1alpha1.BenchmarkReasonTargetUnchanged}},
		{name: "spec changed", prev: v1alpha1.BenchmarkStatus{TargetAtStart: at(4, 2)}, o: observation{job: runningJob(), site: at(5, 2)},
			start: at(4, 2), want: want{"True", v1alpha1.BenchmarkReasonTargetSpecChanged}, message: "from generation 4 (replicas 2) to 5"},
		{name: "a ready pod lost", prev: v1alpha1.BenchmarkStatus{TargetAtStart: at(4, 2)}, o: observation{job: runningJob(), site: at(4, 1)},
			start: at(4, 2), want: want{"True", v1alpha1.BenchmarkReasonTargetReadyPodsChanged}, message: "from 2 to 1 ready pod(s)"},
		{name: "deleted", prev: v1alpha1.BenchmarkStatus{TargetAtStart: at(4, 2)}, o: observation{job: runningJob(), siteGone: true},
			start: at(4, 2), want: want{"True", v1alpha1.BenchmarkReasonTargetDeleted}},
		{name: "sticky once True, even back as it was", prev: changed, o: observation{job: runningJob(), site: at(4, 2)},
			start: at(4, 2), want: want{"True", v1alpha1.BenchmarkReasonTargetReadyPodsChanged}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBenchmark()
			b.Status = tc.prev
			tc.o.now, tc.o.plan = derivedAt, testPlan
			s := deriveStatus(b, &tc.o)
			if (s.TargetAtStart == nil) != (tc.start == nil) || (tc.start != nil && *s.TargetAtStart != *tc.start) {
				t.Errorf("targetAtStart %+v, want %+v", s.TargetAtStart, tc.start)
			}
			c := meta.FindStatusCondition(s.Conditions, v1alpha1.BenchmarkTargetChanged)
			switch {
			case tc.want.status == "" && c != nil:
				t.Errorf("TargetChanged %s/%s, want absent", c.Status, c.Reason)
			case tc.want.status == "":
			case c == nil || c.Status != tc.want.status || c.Reason != tc.want.reason:
				t.Errorf("TargetChanged %+v, want %s/%s", c, tc.want.status, tc.want.reason)
			case !strings.Contains(c.Message, tc.message):
				t.Errorf("message %q, want it to contain %q", c.Message, tc.message)
			}
		})
	}
}

// targetSite creates the StaticSite object itself (staticSite creates only what its controller would: the Service
// and a ready pod), with its status as its controller would write it.
func targetSite(t *testing.T, ns string, replicas int32) *v1alpha1.StaticSite {
	t.Helper()
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site"},
		Spec: v1alpha1.StaticSiteSpec{Replicas: ptr.To(replicas),
			Content: v1alpha1.ContentSource{Image: "example.com/site:1"}}}
	testenv.Must(t, k8s.Create(ctx, site))
	site.Status.Replicas, site.Status.ReadyReplicas = replicas, replicas
	testenv.Must(t, k8s.Status().Update(ctx, site))
	return site
}

// A run records its target StaticSite when the Job is created; scaling the site mid-run sets TargetChanged (with
// an event), and the condition stays True after the run completed.
func TestTargetChangedMidRun(t *testing.T) {
	ns := namespace(t)
	staticSite(t, ns)
	site := targetSite(t, ns, 1)
	testenv.Must(t, k8s.Create(ctx, sweepBenchmark(ns, "moving")))
	b := waitBenchmark(t, ns, "moving", "running, target recorded", func(b *v1alpha1.Benchmark) error {
		if b.Status.TargetAtStart == nil {
			return fmt.Errorf("no targetAtStart: %s", describe(b))
		}
		return condition(b, v1alpha1.BenchmarkTargetChanged, metav1.ConditionFalse, v1alpha1.BenchmarkReasonTargetUnchanged)
	})
	if got := *b.Status.TargetAtStart; got.StaticSite != "site" || got.Generation != site.Generation || got.Replicas != 1 || got.ReadyReplicas != 1 {
		t.Fatalf("targetAtStart %+v, site generation %d", got, site.Generation)
	}

	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(site), site))
	site.Spec.Replicas = ptr.To(int32(3))
	testenv.Must(t, k8s.Update(ctx, site))
	waitBenchmark(t, ns, "moving", "target changed", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkTargetChanged, metav1.ConditionTrue, v1alpha1.BenchmarkReasonTargetSpecChanged)
	})
	waitEvents(t, ns, "moving", "Warning "+v1alpha1.BenchmarkReasonTargetSpecChanged)

	// The run still completes, and the condition stays: its numbers mix two configurations.
	k6Pod(t, ns, "moving", 0, recorded(t, "pod0.log"))
	k6Pod(t, ns, "moving", 1, recorded(t, "pod1.log"))
	finishJob(t, getJob(t, ns, "moving"), true)
	b = waitBenchmark(t, ns, "moving", "complete", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkComplete, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResultsPublished)
	})
	testenv.Must(t, condition(b, v1alpha1.BenchmarkTargetChanged, metav1.ConditionTrue, v1alpha1.BenchmarkReasonTargetSpecChanged))
}

// A StaticSite's change wakes the Benchmarks that load it and are still running, and no other.
func TestStaticSiteChangeWakesItsBenchmarks(t *testing.T) {
	ns := namespace(t)
	for _, name := range []string{"loads-it", "finished"} {
		b := sweepBenchmark(ns, name)
		b.Spec.Target.StaticSite = "absent" // never resolves: the controller leaves these Pending
		testenv.Must(t, k8s.Create(ctx, b))
	}
	testenv.Must(t, k8s.Create(ctx, urlBenchmark(ns, "elsewhere")))
	// "finished" has its outcome recorded (as if it had given up on its target).
	testenv.Eventually(t, "an outcome for finished", func() error {
		b := &v1alpha1.Benchmark{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "finished"}, b); err != nil {
			return err
		}
		meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: v1alpha1.BenchmarkFailed, Status: metav1.ConditionTrue,
			Reason: v1alpha1.BenchmarkReasonTargetNotResolved, Message: "test"})
		return k8s.Status().Update(ctx, b)
	})

	r := &Reconciler{Client: k8s}
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "absent"}}
	testenv.Eventually(t, "the running Benchmark only", func() error {
		got := r.benchmarksTargeting(ctx, site)
		if len(got) != 1 || got[0].Name != "loads-it" {
			return fmt.Errorf("%v", got)
		}
		return nil
	})
}
