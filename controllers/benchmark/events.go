package benchmark

import (
	"context"

	"hyperstatic.dev/hyperstatic/internal/reconcile"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Reasons of the events the controller records on Benchmarks (a failure's event carries the Failed reason).
const (
	eventStarted     = "Started"
	eventCompleted   = "Completed"
	eventClientBound = "ClientBound"
)

// polarity is the Benchmark conditions' polarity, declared beside their types: a transition to True of an
// abnormal-true one (Failed, ClientBound, TargetChanged) is a Warning.
var polarity = reconcile.NewPolarity(v1alpha1.BenchmarkAbnormalTrueConditions)

// recordTransitions emits one event per condition that became True in a status that was just written: the outcome
// (Complete or Failed) and ClientBound. It runs only once the write is in (reconcile.WriteStatus): a lost write does not repeat an event.
func (r *Reconciler) recordTransitions(ctx context.Context, before, after *v1alpha1.Benchmark) {
	became := func(t string) *metav1.Condition {
		if tr := reconcile.TransitionOf(before.Status.Conditions, after.Status.Conditions, t); tr.Became(metav1.ConditionTrue) {
			return tr.After
		}
		return nil
	}
	if c := became(v1alpha1.BenchmarkClientBound); c != nil {
		r.Recorder.Event(after, polarity.EventType(*c), eventClientBound, c.Message)
	}
	if c := became(v1alpha1.BenchmarkTargetChanged); c != nil {
		r.Recorder.Event(after, polarity.EventType(*c), c.Reason, c.Message)
	}
	if c := became(v1alpha1.BenchmarkFailed); c != nil {
		r.Recorder.Event(after, polarity.EventType(*c), c.Reason, c.Message)
	}
	if c := became(v1alpha1.BenchmarkComplete); c != nil {
		r.Recorder.Eventf(after, polarity.EventType(*c), eventCompleted, "%s; results in ConfigMap %s", c.Message, after.Status.Results)
		if s := after.Status.Summary; s != nil {
			log.FromContext(ctx).Info("benchmark complete", "peak", s.Peak, "p99", s.P99, "verdict", s.Verdict)
		}
	}
}
