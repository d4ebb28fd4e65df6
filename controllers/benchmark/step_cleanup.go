package benchmark

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// cleanup deletes the Job (and, through the garbage collector, its pods) once the outcome is recorded, when
// jobUnwanted says so. It runs only after the outcome is in the status: deleting the Job of a run whose outcome a
// lost status write did not record would turn a finished run into JobDeleted.
//
// Observes: the Job.
func (r *Reconciler) cleanup(ctx context.Context, b *v1alpha1.Benchmark, _ *observation) error {
	if !jobUnwanted(b) {
		return nil
	}
	job := &batchv1.Job{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: JobName(b)}, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	if job.DeletionTimestamp != nil || !metav1.IsControlledBy(job, b) {
		return nil
	}
	return r.deleteJob(ctx, job)
}

// jobUnwanted applies spec.cleanup to a recorded outcome. A timed-out run's Job always goes: its pods would keep
// loading the target. Otherwise DeleteOnSuccess (the default) keeps a failed run's pods and logs for debugging,
// Delete always deletes, Keep never does.
func jobUnwanted(b *v1alpha1.Benchmark) bool {
	failed := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.BenchmarkFailed)
	isFailed := failed != nil && failed.Status == metav1.ConditionTrue
	if isFailed && failed.Reason == v1alpha1.BenchmarkReasonTimeout {
		return true
	}
	switch b.Spec.Cleanup {
	case v1alpha1.CleanupKeep:
		return false
	case v1alpha1.CleanupDelete:
		return true
	default: // DeleteOnSuccess
		return !isFailed
	}
}

// deleteJob deletes the Job that was read, and only that one: the UID precondition makes the API server refuse if
// the name now belongs to another Job (deleted and re-created since the read); the next pass reads again.
// Background propagation lets the garbage collector remove the pods.
func (r *Reconciler) deleteJob(ctx context.Context, job *batchv1.Job) error {
	uid := job.UID
	err := r.Delete(ctx, job, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
	return client.IgnoreNotFound(err)
}
