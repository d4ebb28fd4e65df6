package benchmark

import (
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A ConfigMap that happens to have the results ConfigMap's name, and is not the Benchmark's, is never written: the
// run fails with ChildNotOwned before any load is sent.
func TestResultsConfigMapOfSomeoneElseIsLeftAlone(t *testing.T) {
	ns := namespace(t)
	theirs := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken-results", Annotations: map[string]string{"owner": "someone"}},
		Data:       map[string]string{"notes.txt": "not a benchmark's"},
	}
	testenv.Must(t, k8s.Create(ctx, theirs))
	testenv.Must(t, k8s.Create(ctx, urlBenchmark(ns, "taken")))

	waitBenchmark(t, ns, "taken", "refused", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhaseFailed {
			return fmt.Errorf("%s", describe(b))
		}
		return condition(b, v1alpha1.BenchmarkFailed, metav1.ConditionTrue, v1alpha1.BenchmarkReasonChildNotOwned)
	})
	awaitPass(t, ns, "taken", touch(t, ns, "taken"))

	now := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(theirs), now))
	if now.ResourceVersion != theirs.ResourceVersion || !equality.Semantic.DeepEqual(now.Data, theirs.Data) ||
		len(now.OwnerReferences) != 0 || len(now.Annotations) != 1 {
		t.Fatalf("the ConfigMap was written: %+v", now)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("no Job for a refused run: %v", err)
	}
}

// deleteJob deletes the Job it read and nothing else: when the name was deleted and re-created in between, the UID
// precondition makes the API server refuse.
func TestDeleteJobOnlyDeletesTheJobItRead(t *testing.T) {
	ns := namespace(t)
	r := &Reconciler{Client: k8s}
	owner := &v1alpha1.Benchmark{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner", UID: "no-such-benchmark"},
		Spec: v1alpha1.BenchmarkSpec{Parallelism: 1}}
	now := time.Unix(1_800_000_000, 0)
	newJob := func() *batchv1.Job {
		job := desiredJob(owner, nil, "hyperstatic/k6:test", now, now, time.Minute)
		testenv.Must(t, k8s.Create(ctx, job))
		return job
	}

	read := newJob()
	// Someone deletes it and creates another Job of the same name.
	testenv.Must(t, k8s.Delete(ctx, read.DeepCopy(), client.PropagationPolicy(metav1.DeletePropagationBackground)))
	replacement := newJob()
	if replacement.UID == read.UID {
		t.Fatal("the API server reused a UID")
	}

	err := r.deleteJob(ctx, read)
	if !apierrors.IsConflict(err) {
		t.Fatalf("deleting the Job read earlier: %v, want a precondition conflict", err)
	}
	still := &batchv1.Job{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(replacement), still))
	if still.UID != replacement.UID || still.DeletionTimestamp != nil {
		t.Fatalf("the replacement Job was touched: %+v", still.ObjectMeta)
	}

	testenv.Must(t, r.deleteJob(ctx, still))
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(replacement), &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the Job read last is not deleted: %v", err)
	}
	testenv.Must(t, r.deleteJob(ctx, still)) // already gone: nothing to do
}
