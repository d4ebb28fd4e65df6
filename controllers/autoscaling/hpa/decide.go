package hpa

import (
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Condition is a status condition the decision asks the caller to set (type, status, reason, message).
type Condition struct {
	Status  bool
	Reason  Reason
	Message string
}

// Input is one pass of the autoscaler for one target.
type Input struct {
	Now             time.Time
	CurrentReplicas int32
	MinReplicas     int32
	MaxReplicas     int32
	// Behavior must be complete (see WithDefaults).
	Behavior autoscalingv2.HorizontalPodAutoscalerBehavior
	// MetricReplicas is ReplicaCount's result; ignored when MetricErr is set.
	MetricReplicas int32
	MetricErr      error
	// MetricDescription names the metric in reasons and messages, e.g. "requests per second per pod".
	MetricDescription string
}

// Decision is what to do, and what to report.
type Decision struct {
	// DesiredReplicas is the new replica count; Rescale says it differs from the current one.
	DesiredReplicas int32
	Rescale         bool
	// Reason says why a rescale is wanted (as the HPA's SuccessfulRescale event does).
	Reason string
	// AbleToScale and ScalingActive are the conditions to set. AbleToScale is decided before the scale update:
	// the caller replaces it with SucceededRescale or FailedUpdateScale once the update ran.
	AbleToScale   Condition
	ScalingActive Condition
	// Limited/LimitReason/LimitMessage: the rate policies or min/max held the count back (HPA's ScalingLimited).
	Limited      bool
	LimitReason  Reason
	LimitMessage string
}

type recommendation struct {
	replicas int32
	at       time.Time
}

type scaleEvent struct {
	change int32
	at     time.Time
}

// State is what the HPA keeps in memory per target between passes: recent recommendations (stabilization) and
// recent scale events (rate policies). The zero value is ready to use.
type State struct {
	recommendations []recommendation
	upEvents        []scaleEvent
	downEvents      []scaleEvent
	seeded          bool
}

// Decide is one pass of the HPA's reconcileAutoscaler for one target: ScalingDisabled at 0 replicas, snap into
// [min, max] when outside it, else the metric's recommendation through stabilization and rate policies.
//
// One deliberate difference from the HPA: the first pass after State is created (operator start, or autoscaling
// turned on) seeds the recommendation history with the current replica count, so a restarted operator cannot
// scale down before a full scale-down stabilization window has passed.
func (s *State) Decide(in Input) Decision {
	if !s.seeded {
		s.seeded = true
		s.recommendations = append(s.recommendations, recommendation{in.CurrentReplicas, in.Now})
	}
	d := Decision{DesiredReplicas: in.CurrentReplicas}
	if in.MetricErr != nil {
		d.ScalingActive = Condition{false, ReasonFailedGetMetric, fmt.Sprintf("the autoscaler was unable to compute the replica count: %v", in.MetricErr)}
	} else {
		d.ScalingActive = Condition{true, ReasonValidMetricFound, fmt.Sprintf("the autoscaler was able to successfully calculate a replica count from %s", in.MetricDescription)}
	}
	d.AbleToScale = Condition{true, ReasonReadyForNewScale, "recommended size matches current size"}

	switch {
	case in.CurrentReplicas == 0 && in.MinReplicas != 0:
		d.ScalingActive = Condition{false, ReasonScalingDisabled, "scaling is disabled since the replica count of the target is zero"}
		return d
	case in.CurrentReplicas > in.MaxReplicas:
		d.DesiredReplicas = in.MaxReplicas
		d.Reason = "current number of replicas above maxReplicas"
	case in.CurrentReplicas < in.MinReplicas:
		d.DesiredReplicas = in.MinReplicas
		d.Reason = "current number of replicas below minReplicas"
	default:
		if in.MetricErr != nil {
			return d
		}
		desired := in.MetricReplicas
		if desired > in.CurrentReplicas {
			d.Reason = in.MetricDescription + " above target"
		} else if desired < in.CurrentReplicas {
			d.Reason = "all metrics below target"
		}
		d.DesiredReplicas = s.normalize(in, desired, &d)
	}
	d.Rescale = d.DesiredReplicas != in.CurrentReplicas
	return d
}

// normalize is normalizeDesiredReplicasWithBehaviors: stabilize, then apply the rate policies and min/max.
func (s *State) normalize(in Input, desired int32, d *Decision) int32 {
	stabilized, reason, message := s.stabilize(in, desired)
	if stabilized != desired {
		d.AbleToScale = Condition{true, reason, message}
	}
	limited, reason, message := s.rateLimit(in, stabilized)
	d.Limited = limited != stabilized
	d.LimitReason, d.LimitMessage = reason, message
	return limited
}

// stabilize bounds the recommendation by the lowest recommendation within the scale-up window and the highest
// within the scale-down window, then records the unstabilized recommendation.
func (s *State) stabilize(in Input, desired int32) (int32, Reason, string) {
	upCutoff := in.Now.Add(-time.Duration(*in.Behavior.ScaleUp.StabilizationWindowSeconds) * time.Second)
	downCutoff := in.Now.Add(-time.Duration(*in.Behavior.ScaleDown.StabilizationWindowSeconds) * time.Second)
	up, down := desired, desired
	kept := s.recommendations[:0]
	for _, r := range s.recommendations {
		if r.at.After(upCutoff) {
			up = min(up, r.replicas)
		}
		if r.at.After(downCutoff) {
			down = max(down, r.replicas)
		}
		if r.at.Before(upCutoff) && r.at.Before(downCutoff) {
			continue // outside both windows: no longer needed
		}
		kept = append(kept, r)
	}
	kept = append(kept, recommendation{desired, in.Now})
	s.recommendations = kept

	rec := in.CurrentReplicas
	if rec < up {
		rec = up
	}
	if rec > down {
		rec = down
	}
	if desired >= in.CurrentReplicas {
		return rec, ReasonScaleUpStabilized, "recent recommendations were lower than current one, applying the lowest recent recommendation"
	}
	return rec, ReasonScaleDownStabilized, "recent recommendations were higher than current one, applying the highest recent recommendation"
}

// rateLimit is convertDesiredReplicasWithBehaviorRate.
func (s *State) rateLimit(in Input, desired int32) (int32, Reason, string) {
	switch {
	case desired > in.CurrentReplicas:
		limit := scaleUpLimit(in.Now, in.CurrentReplicas, s.upEvents, s.downEvents, in.Behavior.ScaleUp)
		if limit < in.CurrentReplicas {
			limit = in.CurrentReplicas // no further scale-up until older scale-ups leave the period
		}
		maxAllowed := in.MaxReplicas
		reason, message := ReasonTooManyReplicas, "the desired replica count is more than the maximum replica count"
		if maxAllowed > limit {
			maxAllowed = limit
			reason, message = ReasonScaleUpLimit, "the desired replica count is increasing faster than the maximum scale rate"
		}
		if desired > maxAllowed {
			return maxAllowed, reason, message
		}
	case desired < in.CurrentReplicas:
		limit := scaleDownLimit(in.Now, in.CurrentReplicas, s.upEvents, s.downEvents, in.Behavior.ScaleDown)
		if limit > in.CurrentReplicas {
			limit = in.CurrentReplicas
		}
		minAllowed := in.MinReplicas
		reason, message := ReasonTooFewReplicas, "the desired replica count is less than the minimum replica count"
		if minAllowed < limit {
			minAllowed = limit
			reason, message = ReasonScaleDownLimit, "the desired replica count is decreasing faster than the maximum scale rate"
		}
		if desired < minAllowed {
			return minAllowed, reason, message
		}
	}
	return desired, ReasonDesiredWithinRange, "the desired count is within the acceptable range"
}

// scaleUpLimit is the highest count the scale-up policies allow now; each policy measures from the replica
// count at the start of its period (current minus scale-ups plus scale-downs within the period).
func scaleUpLimit(now time.Time, current int32, upEvents, downEvents []scaleEvent, rules *autoscalingv2.HPAScalingRules) int32 {
	sel := *rules.SelectPolicy
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MinInt32), maxInt32
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MaxInt32, minInt32
	}
	for _, p := range rules.Policies {
		start := current - changeInPeriod(now, p.PeriodSeconds, upEvents) + changeInPeriod(now, p.PeriodSeconds, downEvents)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			// rounded up, so a small target can always grow
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// scaleDownLimit is the lowest count the scale-down policies allow now.
func scaleDownLimit(now time.Time, current int32, upEvents, downEvents []scaleEvent, rules *autoscalingv2.HPAScalingRules) int32 {
	sel := *rules.SelectPolicy
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MaxInt32), minInt32
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MinInt32, maxInt32
	}
	for _, p := range rules.Policies {
		start := current - changeInPeriod(now, p.PeriodSeconds, upEvents) + changeInPeriod(now, p.PeriodSeconds, downEvents)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

func changeInPeriod(now time.Time, periodSeconds int32, events []scaleEvent) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var n int32
	for _, e := range events {
		if e.at.After(cutoff) {
			n += e.change
		}
	}
	return n
}

// RecordScale records a successful rescale from → to for the rate policies (HPA's storeScaleEvent), and forgets
// events older than the longest policy period of their direction.
func (s *State) RecordScale(now time.Time, behavior autoscalingv2.HorizontalPodAutoscalerBehavior, from, to int32) {
	switch {
	case to > from:
		s.upEvents = append(prune(now, s.upEvents, longestPeriod(behavior.ScaleUp)), scaleEvent{to - from, now})
	case to < from:
		s.downEvents = append(prune(now, s.downEvents, longestPeriod(behavior.ScaleDown)), scaleEvent{from - to, now})
	}
}

func prune(now time.Time, events []scaleEvent, periodSeconds int32) []scaleEvent {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	kept := events[:0]
	for _, e := range events {
		if !e.at.Before(cutoff) {
			kept = append(kept, e)
		}
	}
	return kept
}

func minInt32(a, b int32) int32 { return min(a, b) }
func maxInt32(a, b int32) int32 { return max(a, b) }
