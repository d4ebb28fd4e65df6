package benchmark

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// ensureJob creates the k6 Job once, or observes it. A run is never started twice: status.startAt, recorded in the
// pass that created the Job, is the persisted fact that a Job existed, so a Job missing later (read from the API
// server, not only the cache) fails the run with JobDeleted instead of starting a second one.
//
// Observes: the Job (its conditions, active and succeeded pods), and the start and deadline it was created with.
func (r *Reconciler) ensureJob(ctx context.Context, b *v1alpha1.Benchmark, o *observation) error {
	job := &batchv1.Job{}
	err := r.getFresh(ctx, client.ObjectKey{Namespace: b.Namespace, Name: JobName(b)}, job)
	if apierrors.IsNotFound(err) {
		started, err := r.runStarted(ctx, b)
		if err != nil {
			return err
		}
		if started {
			o.failure = failWith(v1alpha1.BenchmarkReasonJobDeleted,
				"the k6 Job was deleted before it finished; the run is not restarted (create a new Benchmark)")
			return nil
		}
		return r.createJob(ctx, b, o)
	}
	if err != nil {
		return err
	}
	if !metav1.IsControlledBy(job, b) {
		o.failure = notOwned("Job", job.Name)
		return nil
	}
	finished := jobCondition(job, batchv1.JobComplete) != nil || jobCondition(job, batchv1.JobFailed) != nil
	if job.DeletionTimestamp != nil && !finished {
		o.failure = failWith(v1alpha1.BenchmarkReasonJobDeleted,
			"the k6 Job is being deleted before it finished; the run is not restarted (create a new Benchmark)")
		return nil
	}
	return observeJob(job, o)
}

// runStarted says whether a Job was ever created for this Benchmark (status.startAt is set). The Benchmark this pass
// read may come from a cache that has not yet seen the status written by the pass that created the Job, so before
// a Job is created the API server's copy decides.
func (r *Reconciler) runStarted(ctx context.Context, b *v1alpha1.Benchmark) (bool, error) {
	if b.Status.StartAt != nil {
		return true, nil
	}
	fresh := &v1alpha1.Benchmark{}
	if err := r.direct().Get(ctx, client.ObjectKeyFromObject(b), fresh); err != nil {
		return false, err
	}
	return fresh.Status.StartAt != nil, nil
}

// createJob creates the Job; every pod waits for startAt, startDelay from now, so that all start loading together.
func (r *Reconciler) createJob(ctx context.Context, b *v1alpha1.Benchmark, o *observation) error {
	startAt := o.now.Add(r.tunables().startDelay).Truncate(time.Second)
	want := desiredJob(b, o.plan.TargetPodLabels, r.Image, o.now, startAt, timeoutOf(b, *o.plan, r.tunables().startDelay))
	if err := r.Create(ctx, want); err != nil {
		return err // AlreadyExists is a race with another pass: the retry observes it
	}
	r.Recorder.Eventf(b, corev1.EventTypeNormal, eventStarted, "Created k6 Job %s: %d pod(s), %d step(s) from %s, about %s",
		want.Name, o.plan.Parallelism, len(o.plan.Steps), startAt.UTC().Format(time.RFC3339), o.plan.Duration())
	return observeJob(want, o)
}

// observeJob records the Job and the times it was created with.
func observeJob(job *batchv1.Job, o *observation) error {
	startAt, err := startAtOf(job)
	if err != nil {
		o.failure = failWith(v1alpha1.BenchmarkReasonInvalidJob, "%v", err)
		return nil
	}
	deadline, err := deadlineOf(job)
	if err != nil {
		o.failure = failWith(v1alpha1.BenchmarkReasonInvalidJob, "%v", err)
		return nil
	}
	o.job, o.startAt, o.deadline = job, startAt, deadline
	return nil
}
