package benchmark

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The bounds on the results' way from the k6 pods to the results ConfigMap: the pod log read, a cut result block,
// and the ConfigMap's 1 MiB limit.

// A pod whose log holds no whole result block (k6's warnings came after it, or the log was rotated or cut at the
// read limit) fails the run with ResultsTruncated, naming the pod, instead of publishing fewer steps as if whole.
func TestTruncatedResultsFailTheRun(t *testing.T) {
	ns := namespace(t)
	testenv.Must(t, k8s.Create(ctx, urlBenchmark(ns, "cut")))
	job := getJob(t, ns, "cut")
	k6Pod(t, ns, "cut", 0, recorded(t, "pod0.log"))
	whole := recorded(t, "pod1.log")
	k6Pod(t, ns, "cut", 1, whole[:bytes.LastIndex(whole, []byte(benchresults.DonePrefix))]) // the HSDONE line is lost
	finishJob(t, job, true)

	b := waitBenchmark(t, ns, "cut", "failed", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkFailed, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResultsTruncated)
	})
	c := b.Status.Conditions
	if msg := fmt.Sprint(c); !strings.Contains(msg, "cut-1-x") || !strings.Contains(msg, "results missing or truncated") {
		t.Fatalf("the message must name the pod and say what is wrong: %v", c)
	}
	if b.Status.Summary == nil || b.Status.Summary.Requests == 0 {
		t.Fatalf("pod 0's results are still published: %+v", b.Status)
	}
}

// synthetic is a long sweep (steps of 30 s, every pod reporting per-second counts and a wide histogram) with the
// server sampled on `servers` pods twice per step: far beyond what the API allows (200 steps), to show the
// results ConfigMap stays under its limit whatever the sweep.
func synthetic(steps, pods, servers int) (benchresults.Results, string) {
	in := benchresults.Input{Workload: "sweep", Target: "http://site.ns.svc:80", KeepAlive: true, Parallelism: pods,
		Pods: map[int]benchresults.PodLog{}, Thresholds: benchresults.Thresholds{MaxErrorRate: -1}}
	var samples []benchresults.ServerSample
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMilli()
	for i := 0; i < steps; i++ {
		in.Steps = append(in.Steps, benchresults.PlanStep{Index: i, VUs: int32(10 * (i + 1)), DurationSeconds: 30})
		start := t0 + int64(i)*35_000
		for s := 0; s < servers; s++ {
			for _, at := range []int64{start + 2500, start + 29_500} {
				samples = append(samples, benchresults.ServerSample{Pod: fmt.Sprintf("site-7d9f8c6b5d-%05d", s), UnixMs: at,
					Requests: float64(at - t0), CPUSeconds: float64(at-t0) / 1e4, RSSBytes: 12 << 20})
			}
		}
		for p := 0; p < pods; p++ {
			st := benchresults.PodStep{Pod: p, Step: i, LoadStartMs: start, LoadEndMs: start + 30_000, Requests: 300_000,
				Errors: 3000, Hist: benchresults.Histogram{}, Error: "k6: exit status 99"}
			for b := 0; b < 120; b++ {
				st.Hist[b] = int64(2500 + b)
			}
			for sec := int64(0); sec <= 30; sec++ {
				st.ReqCounts = append(st.ReqCounts, benchresults.CountSample{UnixMs: start + 1000*sec, Count: 10_000 * sec})
			}
			log := in.Pods[p]
			log.Steps = append(log.Steps, st)
			log.Done = &benchresults.Done{Pod: p, Steps: steps, Results: steps}
			in.Pods[p] = log
		}
	}
	in.Server = samples
	raw, _ := json.Marshal(samples)
	return benchresults.Merge(in), string(raw)
}

// A 1,000-step sweep renders to more than the API server accepts in a ConfigMap; Render keeps it under the limit,
// says what it left out, and the API server accepts the result.
func TestLongSweepFitsTheResultsConfigMap(t *testing.T) {
	ns := namespace(t)
	res, samples := synthetic(1000, 4, 10)
	title := "Benchmark " + ns + "/long: " + res.Target

	whole, err := benchresults.Render(res, title, samples, 1<<40)
	testenv.Must(t, err)
	err = k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "unbounded"}, Data: whole.Data})
	if !apierrors.IsInvalid(err) && !apierrors.IsRequestEntityTooLargeError(err) {
		t.Fatalf("the unbounded rendering (%d keys) must be refused by the API server, got %v", len(whole.Data), err)
	}

	fit, err := benchresults.Render(res, title, samples, benchresults.ConfigMapBudget)
	testenv.Must(t, err)
	size := 0
	for k, v := range fit.Data {
		size += len(k) + len(v)
	}
	if size > benchresults.ConfigMapBudget || len(fit.Dropped) == 0 {
		t.Fatalf("%d bytes (budget %d), dropped %v", size, benchresults.ConfigMapBudget, fit.Dropped)
	}
	testenv.Must(t, k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "long-results"}, Data: fit.Data}))
	var back benchresults.Results
	testenv.Must(t, json.Unmarshal([]byte(fit.Data[benchresults.ResultsJSONKey]), &back))
	if len(back.Steps) != 1000 || back.Requests != res.Requests {
		t.Fatalf("results.json: %d steps, %d requests; dropped %v", len(back.Steps), back.Requests, fit.Dropped)
	}
	t.Logf("1000 steps, 4 pods, 10 server pods: %d bytes unbounded, %d bytes kept; dropped %v", whole.Size(), size, fit.Dropped)
}

func TestPodLogReadIsBounded(t *testing.T) {
	o := podLogOptions()
	if o.Container != ContainerName || o.TailLines == nil || *o.TailLines != maxLogLines || o.LimitBytes == nil || *o.LimitBytes != maxLogBytes {
		t.Fatalf("pod log options %+v", o)
	}
}

// What the results ConfigMap left out is in status.dropped and said in the Complete message.
func TestDroppedIsReported(t *testing.T) {
	b := testBenchmark()
	o := observation{now: derivedAt, plan: testPlan, job: runningJob(), collected: results(3000, 0), dropped: []string{"chart.svg (1123 KiB)"}}
	s := deriveStatus(b, &o)
	c := meta.FindStatusCondition(s.Conditions, v1alpha1.BenchmarkComplete)
	if len(s.Dropped) != 1 || c == nil || !strings.Contains(c.Message, "left out 1 item(s) to stay under 1 MiB (status.dropped)") {
		t.Fatalf("dropped %v, Complete %+v", s.Dropped, c)
	}
}

// hugeBlock is a well-formed result block of one step whose per-second counts make it about size bytes: what a k6
// image the tenant chose (spec.image) may print.
func hugeBlock(t *testing.T, pod, size int) []byte {
	t.Helper()
	step := benchresults.PodStep{Pod: pod, Requests: 1}
	for n := 0; n*16 < size; n++ {
		step.ReqCounts = append(step.ReqCounts, benchresults.CountSample{UnixMs: 1, Count: int64(n % 10)})
	}
	begin, err := benchresults.FormatBegin(benchresults.Begin{Pod: pod, Steps: 1})
	testenv.Must(t, err)
	result, err := benchresults.FormatResult(step)
	testenv.Must(t, err)
	done, err := benchresults.FormatDone(benchresults.Done{Pod: pod, Steps: 1, Results: 1})
	testenv.Must(t, err)
	return []byte(begin + "\n" + result + "\n" + done + "\n")
}

// Issue 24, item 3: the pods' result blocks together are bounded (ResultBytes): a run whose pods print more
// fails with ResultsTooLarge, naming the pod where the budget ran out, and the pods past it are never parsed, so
// the operator's memory stays bounded whatever the pods print. (The suite's budget is small; the operator's default
// is DefaultResultBytes, TestDefaultResultBudget.)
func TestResultsOverTheBudgetFailTheRun(t *testing.T) {
	ns := namespace(t)
	testenv.Must(t, k8s.Create(ctx, urlBenchmark(ns, "flood")))
	job := getJob(t, ns, "flood")
	for i := 0; i < 2; i++ {
		block := hugeBlock(t, i, suiteResultBytes*3/4)
		if len(block) > suiteResultBytes || len(block) < suiteResultBytes/2 {
			t.Fatalf("block of %d bytes", len(block))
		}
		k6Pod(t, ns, "flood", i, block)
	}
	finishJob(t, job, true)
	b := waitBenchmark(t, ns, "flood", "failed", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkFailed, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResultsTooLarge)
	})
	if msg := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.BenchmarkFailed).Message; !strings.Contains(msg, "budget of 64 KiB at pod flood-1-x") {
		t.Fatalf("message %q", msg)
	}
}

func TestDefaultResultBudget(t *testing.T) {
	if got := sizeText((&Reconciler{}).tunables().resultBytes); got != "8 MiB" {
		t.Errorf("default budget %s, docs/security.md says 8 MiB", got)
	}
}
