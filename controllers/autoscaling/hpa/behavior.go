package hpa

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
)

// Defaults of autoscaling/v2 HorizontalPodAutoscalerBehavior (the API's defaulting plus the controller's
// --horizontal-pod-autoscaler-downscale-stabilization, 5 minutes, for an unset scale-down window).
const (
	DefaultScaleUpStabilizationSeconds   int32 = 0
	DefaultScaleDownStabilizationSeconds int32 = 300
	DefaultScaleUpPods                   int32 = 4
	DefaultScaleUpPercent                int32 = 100
	DefaultScaleDownPercent              int32 = 100
	DefaultPolicyPeriodSeconds           int32 = 15
)

// DefaultScaleUpRules: at most max(4 pods, 100 %) more every 15 s, no stabilization.
func DefaultScaleUpRules() autoscalingv2.HPAScalingRules {
	return autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To(DefaultScaleUpStabilizationSeconds),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PodsScalingPolicy, Value: DefaultScaleUpPods, PeriodSeconds: DefaultPolicyPeriodSeconds},
			{Type: autoscalingv2.PercentScalingPolicy, Value: DefaultScaleUpPercent, PeriodSeconds: DefaultPolicyPeriodSeconds},
		},
	}
}

// DefaultScaleDownRules: the highest recommendation of the last 300 s, then at most 100 % fewer every 15 s.
func DefaultScaleDownRules() autoscalingv2.HPAScalingRules {
	return autoscalingv2.HPAScalingRules{
		StabilizationWindowSeconds: ptr.To(DefaultScaleDownStabilizationSeconds),
		SelectPolicy:               ptr.To(autoscalingv2.MaxChangePolicySelect),
		Policies: []autoscalingv2.HPAScalingPolicy{
			{Type: autoscalingv2.PercentScalingPolicy, Value: DefaultScaleDownPercent, PeriodSeconds: DefaultPolicyPeriodSeconds},
		},
	}
}

// WithDefaults returns a complete behavior: every field the user left unset takes the autoscaling/v2 default,
// field by field, as the API server's defaulting of an HPA does (a user who sets only
// scaleDown.stabilizationWindowSeconds keeps the default scale-down policies).
func WithDefaults(b *autoscalingv2.HorizontalPodAutoscalerBehavior) autoscalingv2.HorizontalPodAutoscalerBehavior {
	up, down := DefaultScaleUpRules(), DefaultScaleDownRules()
	if b != nil {
		merge(&up, b.ScaleUp)
		merge(&down, b.ScaleDown)
	}
	return autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &up, ScaleDown: &down}
}

func merge(into *autoscalingv2.HPAScalingRules, from *autoscalingv2.HPAScalingRules) {
	if from == nil {
		return
	}
	if from.StabilizationWindowSeconds != nil {
		into.StabilizationWindowSeconds = ptr.To(*from.StabilizationWindowSeconds)
	}
	if from.SelectPolicy != nil {
		into.SelectPolicy = ptr.To(*from.SelectPolicy)
	}
	if from.Policies != nil {
		into.Policies = append([]autoscalingv2.HPAScalingPolicy(nil), from.Policies...)
	}
	if from.Tolerance != nil {
		t := from.Tolerance.DeepCopy()
		into.Tolerance = &t
	}
}

// TolerancesFor returns the dead band for a complete behavior: a per-direction tolerance when the behavior sets
// one, else the default (the site's spec.autoscaling.tolerance, or DefaultTolerance).
func TolerancesFor(b autoscalingv2.HorizontalPodAutoscalerBehavior, def float64) Tolerances {
	t := Tolerances{ScaleUp: def, ScaleDown: def}
	if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
		t.ScaleUp = b.ScaleUp.Tolerance.AsApproximateFloat64()
	}
	if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
		t.ScaleDown = b.ScaleDown.Tolerance.AsApproximateFloat64()
	}
	return t
}

func longestPeriod(r *autoscalingv2.HPAScalingRules) int32 {
	var longest int32
	for _, p := range r.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return longest
}
