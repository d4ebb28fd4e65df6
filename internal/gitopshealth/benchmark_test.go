package gitopshealth

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Benchmarks through every phase, loading a StaticSite the operator runs: each phase read back from the API server
// and judged by the Argo CD health check and by kstatus.
func TestBenchmarkPhases(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()

	// Created while the operator is down: no status yet.
	testenv.Must(t, k8s.Create(ctx, sweep(ns, "unseen", 2)))
	u, err := read(ns, "unseen", "Benchmark")
	testenv.Must(t, err)
	if _, found, _ := unstructured.NestedMap(u.Object, "status"); found {
		t.Fatalf("a Benchmark the operator never saw has a status: %v", u.Object["status"])
	}
	// kstatus computes Current for an object without a status (see the package comment).
	expect(t, u, "Progressing", "Waiting for the operator to observe generation 1", kstatus.CurrentStatus)

	startOperator(t, ns)
	// Pending: the StaticSite it loads does not exist yet.
	u = waitBenchmark(t, ns, "unseen", "waiting for its target", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhasePending {
			return fmt.Errorf("phase %q", b.Status.Phase)
		}
		return conditionIs(b.Status.Conditions, v1alpha1.BenchmarkTargetResolved, metav1.ConditionFalse, v1alpha1.BenchmarkReasonServiceNotFound)
	})
	expect(t, u, "Progressing", "Waiting for the target: "+said(conditionsOf(t, u), v1alpha1.BenchmarkTargetResolved), kstatus.InProgressStatus)

	// Running: the site's Service exists, the k6 Job runs.
	pages(t, ns, "pages")
	createSite(t, ns, "web", 1)
	testenv.Must(t, k8s.Create(ctx, sweep(ns, "broken", 2)))
	for _, name := range []string{"unseen", "broken"} {
		u = waitBenchmark(t, ns, name, "running", phase(v1alpha1.BenchmarkPhaseRunning))
		expect(t, u, "Progressing", said(conditionsOf(t, u), v1alpha1.BenchmarkRunning), kstatus.InProgressStatus)
	}

	// Complete: both k6 pods printed their results (recorded from real k6 runs), the Job succeeded.
	finishJob(t, ns, "unseen", true)
	u = waitBenchmark(t, ns, "unseen", "complete", phase(v1alpha1.BenchmarkPhaseComplete))
	expect(t, u, "Healthy", said(conditionsOf(t, u), v1alpha1.BenchmarkComplete), kstatus.CurrentStatus)

	// Failed: a k6 pod failed, so did the Job.
	finishJob(t, ns, "broken", false)
	u = waitBenchmark(t, ns, "broken", "failed", phase(v1alpha1.BenchmarkPhaseFailed))
	testenv.Must(t, conditionIs(conditionsOf(t, u), v1alpha1.BenchmarkFailed, metav1.ConditionTrue, v1alpha1.BenchmarkReasonJobFailed))
	expect(t, u, "Degraded", said(conditionsOf(t, u), v1alpha1.BenchmarkFailed), kstatus.FailedStatus)

	// Failed before any load: more k6 pods than the tenancy policy allows.
	testenv.Must(t, k8s.Create(ctx, sweep(ns, "greedy", policy.Benchmark.MaxParallelism+1)))
	u = waitBenchmark(t, ns, "greedy", "refused", phase(v1alpha1.BenchmarkPhaseFailed))
	testenv.Must(t, conditionIs(conditionsOf(t, u), v1alpha1.BenchmarkFailed, metav1.ConditionTrue, v1alpha1.BenchmarkReasonPolicyViolation))
	s := expect(t, u, "Degraded", said(conditionsOf(t, u), v1alpha1.BenchmarkFailed), kstatus.FailedStatus)
	if want := said(conditionsOf(t, u), v1alpha1.BenchmarkFailed); v1alpha1.BenchmarkReasonPolicyViolation+": "+s.flux.Message != want {
		t.Errorf("kstatus message %q, want the Failed message %q", s.flux.Message, want)
	}
}

// sweep is a Benchmark of the StaticSite web: a sweep of 2 to 6 VUs as in the recorded run, over parallel k6 pods.
func sweep(ns, name string, parallel int32) *v1alpha1.Benchmark {
	return &v1alpha1.Benchmark{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.BenchmarkSpec{
		Target:      v1alpha1.BenchmarkTarget{StaticSite: "web"},
		Parallelism: parallel,
		Workload: v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{From: max(2, parallel), To: max(2, parallel) + 4, Step: 2,
			StepDuration: metav1.Duration{Duration: 5 * time.Second}}},
	}}
}

func waitBenchmark(t *testing.T, ns, name, what string, check func(*v1alpha1.Benchmark) error) *unstructured.Unstructured {
	t.Helper()
	return waitFor[v1alpha1.Benchmark](t, ns, name, "Benchmark", what, check)
}

func phase(want string) func(*v1alpha1.Benchmark) error {
	return func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != want {
			return fmt.Errorf("phase %q, want %q: %s", b.Status.Phase, want, describe(b.Status.Conditions))
		}
		return nil
	}
}

// finishJob plays the Job controller and the kubelet: it creates the Job's pods from its template (each printed
// what recordedLogs holds for its index), and writes the Job's status when every index succeeded, or when one
// pod failed.
func finishJob(t *testing.T, ns, name string, succeeded bool) {
	t.Helper()
	ctx := context.Background()
	job := &batchv1.Job{}
	testenv.Eventually(t, "the k6 Job", func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, job) })
	n := *job.Spec.Completions
	for i := range n {
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("%s-%d-x", name, i),
			Labels:      job.Spec.Template.Labels,
			Annotations: map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(int(i))}},
			Spec: job.Spec.Template.Spec}
		testenv.Must(t, k8s.Create(ctx, pod))
		pod.Status.Phase = corev1.PodSucceeded
		if !succeeded && i == n-1 {
			pod.Status.Phase = corev1.PodFailed
		}
		testenv.Must(t, k8s.Status().Update(ctx, pod))
	}
	now := metav1.Now()
	job.Status.StartTime = &metav1.Time{Time: now.Add(-time.Minute)}
	if succeeded {
		job.Status.Succeeded = n
		job.Status.CompletedIndexes = fmt.Sprintf("0-%d", n-1)
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, LastProbeTime: now}}
	} else {
		job.Status.Succeeded, job.Status.Failed = n-1, 1
		switch {
		case n == 2:
			job.Status.CompletedIndexes = "0"
		case n > 2:
			job.Status.CompletedIndexes = fmt.Sprintf("0-%d", n-2)
		}
		msg := "Job has reached the specified backoff limit"
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: msg, LastTransitionTime: now, LastProbeTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: msg, LastTransitionTime: now, LastProbeTime: now}}
	}
	testenv.Must(t, k8s.Status().Update(ctx, job))
}
