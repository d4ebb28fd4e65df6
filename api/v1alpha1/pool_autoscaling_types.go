package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// PoolAutoscalingSpec scales a pool's server pods on the requests per second of all its sites together: the pool
// runs spec.replicas pods at least and maxReplicas at most, as many as the measured rate needs at
// targetRPSPerPod each. More pods are added at once; fewer only after the rate has stayed low for
// scaleDownDelaySeconds (docs/design/pools.md, "Scaling a pool").
type PoolAutoscalingSpec struct {
	// maxReplicas is the most pool pods the autoscaler runs; spec.replicas is the fewest.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +required
	MaxReplicas int32 `json:"maxReplicas"`
	// targetRPSPerPod is the requests per second each pool pod is given at most, summed over its sites: set it
	// below the pod's measured capacity (docs/bench/pools-*.md; a pool pod's capacity depends on how many of its
	// sites are hot).
	// +kubebuilder:validation:Minimum=1
	// +required
	TargetRPSPerPod int64 `json:"targetRPSPerPod"`
	// scaleDownDelaySeconds is how long the rate must have needed fewer pods before any is removed; the pool then
	// shrinks to the most pods that window needed.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +kubebuilder:default=300
	// +optional
	ScaleDownDelaySeconds *int32 `json:"scaleDownDelaySeconds,omitempty"`
}

// PoolAutoscalingStatus is the pool autoscaler's last reading and decision.
type PoolAutoscalingStatus struct {
	// currentRPS is the requests per second of the pool's sites over its ready pods at the last reading, rounded
	// (a lower bound when measured is false).
	// +optional
	CurrentRPS int64 `json:"currentRPS"`
	// measured is false when some ready pod or site could not be read or counted for a rate (a new pod, a counter
	// that started again): the rate is then a lower bound, enough to add pods, never to remove one.
	// +optional
	Measured bool `json:"measured"`
	// desiredReplicas is the pod count the autoscaler decided on: the server Deployment's replicas.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas"`
	// lastScaleTime is when desiredReplicas last changed.
	// +optional
	LastScaleTime *metav1.Time `json:"lastScaleTime,omitempty"`
	// message says why the pool has desiredReplicas pods, e.g. "1840 req/s at 1000 req/s per pod needs 2".
	// +optional
	Message string `json:"message,omitempty"`
}
