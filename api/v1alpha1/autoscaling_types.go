package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// AutoscalingSpec configures the operator's requests-per-second autoscaler for a StaticSite.
// When it is set the operator owns spec.replicas (through the scale subresource, like `kubectl scale`);
// when it is unset the operator never changes spec.replicas, so a user's own HPA or KEDA ScaledObject can
// target the StaticSite's /scale subresource instead (see docs/autoscaling.md).
//
// The decision is the HorizontalPodAutoscaler v2 algorithm applied to a Pods-type metric: the average
// requests per second of the site's ready pods against the per-pod target.
//
// +kubebuilder:validation:XValidation:rule="has(self.targetUtilization) || has(self.targetRPSPerPod) || has(self.targetRPSPerCPU)",message="spec.autoscaling needs a target: targetUtilization (of the measured capacity), targetRPSPerPod or targetRPSPerCPU"
// +kubebuilder:validation:XValidation:rule="!(has(self.targetRPSPerPod) && has(self.targetRPSPerCPU))",message="set at most one of spec.autoscaling.targetRPSPerPod and spec.autoscaling.targetRPSPerCPU"
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || self.minReplicas <= self.maxReplicas",message="spec.autoscaling.minReplicas must be less than or equal to spec.autoscaling.maxReplicas"
type AutoscalingSpec struct {
	// minReplicas is the lower limit for the number of replicas the autoscaler sets. Default 1.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=1
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// maxReplicas is the upper limit for the number of replicas the autoscaler sets.
	// +kubebuilder:validation:Minimum=1
	// +required
	MaxReplicas int32 `json:"maxReplicas"`

	// targetUtilization is the share, in percent, of the measured capacity per pod (status.capacity.rpsPerPod)
	// each ready pod should serve: 70 targets 70 % of what one pod was measured to serve. While no current
	// measurement exists the autoscaler uses targetRPSPerPod or targetRPSPerCPU when set, else the default of
	// 5000 requests per second per CPU of spec.cpu; status.autoscaling.targetSource says which.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	TargetUtilization *int32 `json:"targetUtilization,omitempty"`

	// targetRPSPerPod is the average requests per second each ready pod should serve.
	// At most one of targetRPSPerPod and targetRPSPerCPU is set; with targetUtilization it is the fallback.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TargetRPSPerPod *int64 `json:"targetRPSPerPod,omitempty"`

	// targetRPSPerCPU is the average requests per second per CPU of spec.cpu each ready pod should serve:
	// the per-pod target is targetRPSPerCPU × spec.cpu (e.g. 20000 with cpu "2" targets 40000 req/s per pod,
	// with cpu "250m" 5000 req/s per pod). At most one of targetRPSPerPod and targetRPSPerCPU is set; with
	// targetUtilization it is the fallback.
	// +kubebuilder:validation:Minimum=1
	// +optional
	TargetRPSPerCPU *int64 `json:"targetRPSPerCPU,omitempty"`

	// tolerance is the relative distance from the target within which the autoscaler does not act, as a
	// quantity: "0.1" or "100m" both mean 10 % (the HPA default, used when unset). A usage ratio
	// observed/target inside [1 - tolerance, 1 + tolerance] keeps the current replica count.
	// behavior.scaleUp.tolerance / behavior.scaleDown.tolerance, when set, override it per direction,
	// as they do for an autoscaling/v2 HPA.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('0')) >= 0 && quantity(string(self)).isLessThan(quantity('1'))",message="spec.autoscaling.tolerance must be at least 0 and less than 1"
	// +optional
	Tolerance *resource.Quantity `json:"tolerance,omitempty"`

	// behavior configures the scaling behavior in the up and down directions, with the same shape and the
	// same defaults as an autoscaling/v2 HorizontalPodAutoscaler: scale up by at most max(4 pods, 100 %)
	// per 15 s with no stabilization; scale down by at most 100 % per 15 s after a 300 s stabilization
	// window (the highest recommendation of the last 300 s wins).
	//
	// It is validated as an HPA's behavior is (kube-apiserver's validateScalingRules): an empty policy list or
	// a policy of an unknown type, which would silently allow no scale-up at all, is refused.
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleUp) || !has(self.scaleUp.policies) || size(self.scaleUp.policies) > 0",message="spec.autoscaling.behavior.scaleUp.policies must list at least one policy (omit it for the defaults; selectPolicy Disabled turns scaleUp off)"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleUp) || !has(self.scaleUp.policies) || self.scaleUp.policies.all(p, p.type == 'Pods' || p.type == 'Percent')",message="spec.autoscaling.behavior.scaleUp.policies[*].type must be Pods or Percent"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleUp) || !has(self.scaleUp.policies) || self.scaleUp.policies.all(p, p.value > 0)",message="spec.autoscaling.behavior.scaleUp.policies[*].value must be greater than zero"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleUp) || !has(self.scaleUp.policies) || self.scaleUp.policies.all(p, p.periodSeconds > 0 && p.periodSeconds <= 1800)",message="spec.autoscaling.behavior.scaleUp.policies[*].periodSeconds must be greater than zero and at most 1800"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleUp) || !has(self.scaleUp.selectPolicy) || self.scaleUp.selectPolicy in ['Max', 'Min', 'Disabled']",message="spec.autoscaling.behavior.scaleUp.selectPolicy must be Max, Min or Disabled"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleUp) || !has(self.scaleUp.stabilizationWindowSeconds) || (self.scaleUp.stabilizationWindowSeconds >= 0 && self.scaleUp.stabilizationWindowSeconds <= 3600)",message="spec.autoscaling.behavior.scaleUp.stabilizationWindowSeconds must be between 0 and 3600"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleUp) || !has(self.scaleUp.tolerance) || quantity(string(self.scaleUp.tolerance)).compareTo(quantity('0')) >= 0",message="spec.autoscaling.behavior.scaleUp.tolerance must be at least 0"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleDown) || !has(self.scaleDown.policies) || size(self.scaleDown.policies) > 0",message="spec.autoscaling.behavior.scaleDown.policies must list at least one policy (omit it for the defaults; selectPolicy Disabled turns scaleDown off)"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleDown) || !has(self.scaleDown.policies) || self.scaleDown.policies.all(p, p.type == 'Pods' || p.type == 'Percent')",message="spec.autoscaling.behavior.scaleDown.policies[*].type must be Pods or Percent"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleDown) || !has(self.scaleDown.policies) || self.scaleDown.policies.all(p, p.value > 0)",message="spec.autoscaling.behavior.scaleDown.policies[*].value must be greater than zero"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleDown) || !has(self.scaleDown.policies) || self.scaleDown.policies.all(p, p.periodSeconds > 0 && p.periodSeconds <= 1800)",message="spec.autoscaling.behavior.scaleDown.policies[*].periodSeconds must be greater than zero and at most 1800"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleDown) || !has(self.scaleDown.selectPolicy) || self.scaleDown.selectPolicy in ['Max', 'Min', 'Disabled']",message="spec.autoscaling.behavior.scaleDown.selectPolicy must be Max, Min or Disabled"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleDown) || !has(self.scaleDown.stabilizationWindowSeconds) || (self.scaleDown.stabilizationWindowSeconds >= 0 && self.scaleDown.stabilizationWindowSeconds <= 3600)",message="spec.autoscaling.behavior.scaleDown.stabilizationWindowSeconds must be between 0 and 3600"
	// +kubebuilder:validation:XValidation:rule="!has(self.scaleDown) || !has(self.scaleDown.tolerance) || quantity(string(self.scaleDown.tolerance)).compareTo(quantity('0')) >= 0",message="spec.autoscaling.behavior.scaleDown.tolerance must be at least 0"
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// AutoscalingStatus is what the autoscaler last observed and decided. The conditions AbleToScale and
// ScalingActive (in status.conditions) say whether it can act and why not.
type AutoscalingStatus struct {
	// currentRPS is the total requests per second served by the site's measured pods, rounded.
	// +optional
	CurrentRPS int64 `json:"currentRPS"`

	// currentAverageRPS is the average requests per second per measured pod, rounded; this is the number
	// compared with targetRPSPerPod.
	// +optional
	CurrentAverageRPS int64 `json:"currentAverageRPS"`

	// targetRPSPerPod is the effective per-pod target (targetUtilization × status.capacity.rpsPerPod, spec
	// targetRPSPerPod, targetRPSPerCPU × spec.cpu, or the default 5000 × spec.cpu).
	// +optional
	TargetRPSPerPod int64 `json:"targetRPSPerPod,omitempty"`

	// targetSource says where targetRPSPerPod comes from: Capacity, TargetRPSPerPod, TargetRPSPerCPU or Default.
	// +optional
	TargetSource AutoscalingTargetSource `json:"targetSource,omitempty"`

	// targetMessage explains the target in words, e.g. "70% of 2143 req/s measured (ServerCPU) for template 1a2b3c".
	// +optional
	TargetMessage string `json:"targetMessage,omitempty"`

	// measuredPods is the number of ready pods whose request rate was known at the last decision.
	// +optional
	MeasuredPods int32 `json:"measuredPods"`

	// currentReplicas is spec.replicas as the autoscaler read it through the scale subresource.
	// +optional
	CurrentReplicas int32 `json:"currentReplicas"`

	// desiredReplicas is the replica count the autoscaler last decided on.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas"`

	// lastScaleTime is when the autoscaler last changed spec.replicas.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
}

// AutoscalingTargetSource is where the autoscaler's per-pod target comes from.
// +kubebuilder:validation:Enum=Capacity;TargetRPSPerPod;TargetRPSPerCPU;Default
type AutoscalingTargetSource string

const (
	TargetFromCapacity        AutoscalingTargetSource = "Capacity"
	TargetFromTargetRPSPerPod AutoscalingTargetSource = "TargetRPSPerPod"
	TargetFromTargetRPSPerCPU AutoscalingTargetSource = "TargetRPSPerCPU"
	TargetFromDefault         AutoscalingTargetSource = "Default"

	// DefaultTargetRPSPerCPU is the per-CPU target of targetUtilization while no capacity is measured and no explicit
	// target is set: a conservative eighth of what the hyperstatic server serves per CPU-second on small files.
	DefaultTargetRPSPerCPU = 5000
)

// Condition types the autoscaler sets on a StaticSite (positive polarity: True is the healthy state).
const (
	// ConditionAbleToScale: True when the autoscaler can read and update the scale subresource; its reason
	// says whether a rescale happened or a stabilization window held one back (ReadyForNewScale,
	// SucceededRescale, ScaleDownStabilized, ScaleUpStabilized); False with FailedGetScale/FailedUpdateScale.
	ConditionAbleToScale = "AbleToScale"
	// ConditionScalingActive: True (ValidMetricFound) when a replica count could be computed from requests
	// per second; False when it could not (FailedGetRPS, InvalidSpec) or scaling is disabled because
	// spec.replicas is 0 (ScalingDisabled).
	ConditionScalingActive = "ScalingActive"
)
