package capacitygate

// What a pass of the capacity step records: the figures and conditions package staticsite puts into the status,
// and the events recorded once the status write is in.

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

// measuring records a measurement under way.
func measuring(st *pass, job *measurementJob, msg string) {
	cs := &st.cs
	if job.role == RoleProbe {
		cs.Measured = capacityCondition(metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity,
			fmt.Sprintf("measuring template %s: %s", job.identity.ID, msg))
		return
	}
	cs.Gate.Phase = v1alpha1.GateMeasuring
	cs.Gate.Message = fmt.Sprintf("measuring candidate %s on a canary pod: %s", job.identity.ID, msg)
	cs.MeasuringCanary = cs.Gate.Message
}

// measurementFailed records a measurement that gave no figure; its children go once the status says so, and it is
// tried again after MeasurementRetry.
func measurementFailed(st *pass, job *measurementJob, reason, msg string, children ...client.Object) {
	cs := &st.cs
	cs.Cleanup = append(cs.Cleanup, children...)
	st.requeue(MeasurementRetry)
	if job.role == RoleProbe {
		cs.Measured = capacityCondition(metav1.ConditionFalse, reason, fmt.Sprintf("template %s: %s (tried again in %s)", job.identity.ID, msg, MeasurementRetry))
		cs.event(corev1.EventTypeWarning, reason, "%s", cs.Measured.Message)
		return
	}
	var baseline *v1alpha1.CapacityMeasurement
	if cs.Status != nil {
		baseline = cs.Status.CapacityMeasurement.DeepCopy()
	}
	cs.Gate = &v1alpha1.PerformanceGateStatus{Candidate: cs.Gate.Candidate, Phase: v1alpha1.GateBlocked, Baseline: baseline,
		DecidedAt: &metav1.Time{Time: st.Now},
		Message:   fmt.Sprintf("candidate %s could not be measured (%s): %s; the serving pods keep their template, tried again in %s", job.identity.ID, reason, msg, MeasurementRetry)}
	cs.event(corev1.EventTypeWarning, v1alpha1.ReasonCanaryFailed, "%s", cs.Gate.Message)
}

// measured records a figure: the serving template's capacity, or the gate's decision on the candidate.
func measured(st *pass, job *measurementJob, m v1alpha1.CapacityMeasurement, children ...client.Object) {
	cs := &st.cs
	cs.Cleanup = append(cs.Cleanup, children...)
	if job.role == RoleProbe {
		cs.Status = &v1alpha1.CapacityStatus{CapacityMeasurement: m, Current: true, Request: job.request}
		cs.Measured = measuredCondition(cs.Status)
		cs.event(corev1.EventTypeNormal, eventCapacityMeasured, "%s", cs.Measured.Message)
		return
	}
	baseline := cs.Status.CapacityMeasurement.DeepCopy()
	d := capacity.Decide(*baseline, m, GateSpec(st.Site))
	change := d.CapacityChangePercent
	cs.Gate = &v1alpha1.PerformanceGateStatus{Candidate: cs.Gate.Candidate, Phase: d.Phase, Baseline: baseline, Canary: m.DeepCopy(),
		CapacityChangePercent: &change, P99ChangePercent: d.P99ChangePercent, Message: d.Message, DecidedAt: &metav1.Time{Time: st.Now}}
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
