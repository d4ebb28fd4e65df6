package v1alpha1

// Reasons the autoscaler (controllers/autoscaling) writes on its conditions, grouped by the condition and status
// they go with, and the reasons of its events. Polarity (kstatus): AbleToScale and ScalingActive are normal-true
// (True is healthy). The spellings are the HorizontalPodAutoscaler's where an HPA has the same state, so people and
// tools that read HPA conditions read these the same way. docs/autoscaling.md lists them for users.

// AbleToScale reasons. True: the autoscaler can read and update the scale subresource; the reason says what this
// pass did with it. False: it could not.
const (
	// True: the recommendation matches the current replica count; nothing was held back.
	ReasonReadyForNewScale = "ReadyForNewScale"
	// True: this pass changed spec.replicas through the scale subresource (a Rescaled event says why).
	ReasonSucceededRescale = "SucceededRescale"
	// True: a lower recommendation within the scale-up stabilization window held a scale-up back.
	ReasonScaleUpStabilized = "ScaleUpStabilized"
	// True: a higher recommendation within the scale-down stabilization window held a scale-down back.
	ReasonScaleDownStabilized = "ScaleDownStabilized"

	// False: updating the scale subresource failed (a FailedRescale event says why); the next pass decides again.
	ReasonFailedUpdateScale = "FailedUpdateScale"
)

// ScalingActive reasons. True: a replica count could be computed from requests per second. False: it could not,
// or scaling is suspended.
const (
	// True: at least one ready pod had a request rate, and the replica count was computed from it.
	ReasonValidMetricFound = "ValidMetricFound"

	// False: no ready pod had a request rate (no pods, scrapes failing, or every pod just started).
	ReasonFailedGetRPS = "FailedGetRPS"
	// False: spec.autoscaling cannot give a per-pod target (only possible for objects that bypassed validation).
	// Named for the field it is about; the value is the HPA's "InvalidSpec".
	ReasonInvalidAutoscalingSpec = "InvalidSpec"
	// False: spec.replicas is 0 (someone scaled the site to zero); autoscaling resumes once it is scaled back up.
	ReasonScalingDisabled = "ScalingDisabled"
)

// Reasons of the events the autoscaler records on a StaticSite.
const (
	// EventReasonRescaled (Normal): spec.replicas was changed; the message has from → to, why, and the figures.
	EventReasonRescaled = "Rescaled"
	// EventReasonFailedRescale (Warning): the scale update was refused; the message has the API's answer.
	EventReasonFailedRescale = "FailedRescale"
)
