package benchmark

import (
	"fmt"
	"time"

	"hyperstatic.dev/hyperstatic/internal/reconcile"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
)

// deriveStatus is the one place the Benchmark's conditions and phase are decided. It is pure: from the Benchmark
// as read at the start of the pass (its spec, and the persisted facts of its status that cannot be observed again:
// the recorded outcome, startAt, when the wait for the target began) and the pass's observation, it returns the
// new status. Condition transitions are stamped with the pass's clock reading.
func deriveStatus(b *v1alpha1.Benchmark, o *observation) v1alpha1.BenchmarkStatus {
	s := *b.Status.DeepCopy()
	s.ObservedGeneration = b.Generation
	if !outcomeRecorded(b.Status) { // once recorded, a run is a record: its outcome never changes
		deriveRun(&s, b, o)
	}
	s.Phase = phaseOf(s.Conditions)
	deriveKstatus(&s, b, o.now)
	return s
}

// deriveKstatus sets the two conditions kstatus reads, for the GitOps tools that judge health through it (Flux):
// Reconciling=True while the run has no outcome (Pending, Running), Stalled=True once it failed (terminal: only a
// new Benchmark runs again), neither once it is complete. They repeat the phase's condition (reason and message).
// Without them kstatus finds nothing it knows and computes Current for every phase, a failed run included
// (internal/gitopshealth).
func deriveKstatus(s *v1alpha1.BenchmarkStatus, b *v1alpha1.Benchmark, now time.Time) {
	var reconciling, stalled *metav1.Condition
	switch s.Phase {
	case v1alpha1.BenchmarkPhaseFailed:
		stalled = meta.FindStatusCondition(s.Conditions, v1alpha1.BenchmarkFailed)
	case v1alpha1.BenchmarkPhaseRunning:
		reconciling = meta.FindStatusCondition(s.Conditions, v1alpha1.BenchmarkRunning)
	case v1alpha1.BenchmarkPhasePending:
		// Why it waits: the target's reason and message, when the controller knows them.
		if reconciling = meta.FindStatusCondition(s.Conditions, v1alpha1.BenchmarkTargetResolved); reconciling == nil || reconciling.Status == metav1.ConditionTrue {
			reconciling = meta.FindStatusCondition(s.Conditions, v1alpha1.BenchmarkRunning)
		}
	}
	// Copies: setting a condition may move the list the pointers above point into.
	repeat := map[string]*metav1.Condition{v1alpha1.ConditionReconciling: reconciling, v1alpha1.ConditionStalled: stalled}
	for typ, c := range repeat {
		if c != nil {
			repeat[typ] = c.DeepCopy()
		}
	}
	set := reconcile.NewConditions(&s.Conditions, b.Generation, now)
	for _, typ := range []string{v1alpha1.ConditionReconciling, v1alpha1.ConditionStalled} {
		if c := repeat[typ]; c == nil {
			set.Remove(typ)
		} else {
			set.Set(typ, metav1.ConditionTrue, c.Reason, c.Message)
		}
	}
}

// deriveRun rebuilds the status of a run whose outcome is not recorded yet.
func deriveRun(s *v1alpha1.BenchmarkStatus, b *v1alpha1.Benchmark, o *observation) {
	set := reconcile.NewConditions(&s.Conditions, b.Generation, o.now).Set

	// The children this pass saw.
	if o.plan != nil {
		s.Target = o.plan.BaseURL
	}
	if o.results != nil {
		s.Results = o.results.Name
	}
	if o.job != nil {
		s.Job = o.job.Name
		s.StartAt = &metav1.Time{Time: o.startAt}
	}

	deriveTargetChange(s, o, set)

	switch {
	case o.plan != nil:
		set(v1alpha1.BenchmarkTargetResolved, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResolved,
			fmt.Sprintf("loading %s, %d step(s), %d k6 pod(s)", o.plan.BaseURL, len(o.plan.Steps), o.plan.Parallelism))
	case o.targetWait != nil:
		set(v1alpha1.BenchmarkTargetResolved, metav1.ConditionFalse, o.targetWait.Reason, o.targetWait.Message)
	}

	failure := o.failure
	if failure == nil && o.targetWait != nil && !o.now.Before(targetGiveUpAt(*s, b, o.now)) {
		failure = failWith(v1alpha1.BenchmarkReasonTargetNotResolved, "gave up after %s: %s", targetWaitOf(b), o.targetWait.Message)
	}
	if res := o.collected; res != nil {
		summary := benchresults.Summarize(*res)
		if o.plan != nil {
			summary.ServerCPULimit = o.plan.ServerCPULimit // the loaded pod's, for target.pod
		}
		s.Summary = &summary
		s.Protocol = benchresults.ProtocolOf(res.Protocols)
		s.Dropped = o.dropped
		if res.ClientBoundSteps > 0 {
			set(v1alpha1.BenchmarkClientBound, metav1.ConditionTrue, v1alpha1.BenchmarkReasonClientCPUSaturated,
				fmt.Sprintf("%d of %d step(s) had a k6 pod at >= %.0f%% of its CPU: they measured the client, not the server; %s",
					res.ClientBoundSteps, len(res.Steps), benchresults.ClientBoundFraction*100, peakSentence(summary)))
		} else {
			set(v1alpha1.BenchmarkClientBound, metav1.ConditionFalse, v1alpha1.BenchmarkReasonClientHadHeadroom,
				fmt.Sprintf("every step's k6 pods stayed below %.0f%% of their CPU", benchresults.ClientBoundFraction*100))
		}
		if failure == nil && len(res.Steps) > 0 && res.Requests == 0 {
			failure = failWith(v1alpha1.BenchmarkReasonNoResults, "the k6 pods completed but reported no request")
		}
		if failure != nil && len(res.Warnings) > 0 {
			failure = &problem{Reason: failure.Reason, Message: failure.Message + "; " + res.Warnings[0]}
		}
	}

	switch {
	case failure != nil:
		set(v1alpha1.BenchmarkFailed, metav1.ConditionTrue, failure.Reason, failure.Message)
		set(v1alpha1.BenchmarkRunning, metav1.ConditionFalse, failure.Reason, "the run has stopped")
		set(v1alpha1.BenchmarkComplete, metav1.ConditionFalse, failure.Reason, "the run failed")
		s.CompletionTime = completionTime(*s, o.now)
	case o.collected != nil:
		set(v1alpha1.BenchmarkComplete, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResultsPublished, completeMessage(*o.collected, *s.Summary, o.dropped))
		set(v1alpha1.BenchmarkFailed, metav1.ConditionFalse, v1alpha1.BenchmarkReasonSucceeded, "the run completed")
		set(v1alpha1.BenchmarkRunning, metav1.ConditionFalse, v1alpha1.BenchmarkReasonFinished, "the k6 Job has finished")
		s.CompletionTime = completionTime(*s, o.now)
	case o.job != nil:
		set(v1alpha1.BenchmarkRunning, metav1.ConditionTrue, v1alpha1.BenchmarkReasonJobRunning,
			fmt.Sprintf("k6 Job %s: %d active, %d succeeded; step 0 starts at %s", o.job.Name, o.job.Status.Active,
				o.job.Status.Succeeded, o.startAt.UTC().Format(time.RFC3339)))
		set(v1alpha1.BenchmarkComplete, metav1.ConditionFalse, v1alpha1.BenchmarkReasonInProgress, "the run is in progress")
		set(v1alpha1.BenchmarkFailed, metav1.ConditionFalse, v1alpha1.BenchmarkReasonInProgress, "the run is in progress")
	default: // the steps stopped at the target: there is no Job yet
		msg := "the k6 Job is created once the target is resolved"
		set(v1alpha1.BenchmarkRunning, metav1.ConditionFalse, v1alpha1.BenchmarkReasonWaitingForTarget, msg)
		set(v1alpha1.BenchmarkComplete, metav1.ConditionFalse, v1alpha1.BenchmarkReasonWaitingForTarget, msg)
		set(v1alpha1.BenchmarkFailed, metav1.ConditionFalse, v1alpha1.BenchmarkReasonWaitingForTarget, msg)
	}
}

// outcomeRecorded says the status holds the run's outcome: Complete or Failed is True.
func outcomeRecorded(s v1alpha1.BenchmarkStatus) bool {
	return meta.IsStatusConditionTrue(s.Conditions, v1alpha1.BenchmarkComplete) ||
		meta.IsStatusConditionTrue(s.Conditions, v1alpha1.BenchmarkFailed)
}

// targetWaitOf is how long a Benchmark waits for its target: spec.timeout, or targetWait.
func targetWaitOf(b *v1alpha1.Benchmark) time.Duration {
	if b.Spec.Timeout != nil && b.Spec.Timeout.Duration > 0 {
		return b.Spec.Timeout.Duration
	}
	return targetWait
}

// targetGiveUpAt is when a Benchmark still waiting for its target fails. The wait began when TargetResolved last
// became False, a time stamped by the controller's own clock (the creation timestamp is the API server's); before
// that condition is recorded, it begins now.
func targetGiveUpAt(s v1alpha1.BenchmarkStatus, b *v1alpha1.Benchmark, now time.Time) time.Time {
	since := now
	if c := meta.FindStatusCondition(s.Conditions, v1alpha1.BenchmarkTargetResolved); c != nil && c.Status == metav1.ConditionFalse {
		since = c.LastTransitionTime.Time
	}
	return since.Add(targetWaitOf(b))
}

func completionTime(s v1alpha1.BenchmarkStatus, now time.Time) *metav1.Time {
	if s.CompletionTime != nil {
		return s.CompletionTime
	}
	return &metav1.Time{Time: now}
}

func completeMessage(res benchresults.Results, summary v1alpha1.BenchmarkSummary, dropped []string) string {
	msg := fmt.Sprintf("%d requests in %d step(s); %s", res.Requests, len(res.Steps), peakSentence(summary))
	if len(dropped) > 0 {
		msg += fmt.Sprintf("; the results ConfigMap left out %d item(s) to stay under 1 MiB (status.dropped)", len(dropped))
	}
	if len(res.Warnings) > 0 {
		msg += fmt.Sprintf("; %d warning(s), first: %s", len(res.Warnings), res.Warnings[0])
	}
	return msg
}

func peakSentence(s v1alpha1.BenchmarkSummary) string {
	if s.PeakRPS > 0 {
		return fmt.Sprintf("peak %d req/s (not client-bound), p99 %s", s.PeakRPS, s.P99)
	}
	return fmt.Sprintf("no step was free of the client limit: the server's capacity is at least %d req/s, not measured", s.MeasuredPeakRPS)
}

// phaseOf derives the display phase from the conditions.
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
