package benchmark

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

var (
	derivedAt = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	testPlan  = &k6script.Plan{BaseURL: "http://site.ns.svc:80", Parallelism: 2, Steps: make([]benchresults.PlanStep, 3)}
)

// want is one condition's expected status and reason; an empty status means the condition must be absent.
type want struct {
	status metav1.ConditionStatus
	reason string
}

func runningJob() *batchv1.Job {
	return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "b1"}, Status: batchv1.JobStatus{Active: 2}}
}

func results(requests int64, clientBound int, warnings ...string) *benchresults.Results {
	steps := make([]benchresults.Step, 3)
	for i := range steps {
		steps[i] = benchresults.Step{Index: i, Concurrency: int32(2 * (i + 1)), RPS: float64(100 * (i + 1)), Requests: requests / 3}
	}
	return &benchresults.Results{Steps: steps, Requests: requests, ClientBoundSteps: clientBound, PeakStep: 2,
		MeasuredPeakStep: 2, Warnings: warnings}
}

// withCondition is a status holding one condition that last changed at the given time.
func withCondition(t string, s metav1.ConditionStatus, reason string, at time.Time) v1alpha1.BenchmarkStatus {
	return v1alpha1.BenchmarkStatus{Conditions: []metav1.Condition{{Type: t, Status: s, Reason: reason, LastTransitionTime: metav1.NewTime(at)}}}
}

func TestDeriveStatus(t *testing.T) {
	type conds map[string]want
	pending := func(reason string) conds {
		return conds{v1alpha1.BenchmarkTargetResolved: {"False", reason}, v1alpha1.BenchmarkRunning: {"False", v1alpha1.BenchmarkReasonWaitingForTarget},
			v1alpha1.BenchmarkComplete: {"False", v1alpha1.BenchmarkReasonWaitingForTarget}, v1alpha1.BenchmarkFailed: {"False", v1alpha1.BenchmarkReasonWaitingForTarget},
			v1alpha1.BenchmarkClientBound: {}, v1alpha1.ConditionReconciling: {"True", reason}, v1alpha1.ConditionStalled: {}}
	}
	failed := func(reason string) conds {
		return conds{v1alpha1.BenchmarkFailed: {"True", reason}, v1alpha1.BenchmarkRunning: {"False", reason}, v1alpha1.BenchmarkComplete: {"False", reason},
			v1alpha1.ConditionStalled: {"True", reason}, v1alpha1.ConditionReconciling: {}}
	}
	serviceMissing := &problem{Reason: v1alpha1.BenchmarkReasonServiceNotFound, Message: "StaticSite site has no Service site yet"}
	recordedComplete := withCondition(v1alpha1.BenchmarkComplete, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResultsPublished, derivedAt.Add(-time.Hour))

	for _, tc := range []struct {
		name      string
		timeout   time.Duration // spec.timeout
		prev      v1alpha1.BenchmarkStatus
		o         observation
		phase     string
		conds     conds
		completed bool   // CompletionTime set to derivedAt
		message   string // a substring of the Failed (or else Complete) message
	}{{
		name:  "target missing, first pass",
		o:     observation{targetWait: serviceMissing},
		phase: v1alpha1.BenchmarkPhasePending, conds: pending(v1alpha1.BenchmarkReasonServiceNotFound),
	}, {
		name:  "target missing for less than the default wait",
		prev:  withCondition(v1alpha1.BenchmarkTargetResolved, metav1.ConditionFalse, v1alpha1.BenchmarkReasonNoReadyPod, derivedAt.Add(-targetWait+time.Second)),
		o:     observation{targetWait: serviceMissing},
		phase: v1alpha1.BenchmarkPhasePending, conds: pending(v1alpha1.BenchmarkReasonServiceNotFound),
	}, {
		name:  "target missing for the default wait",
		prev:  withCondition(v1alpha1.BenchmarkTargetResolved, metav1.ConditionFalse, v1alpha1.BenchmarkReasonServiceNotFound, derivedAt.Add(-targetWait)),
		o:     observation{targetWait: serviceMissing},
		phase: v1alpha1.BenchmarkPhaseFailed, conds: failed(v1alpha1.BenchmarkReasonTargetNotResolved), completed: true,
		message: "gave up after 10m0s: StaticSite site has no Service site yet",
	}, {
		name:    "target missing for spec.timeout",
		timeout: time.Minute,
		prev:    withCondition(v1alpha1.BenchmarkTargetResolved, metav1.ConditionFalse, v1alpha1.BenchmarkReasonServiceNotFound, derivedAt.Add(-time.Minute)),
		o:       observation{targetWait: serviceMissing},
		phase:   v1alpha1.BenchmarkPhaseFailed, conds: failed(v1alpha1.BenchmarkReasonTargetNotResolved), completed: true,
	}, {
		name: "job running",
		o:    observation{plan: testPlan, job: runningJob(), startAt: derivedAt.Add(time.Second)},
		conds: conds{v1alpha1.BenchmarkTargetResolved: {"True", v1alpha1.BenchmarkReasonResolved}, v1alpha1.BenchmarkRunning: {"True", v1alpha1.BenchmarkReasonJobRunning},
			v1alpha1.BenchmarkComplete: {"False", v1alpha1.BenchmarkReasonInProgress}, v1alpha1.BenchmarkFailed: {"False", v1alpha1.BenchmarkReasonInProgress},
			v1alpha1.BenchmarkClientBound: {}, v1alpha1.ConditionReconciling: {"True", v1alpha1.BenchmarkReasonJobRunning}, v1alpha1.ConditionStalled: {}},
		phase: v1alpha1.BenchmarkPhaseRunning,
	}, {
		name: "job completed",
		o:    observation{plan: testPlan, job: runningJob(), collected: results(3000, 0)},
		conds: conds{v1alpha1.BenchmarkComplete: {"True", v1alpha1.BenchmarkReasonResultsPublished}, v1alpha1.BenchmarkFailed: {"False", v1alpha1.BenchmarkReasonSucceeded},
			v1alpha1.BenchmarkRunning: {"False", v1alpha1.BenchmarkReasonFinished}, v1alpha1.BenchmarkClientBound: {"False", v1alpha1.BenchmarkReasonClientHadHeadroom},
			v1alpha1.ConditionReconciling: {}, v1alpha1.ConditionStalled: {}},
		phase: v1alpha1.BenchmarkPhaseComplete, completed: true, message: "3000 requests in 3 step(s); peak 300 req/s",
	}, {
		name:  "job completed, client-bound",
		o:     observation{plan: testPlan, job: runningJob(), collected: results(3000, 2)},
		conds: conds{v1alpha1.BenchmarkComplete: {"True", v1alpha1.BenchmarkReasonResultsPublished}, v1alpha1.BenchmarkClientBound: {"True", v1alpha1.BenchmarkReasonClientCPUSaturated}},
		phase: v1alpha1.BenchmarkPhaseComplete, completed: true,
	}, {
		name:  "job completed without a request",
		o:     observation{plan: testPlan, job: runningJob(), collected: results(0, 0)},
		conds: failed(v1alpha1.BenchmarkReasonNoResults),
		phase: v1alpha1.BenchmarkPhaseFailed, completed: true,
	}, {
		name: "job failed, partial results",
		o: observation{plan: testPlan, job: runningJob(), collected: results(300, 0, "pod b1-1-x: no result"),
			failure: &problem{Reason: v1alpha1.BenchmarkReasonJobFailed, Message: "the k6 Job failed (BackoffLimitExceeded): limit"}},
		conds: failed(v1alpha1.BenchmarkReasonJobFailed),
		phase: v1alpha1.BenchmarkPhaseFailed, completed: true,
		message: "the k6 Job failed (BackoffLimitExceeded): limit; pod b1-1-x: no result",
	}, {
		name:  "job deleted: no results, no ClientBound",
		prev:  v1alpha1.BenchmarkStatus{StartAt: &metav1.Time{Time: derivedAt.Add(-time.Minute)}},
		o:     observation{plan: testPlan, failure: &problem{Reason: v1alpha1.BenchmarkReasonJobDeleted, Message: "gone"}},
		conds: conds{v1alpha1.BenchmarkFailed: {"True", v1alpha1.BenchmarkReasonJobDeleted}, v1alpha1.BenchmarkClientBound: {}},
		phase: v1alpha1.BenchmarkPhaseFailed, completed: true,
	}, {
		name: "recorded outcome is never derived again",
		prev: recordedComplete,
		o:    observation{failure: &problem{Reason: v1alpha1.BenchmarkReasonJobDeleted, Message: "the Job is gone, deleted by cleanup"}},
		conds: conds{v1alpha1.BenchmarkComplete: {"True", v1alpha1.BenchmarkReasonResultsPublished}, v1alpha1.BenchmarkFailed: {},
			v1alpha1.ConditionReconciling: {}, v1alpha1.ConditionStalled: {}},
		phase: v1alpha1.BenchmarkPhaseComplete,
	}, {
		// A failure recorded before the operator set Stalled (an upgrade) gets it: kstatus then sees the record.
		name:  "recorded failure without Stalled",
		prev:  withCondition(v1alpha1.BenchmarkFailed, metav1.ConditionTrue, v1alpha1.BenchmarkReasonJobFailed, derivedAt.Add(-time.Hour)),
		conds: conds{v1alpha1.ConditionStalled: {"True", v1alpha1.BenchmarkReasonJobFailed}, v1alpha1.ConditionReconciling: {}},
		phase: v1alpha1.BenchmarkPhaseFailed,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBenchmark()
			b.Generation = 3
			if tc.timeout > 0 {
				b.Spec.Timeout = &metav1.Duration{Duration: tc.timeout}
			}
			b.Status = tc.prev
			prev := b.DeepCopy()
			tc.o.now = derivedAt
			s := deriveStatus(b, &tc.o)

			if !equality.Semantic.DeepEqual(prev, b) {
				t.Fatal("deriveStatus changed the Benchmark it read")
			}
			if s.Phase != tc.phase || s.ObservedGeneration != 3 {
				t.Errorf("phase %q observedGeneration %d, want %q 3", s.Phase, s.ObservedGeneration, tc.phase)
			}
			for typ, w := range tc.conds {
				c := meta.FindStatusCondition(s.Conditions, typ)
				switch {
				case w.status == "" && c != nil:
					t.Errorf("%s: %s/%s, want absent", typ, c.Status, c.Reason)
				case w.status == "":
				case c == nil:
					t.Errorf("%s: absent, want %s/%s", typ, w.status, w.reason)
				case c.Status != w.status || c.Reason != w.reason:
					t.Errorf("%s: %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, w.status, w.reason)
				}
			}
			if completed := s.CompletionTime != nil && s.CompletionTime.Time.Equal(derivedAt); completed != tc.completed {
				t.Errorf("completionTime %v, want set: %v", s.CompletionTime, tc.completed)
			}
			if tc.message != "" {
				c := meta.FindStatusCondition(s.Conditions, v1alpha1.BenchmarkFailed)
				if c == nil || c.Status != metav1.ConditionTrue {
					c = meta.FindStatusCondition(s.Conditions, v1alpha1.BenchmarkComplete)
				}
				if c == nil || !strings.Contains(c.Message, tc.message) {
					t.Errorf("message %+v, want it to contain %q", c, tc.message)
				}
			}
		})
	}
}

// A pass that sees the same world later writes nothing: transitions keep their time, nothing else moves.
func TestDeriveStatusIsStable(t *testing.T) {
	b := testBenchmark()
	o := observation{now: derivedAt, plan: testPlan, job: runningJob(), startAt: derivedAt.Add(15 * time.Second)}
	b.Status = deriveStatus(b, &o)
	o.now = derivedAt.Add(7 * time.Second)
	if again := deriveStatus(b, &o); !equality.Semantic.DeepEqual(again, b.Status) {
		t.Fatalf("status changed:\n%+v\n%+v", b.Status, again)
	}
	for _, c := range b.Status.Conditions {
		if !c.LastTransitionTime.Time.Equal(derivedAt) {
			t.Errorf("%s: transition at %s, want the clock's %s", c.Type, c.LastTransitionTime, derivedAt)
		}
	}
	if b.Status.Job != "b1" || b.Status.Target != testPlan.BaseURL || !b.Status.StartAt.Time.Equal(derivedAt.Add(15*time.Second)) {
		t.Errorf("observed facts: %+v", b.Status)
	}
}

func TestRunEnd(t *testing.T) {
	deadline := derivedAt.Add(time.Minute)
	withCond := func(c batchv1.JobConditionType) *batchv1.Job {
		j := runningJob()
		j.Status.Conditions = []batchv1.JobCondition{{Type: c, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "limit"}}
		return j
	}
	for _, tc := range []struct {
		name   string
		job    *batchv1.Job
		now    time.Time
		ended  bool
		reason string
	}{
		{"no job", nil, deadline, false, ""},
		{"running", runningJob(), deadline.Add(-time.Millisecond), false, ""},
		{"deadline reached", runningJob(), deadline, true, v1alpha1.BenchmarkReasonTimeout},
		{"complete after the deadline", withCond(batchv1.JobComplete), deadline.Add(time.Hour), true, ""},
		{"failed", withCond(batchv1.JobFailed), derivedAt, true, v1alpha1.BenchmarkReasonJobFailed},
	} {
		o := observation{now: tc.now, job: tc.job, deadline: deadline}
		ended, why := o.runEnd()
		reason := ""
		if why != nil {
			reason = why.Reason
		}
		if ended != tc.ended || reason != tc.reason {
			t.Errorf("%s: ended %v (%v), want %v %q", tc.name, ended, why, tc.ended, tc.reason)
		}
	}
}

func TestRequeueAfter(t *testing.T) {
	b := testBenchmark()
	b.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
	waitingSince := func(d time.Duration) v1alpha1.BenchmarkStatus {
		return withCondition(v1alpha1.BenchmarkTargetResolved, metav1.ConditionFalse, v1alpha1.BenchmarkReasonServiceNotFound, derivedAt.Add(-d))
	}
	wait := &problem{Reason: v1alpha1.BenchmarkReasonServiceNotFound, Message: ""}
	for _, tc := range []struct {
		name   string
		status v1alpha1.BenchmarkStatus
		o      observation
		want   time.Duration
	}{
		{"outcome recorded", withCondition(v1alpha1.BenchmarkFailed, metav1.ConditionTrue, v1alpha1.BenchmarkReasonJobFailed, derivedAt), observation{}, 0},
		{"waiting for the target", waitingSince(time.Second), observation{targetWait: wait}, pollInterval},
		{"giving up soon", waitingSince(time.Minute - 3*time.Second), observation{targetWait: wait}, 3 * time.Second},
		{"running, nothing due", v1alpha1.BenchmarkStatus{}, observation{job: runningJob(), deadline: derivedAt.Add(time.Hour)}, pollInterval},
		{"next sample point", v1alpha1.BenchmarkStatus{}, observation{job: runningJob(), nextSample: 2 * time.Second, deadline: derivedAt.Add(time.Hour)}, 2 * time.Second},
		{"deadline first", v1alpha1.BenchmarkStatus{}, observation{job: runningJob(), nextSample: 2 * time.Second, deadline: derivedAt.Add(time.Second)}, time.Second},
	} {
		b.Status = tc.status
		tc.o.now = derivedAt
		if got := requeueAfter(b, &tc.o); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestJobUnwanted(t *testing.T) {
	outcome := func(failedReason string) v1alpha1.BenchmarkStatus {
		if failedReason == "" {
			return withCondition(v1alpha1.BenchmarkComplete, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResultsPublished, derivedAt)
		}
		return withCondition(v1alpha1.BenchmarkFailed, metav1.ConditionTrue, failedReason, derivedAt)
	}
	for _, tc := range []struct {
		policy v1alpha1.BenchmarkCleanupPolicy
		failed string
		want   bool
	}{
		{"", "", true}, {v1alpha1.CleanupDeleteOnSuccess, "", true}, {v1alpha1.CleanupDeleteOnSuccess, v1alpha1.BenchmarkReasonJobFailed, false},
		{v1alpha1.CleanupDelete, v1alpha1.BenchmarkReasonJobFailed, true}, {v1alpha1.CleanupKeep, "", false},
		{v1alpha1.CleanupKeep, v1alpha1.BenchmarkReasonTimeout, true}, {v1alpha1.CleanupDeleteOnSuccess, v1alpha1.BenchmarkReasonTimeout, true},
	} {
		b := testBenchmark()
		b.Spec.Cleanup, b.Status = tc.policy, outcome(tc.failed)
		if got := jobUnwanted(b); got != tc.want {
			t.Errorf("cleanup %q, failed %q: %v, want %v", tc.policy, tc.failed, got, tc.want)
		}
	}
}
