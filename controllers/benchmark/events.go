package benchmark

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
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

// recordTransitions emits one event per condition that became True in a status that was just written: the outcome
// (Complete or Failed) and ClientBound. Emitting after the write means a lost write does not repeat an event.
func (r *Reconciler) recordTransitions(ctx context.Context, before, after *v1alpha1.Benchmark) {
	became := func(t string) *metav1.Condition {
		if meta.IsStatusConditionTrue(before.Status.Conditions, t) || !meta.IsStatusConditionTrue(after.Status.Conditions, t) {
			return nil
		}
		return meta.FindStatusCondition(after.Status.Conditions, t)
	}
	if c := became(v1alpha1.BenchmarkClientBound); c != nil {
		r.Recorder.Event(after, corev1.EventTypeWarning, eventClientBound, c.Message)
	}
	if c := became(v1alpha1.BenchmarkTargetChanged); c != nil {
		r.Recorder.Event(after, corev1.EventTypeWarning, c.Reason, c.Message)
	}
	if c := became(v1alpha1.BenchmarkFailed); c != nil {
		r.Recorder.Event(after, corev1.EventTypeWarning, c.Reason, c.Message)
	}
	if c := became(v1alpha1.BenchmarkComplete); c != nil {
		r.Recorder.Eventf(after, corev1.EventTypeNormal, eventCompleted, "%s; results in ConfigMap %s", c.Message, after.Status.Results)
		if s := after.Status.Summary; s != nil {
			log.FromContext(ctx).Info("benchmark complete", "peak", s.Peak, "p99", s.P99, "verdict", s.Verdict)
		}
	}
}
