// Package benchmark reconciles Benchmarks: it writes the k6 script into a ConfigMap, runs an Indexed Job of k6
// pods, samples the target server's metrics at step boundaries, and, when the Job ends, merges every pod's results
// into a results ConfigMap and a compact status. docs/benchmark.md says when each child is created and why.
package benchmark

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
)

// Defaults of the Reconciler's tunables.
const (
	// DefaultStartDelay is the time between the Job's creation and step 0: the k6 pods are scheduled and started
	// in it, then all start loading together.
	DefaultStartDelay = 15 * time.Second
	// targetWait is how long a Benchmark waits for its target (e.g. a StaticSite still starting) before failing,
	// when spec.timeout does not say.
	targetWait = 10 * time.Minute
	// pollInterval re-checks a running benchmark even when nothing is due (the Job's events also trigger passes).
	pollInterval = 10 * time.Second
)

// Reconciler reconciles a Benchmark.
type Reconciler struct {
	client.Client
	// Recorder records events on Benchmarks.
	Recorder record.EventRecorder
	// Clock is the time source; tests inject a fake one.
	Clock clock.PassiveClock
	// Image is the default k6 image (operator flag --k6-image).
	Image string
	// Logs reads k6 pods' output; Content lists a StaticSite's files; Scraper reads its pods' metrics.
	Logs    LogSource
	Content ContentLister
	Scraper podmetrics.Scraper
	// StartDelay overrides DefaultStartDelay.
	StartDelay time.Duration
	// APIReader reads around the cache (mgr.GetAPIReader()), to tell a deleted Job from a cache that lags; nil
	// means the Client.
	APIReader client.Reader
}

func (r *Reconciler) startDelay() time.Duration {
	if r.StartDelay > 0 {
		return r.StartDelay
	}
	return DefaultStartDelay
}

// Reconcile runs one pass: the steps of reconcile in order, then the status, rebuilt from what the pass saw.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var b v1alpha1.Benchmark
	if err := r.Get(ctx, req.NamespacedName, &b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // owner references take the Job, its pods and the ConfigMaps away
	}
	before := b.Status.DeepCopy()
	res, err := r.reconcile(ctx, &b)
	b.Status.ObservedGeneration = b.Generation
	b.Status.Phase = phaseOf(b.Status.Conditions)
	if !equality.Semantic.DeepEqual(before, &b.Status) {
		if uerr := r.Status().Update(ctx, &b); uerr != nil {
			return ctrl.Result{}, errors.Join(err, uerr)
		}
	}
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, b *v1alpha1.Benchmark) (ctrl.Result, error) {
	if isTrue(b, v1alpha1.BenchmarkComplete) || isTrue(b, v1alpha1.BenchmarkFailed) {
		return ctrl.Result{}, r.cleanup(ctx, b)
	}
	now := r.Clock.Now()

	// 1. The script ConfigMap: written once, from the target resolved at that moment. Later passes read the plan
	//    back from it, so the run is described by one object that never changes.
	script, err := r.ensureScript(ctx, b)
	var tp *targetProblem
	switch {
	case errors.As(err, &tp):
		r.setCondition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionFalse, tp.reason, tp.message)
		wait := targetWait
		if b.Spec.Timeout != nil && b.Spec.Timeout.Duration > 0 {
			wait = b.Spec.Timeout.Duration
		}
		if now.Sub(b.CreationTimestamp.Time) > wait {
			r.fail(b, "TargetNotResolved", fmt.Sprintf("gave up after %s: %s", wait, tp.message))
			return ctrl.Result{}, nil
		}
		return ctrl.Result{RequeueAfter: pollInterval}, nil
	case errors.Is(err, errInvalidSpec):
		r.fail(b, "InvalidSpec", err.Error())
		return ctrl.Result{}, nil
	case err != nil:
		return ctrl.Result{}, err
	}
	var plan k6script.Plan
	if err := json.Unmarshal([]byte(script.Data[k6script.PlanFile]), &plan); err != nil {
		r.fail(b, "InvalidScript", fmt.Sprintf("ConfigMap %s: plan: %v", script.Name, err))
		return ctrl.Result{}, nil
	}
	b.Status.Target = plan.BaseURL
	r.setCondition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionTrue, "Resolved",
		fmt.Sprintf("loading %s, %d step(s), %d k6 pod(s)", plan.BaseURL, len(plan.Steps), plan.Parallelism))

	// 2. The results ConfigMap, created at the start: the server samples accumulate in it.
	results, err := r.ensureResults(ctx, b)
	if err != nil {
		return ctrl.Result{}, err
	}

	// 3. The Job.
	job, err := r.ensureJob(ctx, b, plan)
	if err == nil && job.DeletionTimestamp != nil && !jobCondition(job, batchv1.JobComplete) && !jobCondition(job, batchv1.JobFailed) {
		err = errJobDeleted
	}
	if errors.Is(err, errJobDeleted) {
		r.fail(b, "JobDeleted", "the k6 Job was deleted before it finished; the run is not restarted (create a new Benchmark)")
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, err
	}
	startAt, err := startAtOf(job)
	if err != nil {
		r.fail(b, "InvalidJob", err.Error())
		return ctrl.Result{}, nil
	}
	deadline, err := deadlineOf(job)
	if err != nil {
		r.fail(b, "InvalidJob", err.Error())
		return ctrl.Result{}, nil
	}
	b.Status.Job = job.Name
	b.Status.StartAt = &metav1.Time{Time: startAt}
	b.Status.Results = results.Name

	// 4. Finished, timed out, or running.
	switch {
	case jobCondition(job, batchv1.JobComplete):
		return ctrl.Result{}, r.finish(ctx, b, plan, results, "", "")
	case jobCondition(job, batchv1.JobFailed):
		reason, msg := "JobFailed", "the k6 Job failed"
		for _, c := range job.Status.Conditions {
			if c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue {
				msg = fmt.Sprintf("the k6 Job failed (%s): %s", c.Reason, c.Message)
			}
		}
		return ctrl.Result{}, r.finish(ctx, b, plan, results, reason, msg)
	case now.After(deadline):
		// Collect what the pods printed so far, then stop them: they would keep loading the target.
		err := r.finish(ctx, b, plan, results, "Timeout", fmt.Sprintf("the run did not finish by its deadline %s (spec.timeout, default: planned duration + 5m)", deadline.UTC().Format(time.RFC3339)))
		if err != nil {
			return ctrl.Result{}, err
		}
		return ctrl.Result{}, r.deleteJob(ctx, b)
	}
	r.setCondition(b, v1alpha1.BenchmarkRunning, metav1.ConditionTrue, "JobRunning",
		fmt.Sprintf("k6 Job %s: %d active, %d succeeded; step 0 starts at %s", job.Name, job.Status.Active, job.Status.Succeeded, startAt.UTC().Format(time.RFC3339)))
	r.setCondition(b, v1alpha1.BenchmarkComplete, metav1.ConditionFalse, "Running", "the run is in progress")

	// 5. Server samples at step boundaries.
	changed, next, err := r.sampleServer(ctx, results, targetSite(b), b.Namespace, samplePoints(plan, startAt))
	if err != nil {
		return ctrl.Result{}, err
	}
	if changed {
		if err := r.Update(ctx, results); err != nil {
			return ctrl.Result{}, err
		}
	}
	wait := pollInterval
	if next > 0 && next < wait {
		wait = next
	}
	if left := deadline.Sub(now); left > 0 && left < wait {
		wait = left + time.Second
	}
	return ctrl.Result{RequeueAfter: wait}, nil
}

var (
	errInvalidSpec = errors.New("invalid spec")
	errJobDeleted  = errors.New("job deleted")
)

func targetSite(b *v1alpha1.Benchmark) string { return b.Spec.Target.StaticSite }

func (r *Reconciler) ensureScript(ctx context.Context, b *v1alpha1.Benchmark) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ScriptConfigMapName(b)}, &cm)
	if err == nil {
		if !metav1.IsControlledBy(&cm, b) {
			return nil, fmt.Errorf("%w: ConfigMap %s exists and is not this Benchmark's", errInvalidSpec, cm.Name)
		}
		return &cm, nil
	}
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	t, err := r.resolveTarget(ctx, b)
	if err != nil {
		return nil, err
	}
	plan, err := k6script.NewPlan(b.Spec, t.baseURL)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidSpec, err)
	}
	files, err := k6script.Files(plan, t.paths)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errInvalidSpec, err)
	}
	want := desiredScriptConfigMap(b, files)
	if err := r.Create(ctx, want); err != nil {
		return nil, err
	}
	return want, nil
}

func (r *Reconciler) ensureResults(ctx context.Context, b *v1alpha1.Benchmark) (*corev1.ConfigMap, error) {
	var cm corev1.ConfigMap
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ResultsConfigMapName(b)}, &cm)
	if err == nil {
		return &cm, nil
	}
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	want := desiredResultsConfigMap(b)
	return want, r.Create(ctx, want)
}

func (r *Reconciler) ensureJob(ctx context.Context, b *v1alpha1.Benchmark, plan k6script.Plan) (*batchv1.Job, error) {
	var job batchv1.Job
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: JobName(b)}, &job)
	if err == nil {
		return &job, nil
	}
	if client.IgnoreNotFound(err) != nil {
		return nil, err
	}
	if b.Status.StartAt != nil {
		// This Benchmark already ran a Job. Never start a second run: if the Job is really gone (not just missing
		// from a lagging cache), the run failed.
		reader := r.APIReader
		if reader == nil {
			reader = r.Client
		}
		err := reader.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: JobName(b)}, &job)
		if err == nil {
			return &job, nil
		}
		if client.IgnoreNotFound(err) != nil {
			return nil, err
		}
		return nil, errJobDeleted
	}
	now := r.Clock.Now()
	startAt := now.Add(r.startDelay()).Truncate(time.Second)
	want := desiredJob(b, r.Image, now, startAt, timeoutOf(b, plan, r.startDelay()))
	if err := r.Create(ctx, want); err != nil {
		return nil, err
	}
	r.Recorder.Eventf(b, corev1.EventTypeNormal, "Started", "Created k6 Job %s: %d pod(s), %d step(s) from %s, about %s",
		want.Name, plan.Parallelism, len(plan.Steps), startAt.UTC().Format(time.RFC3339), plan.Duration())
	return want, nil
}

// finish collects and publishes the results. failReason empty means the Job completed.
func (r *Reconciler) finish(ctx context.Context, b *v1alpha1.Benchmark, plan k6script.Plan, results *corev1.ConfigMap, failReason, failMsg string) error {
	res, err := r.collect(ctx, b, plan, plan.BaseURL, serverSamplesOf(results))
	if err != nil {
		return err
	}
	data, err := resultsData(b, res)
	if err != nil {
		return err
	}
	if results.Data == nil {
		results.Data = map[string]string{}
	}
	for k, v := range data {
		results.Data[k] = v
	}
	if err := r.Update(ctx, results); err != nil {
		return err
	}
	summary := benchresults.Summarize(res)
	b.Status.Summary = &summary
	now := metav1.NewTime(r.Clock.Now())
	b.Status.CompletionTime = &now
	if res.ClientBoundSteps > 0 {
		msg := fmt.Sprintf("%d of %d step(s) had a k6 pod at >= %.0f%% of its CPU: they measured the client, not the server; %s",
			res.ClientBoundSteps, len(res.Steps), benchresults.ClientBoundFraction*100, peakSentence(summary))
		r.setCondition(b, v1alpha1.BenchmarkClientBound, metav1.ConditionTrue, "ClientCPUSaturated", msg)
		r.Recorder.Event(b, corev1.EventTypeWarning, "ClientBound", msg)
	} else {
		r.setCondition(b, v1alpha1.BenchmarkClientBound, metav1.ConditionFalse, "ClientHadHeadroom",
			"every step's k6 pods stayed below 90% of their CPU")
	}
	r.setCondition(b, v1alpha1.BenchmarkRunning, metav1.ConditionFalse, "Finished", "the k6 Job has finished")
	if failReason == "" && len(res.Steps) > 0 && res.Requests == 0 {
		failReason, failMsg = "NoResults", "the k6 pods completed but reported no request"
	}
	if failReason != "" {
		if len(res.Warnings) > 0 {
			failMsg += "; " + res.Warnings[0]
		}
		r.fail(b, failReason, failMsg)
		return nil
	}
	msg := fmt.Sprintf("%d requests in %d step(s); %s", res.Requests, len(res.Steps), peakSentence(summary))
	if len(res.Warnings) > 0 {
		msg += fmt.Sprintf("; %d warning(s), first: %s", len(res.Warnings), res.Warnings[0])
	}
	r.setCondition(b, v1alpha1.BenchmarkComplete, metav1.ConditionTrue, "ResultsPublished", msg)
	r.setCondition(b, v1alpha1.BenchmarkFailed, metav1.ConditionFalse, "Succeeded", "the run completed")
	r.Recorder.Eventf(b, corev1.EventTypeNormal, "Completed", "%s; results in ConfigMap %s", msg, results.Name)
	log.FromContext(ctx).Info("benchmark complete", "peak", summary.Peak, "p99", summary.P99, "verdict", summary.Verdict)
	return nil
}

func peakSentence(s v1alpha1.BenchmarkSummary) string {
	if s.PeakRPS > 0 {
		return fmt.Sprintf("peak %d req/s (not client-bound), p99 %s", s.PeakRPS, s.P99)
	}
	return fmt.Sprintf("no step was free of the client limit: the server's capacity is at least %d req/s, not measured", s.MeasuredPeakRPS)
}

func (r *Reconciler) fail(b *v1alpha1.Benchmark, reason, msg string) {
	r.setCondition(b, v1alpha1.BenchmarkFailed, metav1.ConditionTrue, reason, msg)
	r.setCondition(b, v1alpha1.BenchmarkRunning, metav1.ConditionFalse, reason, "the run has stopped")
	r.setCondition(b, v1alpha1.BenchmarkComplete, metav1.ConditionFalse, reason, "the run failed")
	if b.Status.CompletionTime == nil {
		now := metav1.NewTime(r.Clock.Now())
		b.Status.CompletionTime = &now
	}
	r.Recorder.Event(b, corev1.EventTypeWarning, reason, msg)
}

// cleanup applies spec.cleanup once the run is over.
func (r *Reconciler) cleanup(ctx context.Context, b *v1alpha1.Benchmark) error {
	switch b.Spec.Cleanup {
	case v1alpha1.CleanupKeep:
		return nil
	case v1alpha1.CleanupDelete:
	default: // DeleteOnSuccess
		if isTrue(b, v1alpha1.BenchmarkFailed) {
			return nil // keep the failed pods and their logs for debugging
		}
	}
	return r.deleteJob(ctx, b)
}

// deleteJob deletes the Job; background propagation lets the garbage collector remove its pods.
func (r *Reconciler) deleteJob(ctx context.Context, b *v1alpha1.Benchmark) error {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: b.Namespace, Name: JobName(b)}}
	err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	return client.IgnoreNotFound(err)
}

func jobCondition(job *batchv1.Job, t batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// setCondition sets a condition, stamping transitions with the injected clock.
func (r *Reconciler) setCondition(b *v1alpha1.Benchmark, t string, s metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{Type: t, Status: s, Reason: reason, Message: msg,
		ObservedGeneration: b.Generation, LastTransitionTime: metav1.NewTime(r.Clock.Now())})
}

func isTrue(b *v1alpha1.Benchmark, t string) bool {
	return meta.IsStatusConditionTrue(b.Status.Conditions, t)
}

// phaseOf derives the display phase from the conditions: the one place it is computed.
func phaseOf(conds []metav1.Condition) string {
	switch {
	case meta.IsStatusConditionTrue(conds, v1alpha1.BenchmarkFailed):
		return v1alpha1.BenchmarkPhaseFailed
	case meta.IsStatusConditionTrue(conds, v1alpha1.BenchmarkComplete):
		return v1alpha1.BenchmarkPhaseComplete
	case meta.IsStatusConditionTrue(conds, v1alpha1.BenchmarkRunning):
		return v1alpha1.BenchmarkPhaseRunning
	default:
		return v1alpha1.BenchmarkPhasePending
	}
}
