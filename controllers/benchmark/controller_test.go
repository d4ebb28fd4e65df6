package benchmark

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

var ctx = context.Background()

func sweepBenchmark(ns, name string) *v1alpha1.Benchmark {
	return &v1alpha1.Benchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.BenchmarkSpec{
			Target:      v1alpha1.BenchmarkTarget{StaticSite: "site"},
			Paths:       &v1alpha1.BenchmarkPaths{AllFiles: true},
			Parallelism: 2,
			Workload: v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{From: 2, To: 6, Step: 2,
				StepDuration: metav1.Duration{Duration: 5 * time.Second}}},
			Thresholds: &v1alpha1.BenchmarkThresholds{P99: &metav1.Duration{Duration: 100 * time.Millisecond}, MaxErrorRate: "1%"},
		},
	}
}

func urlBenchmark(ns, name string) *v1alpha1.Benchmark {
	return &v1alpha1.Benchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.BenchmarkSpec{
			Target:      v1alpha1.BenchmarkTarget{URL: "http://nginx.example.svc:8080"},
			Parallelism: 2,
			Workload:    v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 2, Duration: metav1.Duration{Duration: 5 * time.Second}}},
			Timeout:     &metav1.Duration{Duration: time.Minute},
		},
	}
}

// staticSite creates what the StaticSite controller would: the Service and one ready server pod.
func staticSite(t *testing.T, ns string) {
	t.Helper()
	testenv.Must(t, k8s.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site", Labels: map[string]string{v1alpha1.LabelSite: "site"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{v1alpha1.LabelSite: "site"}, Ports: []corev1.ServicePort{
			{Name: v1alpha1.ServerPortName, Port: 80}, {Name: v1alpha1.AdminPortName, Port: v1alpha1.AdminPort}}},
	}))
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site-0", Labels: map[string]string{v1alpha1.LabelSite: "site"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "hyperstatic/server:test"}}},
	}
	testenv.Must(t, k8s.Create(ctx, pod))
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.2.3",
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	testenv.Must(t, k8s.Status().Update(ctx, pod))
}

// k6Pod creates the pod the Job controller would have created for a completion index, with its recorded output.
func k6Pod(t *testing.T, ns, bench string, index int, log []byte) {
	t.Helper()
	name := fmt.Sprintf("%s-%d-x", bench, index)
	testenv.Must(t, k8s.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels:      map[string]string{v1alpha1.LabelBenchmark: bench},
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(index)}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: ContainerName, Image: "hyperstatic/k6:test"}}},
	}))
	if log != nil {
		logs.set(ns, name, log)
	}
}

func getJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	testenv.Eventually(t, "the k6 Job", func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job) })
	return job
}

// finishJob writes what the Job controller writes when every index succeeded, or when the Job failed.
func finishJob(t *testing.T, job *batchv1.Job, succeeded bool) {
	t.Helper()
	now := metav1.Now()
	job.Status.StartTime = &metav1.Time{Time: now.Add(-time.Minute)}
	if succeeded {
		job.Status.Succeeded = *job.Spec.Completions
		job.Status.CompletedIndexes = fmt.Sprintf("0-%d", *job.Spec.Completions-1)
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastTransitionTime: now, LastProbeTime: now},
		}
	}
	testenv.Must(t, k8s.Status().Update(ctx, job))
}

// completeRun gives the Job's pods the recorded outputs (one per completion index), completes the Job, and waits
// for the Benchmark to be Complete.
func completeRun(t *testing.T, ns, name string, job *batchv1.Job, outputs ...[]byte) *v1alpha1.Benchmark {
	t.Helper()
	for i, out := range outputs {
		k6Pod(t, ns, name, i, out)
	}
	finishJob(t, job, true)
	return waitBenchmark(t, ns, name, "complete", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhaseComplete {
			return fmt.Errorf("%s", describe(b))
		}
		return nil
	})
}

func TestSweepAgainstStaticSite(t *testing.T) {
	ns := namespace(t)
	staticSite(t, ns)
	testenv.Must(t, k8s.Create(ctx, sweepBenchmark(ns, "sweep")))

	b := waitBenchmark(t, ns, "sweep", "running", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhaseRunning {
			return fmt.Errorf("%s", describe(b))
		}
		return condition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionTrue, "Resolved")
	})
	if want := "http://site." + ns + ".svc:80"; b.Status.Target != want || b.Status.Job != "sweep" || b.Status.Results != "sweep-results" {
		t.Fatalf("status %+v", b.Status)
	}

	// The script ConfigMap: the StaticSite's file list, the plan, and the script; immutable, owned.
	script := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sweep-script"}, script))
	var paths []string
	testenv.Must(t, json.Unmarshal([]byte(script.Data[k6script.PathsFile]), &paths))
	if strings.Join(paths, " ") != strings.Join(content.paths, " ") {
		t.Fatalf("paths %v", paths)
	}
	var plan k6script.Plan
	testenv.Must(t, json.Unmarshal([]byte(script.Data[k6script.PlanFile]), &plan))
	if len(plan.Steps) != 3 || plan.Parallelism != 2 || plan.BaseURL != b.Status.Target || !plan.KeepAlive {
		t.Fatalf("plan %+v", plan)
	}
	if !strings.Contains(script.Data[k6script.ScriptFile], "hs_lat_") || script.Immutable == nil || !*script.Immutable ||
		!metav1.IsControlledBy(script, b) {
		t.Fatal("script ConfigMap")
	}

	job := getJob(t, ns, "sweep")
	if *job.Spec.Completions != 2 || *job.Spec.BackoffLimit != 0 || *job.Spec.CompletionMode != batchv1.IndexedCompletion ||
		job.Spec.Template.Spec.Containers[0].Image != "hyperstatic/k6:test" || !metav1.IsControlledBy(job, b) {
		t.Fatalf("job %+v", job.Spec)
	}
	startAt, err := startAtOf(job)
	testenv.Must(t, err)
	if !b.Status.StartAt.Time.Equal(startAt) || !startAt.After(clk.Now()) {
		t.Fatalf("startAt %s (status %s, now %s)", startAt, b.Status.StartAt, clk.Now())
	}

	// At the first sample point the controller scrapes the site's pod into the results ConfigMap. The run is
	// waiting for that point (status Running), so the clock may move there.
	advanceClock(t, samplePoints(plan, startAt)[0].Add(100*time.Millisecond).Sub(clk.Now()))
	touch(t, ns, "sweep")
	results := &corev1.ConfigMap{}
	testenv.Eventually(t, "a server sample", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sweep-results"}, results); err != nil {
			return err
		}
		if results.Annotations[annotationSampled] != "1" || !strings.Contains(results.Data[benchresults.ServerSamplesKey], `"pod":"site-0"`) {
			return fmt.Errorf("annotations %v data %v", results.Annotations, results.Data)
		}
		return nil
	})

	// The pods ran (recorded output of two real k6 runners); the Job completed.
	b = completeRun(t, ns, "sweep", job, recorded(t, "pod0.log"), recorded(t, "pod1.log"))
	for _, c := range []struct {
		typ    string
		status metav1.ConditionStatus
	}{{v1alpha1.BenchmarkComplete, metav1.ConditionTrue}, {v1alpha1.BenchmarkRunning, metav1.ConditionFalse},
		{v1alpha1.BenchmarkFailed, metav1.ConditionFalse}, {v1alpha1.BenchmarkClientBound, metav1.ConditionFalse}} {
		testenv.Must(t, condition(b, c.typ, c.status, ""))
	}
	// The summary comes from the merged recorded output.
	var want int64
	for _, f := range []string{"pod0.log", "pod1.log"} {
		l, err := benchresults.ParseLog(recorded(t, f))
		testenv.Must(t, err)
		for _, s := range l.Steps {
			want += s.Requests
		}
	}
	s := b.Status.Summary
	if s == nil || s.Requests != want || s.PeakRPS <= 0 || s.Peak != strconv.FormatInt(s.PeakRPS, 10) || s.P99 == "" ||
		s.Verdict != v1alpha1.VerdictPass || s.Steps != 3 || s.ClientBoundSteps != 0 || b.Status.CompletionTime == nil {
		t.Fatalf("summary %+v (want %d requests)", s, want)
	}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sweep-results"}, results))
	var res benchresults.Results
	testenv.Must(t, json.Unmarshal([]byte(results.Data[benchresults.ResultsJSONKey]), &res))
	if len(res.Steps) != 3 || res.Requests != want || res.Steps[0].PodsReporting != 2 {
		t.Fatalf("results.json %+v", res)
	}
	if !strings.HasPrefix(results.Data[benchresults.ResultsCSVKey], "step,concurrency,") || !strings.HasPrefix(results.Data[benchresults.ChartKey], "<svg") {
		t.Fatal("csv / chart missing")
	}
	// DeleteOnSuccess: the Job goes once the results are safe.
	testenv.Eventually(t, "job deleted", func() error {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "sweep"}, &batchv1.Job{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("job still there (%w)", err)
	})
	waitEvents(t, ns, "sweep", "Normal Started", "Normal Completed")
}

func TestFailedRunKeepsItsPods(t *testing.T) {
	ns := namespace(t)
	testenv.Must(t, k8s.Create(ctx, urlBenchmark(ns, "broken")))
	job := getJob(t, ns, "broken")
	k6Pod(t, ns, "broken", 0, recorded(t, "pod0.log"))
	k6Pod(t, ns, "broken", 1, nil) // crashed before printing anything
	finishJob(t, job, false)

	b := waitBenchmark(t, ns, "broken", "failed", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhaseFailed {
			return fmt.Errorf("%s", describe(b))
		}
		return condition(b, v1alpha1.BenchmarkFailed, metav1.ConditionTrue, "JobFailed")
	})
	testenv.Must(t, condition(b, v1alpha1.BenchmarkRunning, metav1.ConditionFalse, ""))
	if b.Status.Target != "http://nginx.example.svc:8080" || b.Status.Summary == nil || b.Status.Summary.Requests == 0 {
		t.Fatalf("partial results expected: %+v", b.Status)
	}
	if c := b.Status.Conditions; !strings.Contains(fmt.Sprint(c), "BackoffLimitExceeded") {
		t.Fatalf("the Job's reason must be in the message: %v", c)
	}
	// DeleteOnSuccess keeps a failed run's Job (and so its pods) for debugging: a pass that saw the recorded
	// outcome (the touch came after it) leaves the Job.
	awaitPass(t, ns, "broken", touch(t, ns, "broken"))
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "broken"}, &batchv1.Job{}))
	waitEvents(t, ns, "broken", "Warning JobFailed")
}

func TestTimeoutStopsTheRun(t *testing.T) {
	ns := namespace(t)
	testenv.Must(t, k8s.Create(ctx, urlBenchmark(ns, "slow")))
	getJob(t, ns, "slow")
	waitBenchmark(t, ns, "slow", "running", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkRunning, metav1.ConditionTrue, "JobRunning")
	})
	advanceClock(t, 2*time.Minute) // spec.timeout is 1m
	touch(t, ns, "slow")
	waitBenchmark(t, ns, "slow", "timed out", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkFailed, metav1.ConditionTrue, "Timeout")
	})
	testenv.Eventually(t, "job deleted to stop the load", func() error {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "slow"}, &batchv1.Job{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("job still there (%w)", err)
	})
}

func TestMissingTargetWaits(t *testing.T) {
	ns := namespace(t)
	b := sweepBenchmark(ns, "nosite")
	b.Spec.Target.StaticSite = "missing"
	testenv.Must(t, k8s.Create(ctx, b))
	waitBenchmark(t, ns, "nosite", "target not resolved", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhasePending {
			return fmt.Errorf("%s", describe(b))
		}
		return condition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionFalse, "ServiceNotFound")
	})
	// Still waiting after a later pass: no Job before the target is resolved.
	awaitPass(t, ns, "nosite", touch(t, ns, "nosite"))
	waitBenchmark(t, ns, "nosite", "still waiting", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhasePending {
			return fmt.Errorf("%s", describe(b))
		}
		return condition(b, v1alpha1.BenchmarkFailed, metav1.ConditionFalse, v1alpha1.BenchmarkReasonWaitingForTarget)
	})
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nosite"}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("no Job before the target is resolved: %v", err)
	}

	// The wait is bounded (spec.timeout, default 10 min) from when TargetResolved became False.
	advanceClock(t, targetWait+time.Second)
	touch(t, ns, "nosite")
	waitBenchmark(t, ns, "nosite", "gave up", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhaseFailed || b.Status.CompletionTime == nil {
			return fmt.Errorf("%s", describe(b))
		}
		return condition(b, v1alpha1.BenchmarkFailed, metav1.ConditionTrue, v1alpha1.BenchmarkReasonTargetNotResolved)
	})
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "nosite"}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("no Job for a target never resolved: %v", err)
	}
}

func TestInvalidBenchmarksAreRefused(t *testing.T) {
	ns := namespace(t)
	cases := map[string]struct {
		mutate func(*v1alpha1.Benchmark)
		want   string
	}{
		"two targets":     {func(b *v1alpha1.Benchmark) { b.Spec.Target.URL = "http://x" }, "exactly one of staticSite or url"},
		"no target":       {func(b *v1alpha1.Benchmark) { b.Spec.Target.StaticSite = "" }, "exactly one of staticSite or url"},
		"two workloads":   {func(b *v1alpha1.Benchmark) { b.Spec.Workload.Constant = &v1alpha1.ConstantWorkload{VUs: 1} }, "exactly one of sweep, constant, arrivalRate"},
		"allFiles of URL": {func(b *v1alpha1.Benchmark) { b.Spec.Target = v1alpha1.BenchmarkTarget{URL: "http://x"} }, "paths.allFiles needs target.staticSite"},
		"sweep down":      {func(b *v1alpha1.Benchmark) { b.Spec.Workload.Sweep.To = 1 }, "to must be >= from"},
		"bad error rate":  {func(b *v1alpha1.Benchmark) { b.Spec.Thresholds.MaxErrorRate = "0.01" }, "spec.thresholds.maxErrorRate"},
		"bad URL": {func(b *v1alpha1.Benchmark) {
			b.Spec.Target = v1alpha1.BenchmarkTarget{URL: "ftp://x"}
			b.Spec.Paths = nil
		}, "spec.target.url"},
		"too many pods": {func(b *v1alpha1.Benchmark) { b.Spec.Parallelism = 65 }, "spec.parallelism"},
		"relative path": {func(b *v1alpha1.Benchmark) { b.Spec.Paths = &v1alpha1.BenchmarkPaths{List: []string{"index.html"}} }, "spec.paths.list[0]"},
		"bad cleanup":   {func(b *v1alpha1.Benchmark) { b.Spec.Cleanup = "Sometimes" }, "spec.cleanup"},
		"bad protocol":  {func(b *v1alpha1.Benchmark) { b.Spec.Protocol = "HTTP/3" }, "spec.protocol"},
		"HTTP/2 to a plain URL": {func(b *v1alpha1.Benchmark) {
			b.Spec.Target = v1alpha1.BenchmarkTarget{URL: "http://nginx.example.svc"}
			b.Spec.Paths = nil
			b.Spec.Protocol = v1alpha1.ProtocolHTTP2
		}, "protocol HTTP/2 needs an https target"},
	}
	// The name becomes the Job's name, its pods' job-name label (63 at most) and their hostnames <name>-<index>.
	nameMsg := "metadata.name must be a DNS-1123 label of at most 60 characters"
	cases["name too long for the Job's pods"] = struct {
		mutate func(*v1alpha1.Benchmark)
		want   string
	}{func(b *v1alpha1.Benchmark) { b.Name = strings.Repeat("a", 61) }, nameMsg}
	cases["name with a dot"] = struct {
		mutate func(*v1alpha1.Benchmark)
		want   string
	}{func(b *v1alpha1.Benchmark) { b.Name = "run.1" }, nameMsg}
	for name, c := range cases {
		b := sweepBenchmark(ns, "invalid")
		c.mutate(b)
		err := k8s.Create(ctx, b)
		if err == nil {
			_ = k8s.Delete(ctx, b)
			t.Errorf("%s: accepted", name)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (want %q)", name, err, c.want)
		}
	}
	// The longest name accepted still makes valid Job pods: <name>-63 is 63 characters.
	longest := urlBenchmark(ns, strings.Repeat("b", 60))
	testenv.Must(t, k8s.Create(ctx, longest))

	// A run is immutable.
	b := urlBenchmark(ns, "frozen")
	testenv.Must(t, k8s.Create(ctx, b))
	testenv.Eventually(t, "update refused", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "frozen"}, b); err != nil {
			return err
		}
		b.Spec.Parallelism = 1
		err := k8s.Update(ctx, b)
		if err == nil || !strings.Contains(err.Error(), "spec is immutable") {
			return fmt.Errorf("update: %w", err)
		}
		return nil
	})
}

func TestDeletedJobIsNotRerun(t *testing.T) {
	ns := namespace(t)
	testenv.Must(t, k8s.Create(ctx, urlBenchmark(ns, "gone")))
	job := getJob(t, ns, "gone")
	waitBenchmark(t, ns, "gone", "running", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkRunning, metav1.ConditionTrue, "JobRunning")
	})
	testenv.Must(t, k8s.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground)))
	waitBenchmark(t, ns, "gone", "failed", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkFailed, metav1.ConditionTrue, "JobDeleted")
	})
	awaitPass(t, ns, "gone", touch(t, ns, "gone"))
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "gone"}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a second Job was started: %v", err)
	}
}
