package staticsite

// What a pass of the capacity step records (docs/design/capacity.md): the figures and conditions deriveStatus puts
// into the status, and the events recorded once the status write is in.

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/capacity"
)

// Event reasons of capacity measurements (the gate's use RolloutBlocked's reasons).
const (
	eventCapacityMeasured = "CapacityMeasured"
)

// capacityState is what the capacity step measured and decided in a pass: deriveStatus puts it into the status,
// and the events and deletions wait for the status write.
type capacityState struct {
	wanted bool                            // a measurement is wanted at all (else status.capacity and the gate go)
	status *v1alpha1.CapacityStatus        // status.capacity
	gate   *v1alpha1.PerformanceGateStatus // status.performanceGate (nil: gate off, or no candidate yet)
	// measured is the CapacityMeasured condition (Type empty: none yet).
	measured metav1.Condition
	// measuringCanary is the Reconciling message while a canary is measured.
	measuringCanary string
	events          []pendingEvent
	// cleanup: the children of a measurement whose result is in the status, deleted once the status is written.
	cleanup []client.Object
}

type pendingEvent struct{ typ, reason, message string }

func (c *capacityState) event(typ, reason, format string, args ...any) {
	c.events = append(c.events, pendingEvent{typ: typ, reason: reason, message: fmt.Sprintf(format, args...)})
}

// measuring records a measurement under way.
func measuring(st *observation, job *measurementJob, msg string) {
	cs := &st.capacity
	if job.role == capacityRoleProbe {
		cs.measured = capacityCondition(metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity,
			fmt.Sprintf("measuring template %s: %s", job.identity.ID, msg))
		return
	}
	cs.gate.Phase = v1alpha1.GateMeasuring
	cs.gate.Message = fmt.Sprintf("measuring candidate %s on a canary pod: %s", job.identity.ID, msg)
	cs.measuringCanary = cs.gate.Message
}

// measurementFailed records a measurement that gave no figure; its children go once the status says so, and it is
// tried again after measurementRetry.
func measurementFailed(st *observation, job *measurementJob, reason, msg string, children ...client.Object) {
	cs := &st.capacity
	cs.cleanup = append(cs.cleanup, children...)
	st.requeue(measurementRetry)
	if job.role == capacityRoleProbe {
		cs.measured = capacityCondition(metav1.ConditionFalse, reason, fmt.Sprintf("template %s: %s (tried again in %s)", job.identity.ID, msg, measurementRetry))
		cs.event(corev1.EventTypeWarning, reason, "%s", cs.measured.Message)
		return
	}
	var baseline *v1alpha1.CapacityMeasurement
	if cs.status != nil {
		baseline = cs.status.CapacityMeasurement.DeepCopy()
	}
	cs.gate = &v1alpha1.PerformanceGateStatus{Candidate: cs.gate.Candidate, Phase: v1alpha1.GateBlocked, Baseline: baseline,
		DecidedAt: &metav1.Time{Time: st.now},
		Message:   fmt.Sprintf("candidate %s could not be measured (%s): %s; the serving pods keep their template, tried again in %s", job.identity.ID, reason, msg, measurementRetry)}
	cs.event(corev1.EventTypeWarning, v1alpha1.ReasonCanaryFailed, "%s", cs.gate.Message)
}

// measured records a figure: the serving template's capacity, or the gate's decision on the candidate.
func measured(st *observation, job *measurementJob, m v1alpha1.CapacityMeasurement, children ...client.Object) {
	cs := &st.capacity
	cs.cleanup = append(cs.cleanup, children...)
	if job.role == capacityRoleProbe {
		cs.status = &v1alpha1.CapacityStatus{CapacityMeasurement: m, Current: true, Request: job.request}
		cs.measured = measuredCondition(cs.status)
		cs.event(corev1.EventTypeNormal, eventCapacityMeasured, "%s", cs.measured.Message)
		return
	}
	baseline := cs.status.CapacityMeasurement.DeepCopy()
	d := capacity.Decide(*baseline, m, gateSpec(st.site))
	change := d.CapacityChangePercent
	cs.gate = &v1alpha1.PerformanceGateStatus{Candidate: cs.gate.Candidate, Phase: d.Phase, Baseline: baseline, Canary: m.DeepCopy(),
		CapacityChangePercent: &change, P99ChangePercent: d.P99ChangePercent, Message: d.Message, DecidedAt: &metav1.Time{Time: st.now}}
	if d.Phase == v1alpha1.GatePassed {
		cs.event(corev1.EventTypeNormal, d.Reason, "%s", d.Message)
		st.requeue(time.Second) // the next pass rolls the candidate out (a status write wakes no pass)
		return
	}
	cs.event(corev1.EventTypeWarning, d.Reason, "rollout blocked: %s; the serving pods keep template %s", d.Message, baseline.MeasuredAgainst.ID)
}

func capacityCondition(status metav1.ConditionStatus, reason, msg string) metav1.Condition {
	return metav1.Condition{Type: v1alpha1.ConditionCapacityMeasured, Status: status, Reason: reason, Message: msg}
}

// measuredCondition is CapacityMeasured for a figure.
func measuredCondition(c *v1alpha1.CapacityStatus) metav1.Condition {
	reason := v1alpha1.ReasonCapacityMeasured
	if c.Source == v1alpha1.CapacitySourceServerCPU {
		reason = v1alpha1.ReasonCapacityFromServerCPU
	}
	t := c.MeasuredAgainst
	cpu := ""
	if t.CPU != nil {
		cpu = ", cpu " + t.CPU.String()
	}
	return capacityCondition(metav1.ConditionTrue, reason, fmt.Sprintf("%d req/s per pod (%s, p99 %s) for template %s (image %s%s)",
		c.RPSPerPod, c.Source, c.P99, t.ID, t.ServerImage, cpu))
}

// recordCapacityEvents runs once the status is written: the events of the pass's capacity results.
func (r *Reconciler) recordCapacityEvents(site *v1alpha1.StaticSite, cs *capacityState) {
	for _, e := range cs.events {
		r.Recorder.Event(site, e.typ, e.reason, e.message)
	}
}
