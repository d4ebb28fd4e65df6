package capacity

import (
	"fmt"
	"math"
	"time"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Decision is the gate's verdict on a measured candidate.
type Decision struct {
	Phase                 v1alpha1.PerformanceGatePhase // Passed or Blocked
	Reason                string                        // RolloutBlocked's reason: GatePassed, CapacityDropped or LatencyRose
	CapacityChangePercent int32
	P99ChangePercent      *int32 // nil when either p99 cannot be read
	Message               string
}

// MaxDropOf is spec.rollout.performanceGate.maxCapacityDropPercent or its default.
func MaxDropOf(g *v1alpha1.PerformanceGateSpec) int32 {
	if g == nil || g.MaxCapacityDropPercent == nil {
		return v1alpha1.DefaultMaxCapacityDropPercent
	}
	return *g.MaxCapacityDropPercent
}

// Decide compares a candidate's measurement with the serving template's. The candidate is blocked when its
// capacity per pod is lower by more than maxCapacityDropPercent, or, when maxP99IncreasePercent is set, when its p99
// is higher by more than that; otherwise it passes.
func Decide(baseline, canary v1alpha1.CapacityMeasurement, g *v1alpha1.PerformanceGateSpec) Decision {
	d := Decision{Phase: v1alpha1.GatePassed, Reason: v1alpha1.ReasonGatePassed, CapacityChangePercent: changePercent(float64(canary.RPSPerPod), float64(baseline.RPSPerPod))}
	if b, errB := time.ParseDuration(baseline.P99); errB == nil && b > 0 {
		if c, errC := time.ParseDuration(canary.P99); errC == nil {
			p := changePercent(float64(c), float64(b))
			d.P99ChangePercent = &p
		}
	}
	maxDrop := MaxDropOf(g)
	figures := fmt.Sprintf("candidate %s (%s) serves %d req/s per pod, %s the serving %d (limit %d%%)",
		canary.MeasuredAgainst.ID, describe(canary.MeasuredAgainst), canary.RPSPerPod, relative(d.CapacityChangePercent), baseline.RPSPerPod, maxDrop)
	switch {
	case -d.CapacityChangePercent > maxDrop:
		d.Phase, d.Reason = v1alpha1.GateBlocked, v1alpha1.ReasonCapacityDropped
	case g != nil && g.MaxP99IncreasePercent != nil && d.P99ChangePercent != nil && *d.P99ChangePercent > *g.MaxP99IncreasePercent:
		d.Phase, d.Reason = v1alpha1.GateBlocked, v1alpha1.ReasonLatencyRose
	}
	d.Message = figures
	p99 := fmt.Sprintf("; p99 %s against %s", canary.P99, baseline.P99)
	if d.P99ChangePercent != nil {
		p99 += fmt.Sprintf(" (%+d%%", *d.P99ChangePercent)
		if g != nil && g.MaxP99IncreasePercent != nil {
			p99 += fmt.Sprintf(", limit +%d%%", *g.MaxP99IncreasePercent)
		}
		p99 += ")"
	}
	d.Message += p99
	return d
}

// changePercent is (now - before) / before in whole percent, rounded toward the larger magnitude's nearest value.
func changePercent(now, before float64) int32 {
	if before <= 0 {
		return 0
	}
	return int32(math.Round((now - before) / before * 100))
}

func relative(p int32) string {
	switch {
	case p < 0:
		return fmt.Sprintf("%d%% less than", -p)
	case p > 0:
		return fmt.Sprintf("%d%% more than", p)
	}
	return "as much as"
}

// describe is a template's headline for messages: its server image and, when different, its content.
func describe(t v1alpha1.TemplateIdentity) string {
	s := "image " + t.ServerImage
	if t.ContentRevision != "" && t.ContentRevision != t.ServerImage {
		s += ", content " + t.ContentRevision
	}
	return s
}

// GateReason is the RolloutBlocked condition a gate status stands for: its status is True only for Blocked. It
// is derived from the status alone (no other memory): a Blocked gate without a canary figure could not measure
// the canary; otherwise the stored percentages say which limit it passed.
func GateReason(gate *v1alpha1.PerformanceGateStatus, g *v1alpha1.PerformanceGateSpec) (blocked bool, reason string) {
	switch gate.Phase {
	case v1alpha1.GatePassed:
		return false, v1alpha1.ReasonGatePassed
	case v1alpha1.GateOverridden:
		return false, v1alpha1.ReasonGateOverridden
	case v1alpha1.GateMeasuring:
		return false, v1alpha1.ReasonMeasuringCanary
	}
	switch {
	case gate.Canary == nil || gate.CapacityChangePercent == nil:
		return true, v1alpha1.ReasonCanaryFailed
	case -*gate.CapacityChangePercent > MaxDropOf(g):
		return true, v1alpha1.ReasonCapacityDropped
	default:
		return true, v1alpha1.ReasonLatencyRose
	}
}
