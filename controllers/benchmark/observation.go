package benchmark

import (
	"time"

	"hyperstatic.dev/hyperstatic/internal/reconcile"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// observation is what one reconcile pass learns about the world. Each step fills its part, in order; deriveStatus
// then turns it (with the few persisted facts that cannot be observed again) into the whole status. Steps never
// write the status themselves.
type observation struct {
	// now is the injected clock's reading, taken once at the start of the pass: every decision of the pass uses it.
	now time.Time

	// resolveTarget: the run's plan, read back from the script ConfigMap once it exists (script). Before that,
	// the target is resolved and the script's files rendered (files), or the reason to wait recorded (targetWait).
	plan       *k6script.Plan
	script     *corev1.ConfigMap // also set by ensureScript when it creates it
	files      map[string]string
	targetWait *problem

	// ensureResults: the live results ConfigMap, read directly from the API server (recorded samples, points done).
	results *corev1.ConfigMap

	// ensureJob: the live k6 Job, and the start and deadline it was created with (its annotations).
	job      *batchv1.Job
	startAt  time.Time
	deadline time.Time

	// watchSite: the target StaticSite as it is now (nil for a URL target or before the Job), or that it is gone.
	site     *v1alpha1.BenchmarkTargetState
	siteGone bool

	// sample: how long until the next server sample point (0: none left).
	nextSample time.Duration

	// collect: the merged results, once the run is over, and what the results ConfigMap left out to fit.
	collected *benchresults.Results
	dropped   []string

	// failure is a terminal problem found by any step (no retry can fix it). The steps after it do not run.
	failure *problem
}

// problem is a condition reason with its message (internal/reconcile's, shared by the controllers).
type problem = reconcile.Problem

// failWith is a terminal problem.
func failWith(reason, format string, args ...any) *problem {
	return reconcile.Problemf(reason, format, args...)
}

// halted says the remaining steps of the pass have nothing to do: the run failed, or the target is not there yet.
func (o *observation) halted() bool { return o.failure != nil || o.targetWait != nil }

// runEnd says whether the k6 Job's run is over, judged from the live Job and the clock, and why it ended badly
// (nil when the Job completed). A run that is over is collected, never sampled again.
func (o *observation) runEnd() (ended bool, why *problem) {
	if o.job == nil {
		return false, nil
	}
	if jobCondition(o.job, batchv1.JobComplete) != nil {
		return true, nil
	}
	if c := jobCondition(o.job, batchv1.JobFailed); c != nil {
		return true, failWith(v1alpha1.BenchmarkReasonJobFailed, "the k6 Job failed (%s): %s", c.Reason, c.Message)
	}
	if !o.now.Before(o.deadline) {
		return true, failWith(v1alpha1.BenchmarkReasonTimeout,
			"the run did not finish by its deadline %s (spec.timeout, default: planned duration + 5m)", o.deadline.UTC().Format(time.RFC3339))
	}
	return false, nil
}

// jobCondition is the Job's condition of type t when it is True, else nil.
func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}
