package benchmark

import (
	"fmt"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Issue 24, item 4: a Benchmark over the tenancy policy's limits (here: more k6 pods than the suite's policy
// allows) fails at once with the field named, and no script, Job or k6 pod is ever created for it.
func TestBenchmarkOverThePolicyFailsWithoutPods(t *testing.T) {
	ns := namespace(t)
	b := urlBenchmark(ns, "too-big")
	b.Spec.Parallelism = suiteMaxParallelism * 2
	b.Spec.Workload.Constant.VUs = b.Spec.Parallelism
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	got := waitBenchmark(t, ns, b.Name, "Failed with PolicyViolation", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkFailed, metav1.ConditionTrue, v1alpha1.BenchmarkReasonPolicyViolation)
	})
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.BenchmarkFailed)
	if want := fmt.Sprintf("spec.parallelism: %d k6 pods is over the limit of %d", b.Spec.Parallelism, suiteMaxParallelism); !strings.Contains(c.Message, want) {
		t.Errorf("message %q does not name %q", c.Message, want)
	}
	for _, obj := range []client.Object{&batchv1.Job{}, &corev1.ConfigMap{}} {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: b.Name}, obj)
		if !apierrors.IsNotFound(err) {
			t.Errorf("%T %s exists (or %v): a refused Benchmark must create nothing", obj, b.Name, err)
		}
	}
	jobs := &batchv1.JobList{}
	if err := k8s.List(ctx, jobs, client.InNamespace(ns)); err != nil || len(jobs.Items) != 0 {
		t.Errorf("jobs %d, err %v", len(jobs.Items), err)
	}
}
