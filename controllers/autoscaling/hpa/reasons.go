package hpa

// Reason is a condition or limit reason a Decision carries, spelled as the HorizontalPodAutoscaler spells it. The
// package stays free of Hyperstatic's API types; the controller maps the condition reasons to the API's constants
// in one place (controllers/autoscaling/conditions.go).
type Reason string

// Reasons of Decision.AbleToScale (True in every case Decide decides; the caller adds the scale update's outcome).
const (
	// ReasonReadyForNewScale: the recommendation matches the current count; nothing was held back.
	ReasonReadyForNewScale Reason = "ReadyForNewScale"
	// ReasonScaleUpStabilized: a lower recent recommendation held a scale-up back.
	ReasonScaleUpStabilized Reason = "ScaleUpStabilized"
	// ReasonScaleDownStabilized: a higher recent recommendation held a scale-down back.
	ReasonScaleDownStabilized Reason = "ScaleDownStabilized"
)

// Reasons of Decision.ScalingActive.
const (
	// ReasonValidMetricFound (True): the replica count was computed from the metric.
	ReasonValidMetricFound Reason = "ValidMetricFound"
	// ReasonFailedGetMetric (False): Input.MetricErr was set. The spelling is the requests-per-second autoscaler's
	// (the HPA's is FailedGetPodsMetric for a Pods metric).
	ReasonFailedGetMetric Reason = "FailedGetRPS"
	// ReasonScalingDisabled (False): the target has 0 replicas.
	ReasonScalingDisabled Reason = "ScalingDisabled"
)

// Reasons of Decision.LimitReason: what bounded the count after stabilization (the HPA's ScalingLimited reasons).
const (
	ReasonDesiredWithinRange Reason = "DesiredWithinRange"
	ReasonScaleUpLimit       Reason = "ScaleUpLimit"
	ReasonScaleDownLimit     Reason = "ScaleDownLimit"
	ReasonTooManyReplicas    Reason = "TooManyReplicas"
	ReasonTooFewReplicas     Reason = "TooFewReplicas"
)
