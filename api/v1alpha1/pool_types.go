package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A StaticSitePool is a set of pinned, Guaranteed server pods that serve many StaticSites from one process each,
// chosen by Host: a site placed in a pool costs no pod of its own. The contract between the operator, the pool's
// content agents and the server is docs/design/pools.md.

// StaticSitePool condition types: Ready (normal-true), Reconciling and Stalled (abnormal-true, kstatus).
const (
	// PoolConditionReady is True when every pool pod is ready and serves the pool's current index.
	PoolConditionReady = "Ready"
)

// StaticSitePoolAbnormalTrueConditions are the pool conditions that are True when something needs attention
// (internal/reconcile.Polarity); Ready is normal-true.
var StaticSitePoolAbnormalTrueConditions = []string{ConditionReconciling, ConditionStalled}

// SiteLimits bound what one site may take from a pool, so that one tenant cannot take it from the others.
type SiteLimits struct {
	// maxFiles a site's tree may hold; a larger tree is refused (the site answers 503, its status says why).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=20000
	// +optional
	MaxFiles *int64 `json:"maxFiles,omitempty"`
	// maxBytes a site's tree may hold.
	// +kubebuilder:default="256Mi"
	// +optional
	MaxBytes *resource.Quantity `json:"maxBytes,omitempty"`
	// requestsPerSecond one site may be served by each pool pod; past it the pool answers 429.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=2000
	// +optional
	RequestsPerSecond *int64 `json:"requestsPerSecond,omitempty"`
}

// StaticSitePoolSpec is what a platform team declares.
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || !has(self.replicas) || self.autoscaling.maxReplicas >= self.replicas",message="spec.autoscaling.maxReplicas must be at least spec.replicas"
type StaticSitePoolSpec struct {
	// namespace the pool's pods, fetcher, index and mirrored content live in (platform-owned; not a tenant's).
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.namespace is immutable"
	// +required
	Namespace string `json:"namespace"`
	// namespaces whose StaticSites may be placed in the pool: a list of names, or ["*"] for every namespace.
	// Empty admits none.
	// +listType=set
	// +kubebuilder:validation:MaxItems=1024
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// replicas of the pool's server pods; with autoscaling, the fewest it runs.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:default=2
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`
	// autoscaling adds pool pods up to maxReplicas as the pool's sites' requests per second need them.
	// +optional
	Autoscaling *PoolAutoscalingSpec `json:"autoscaling,omitempty"`
	// cpu of each pool pod: whole CPUs are exclusive and pinned, as a site's.
	// +kubebuilder:default="1"
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// memory of each pool pod: the budget that holds the hot sites in memory; the rest is served from disk.
	// +kubebuilder:default="512Mi"
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// disk each pool pod gives its sites' trees (an emptyDir sizeLimit).
	// +kubebuilder:default="4Gi"
	// +optional
	Disk *resource.Quantity `json:"disk,omitempty"`
	// siteLimits apply to every site of the pool.
	// +optional
	SiteLimits SiteLimits `json:"siteLimits,omitempty"`
	// indexShards is the number of index ConfigMaps (docs/design/pools.md, "The index"). Fixed at creation.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +kubebuilder:default=16
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="spec.indexShards is immutable"
	// +optional
	IndexShards *int32 `json:"indexShards,omitempty"`
	// server is the server image of the pool's pods (default: the operator's).
	// +optional
	ServerImage string `json:"serverImage,omitempty"`
	// podTemplate overrides for the pool's server pods (scheduling, labels, annotations).
	// +optional
	PodTemplate PodTemplateOverrides `json:"podTemplate,omitempty"`
}

// StaticSitePoolStatus is rebuilt from the world on every reconcile.
type StaticSitePoolStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// conditions: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// replicas and readyReplicas of the pool's server pods.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// sites placed in the pool (in its index).
	// +optional
	Sites int32 `json:"sites,omitempty"`
	// refusedSites: sites that asked for the pool and were refused (namespace not admitted, a feature a pool
	// site cannot have); each such site's own status says why.
	// +optional
	RefusedSites int32 `json:"refusedSites,omitempty"`
	// indexRevision identifies the index the pool's pods are given (sha256 of its shards, 16 hex digits).
	// +optional
	IndexRevision string `json:"indexRevision,omitempty"`
	// autoscaling is the autoscaler's last reading and decision (spec.autoscaling).
	// +optional
	Autoscaling *PoolAutoscalingStatus `json:"autoscaling,omitempty"`
}

// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=hssp,categories=hyperstatic
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.readyReplicas`,description="ready pool pods"
// +kubebuilder:printcolumn:name="Sites",type=integer,JSONPath=`.status.sites`,description="sites placed in the pool"
// +kubebuilder:printcolumn:name="RPS",type=integer,JSONPath=`.status.autoscaling.currentRPS`,description="requests per second of all its sites (spec.autoscaling)"
// +kubebuilder:printcolumn:name="Want",type=integer,JSONPath=`.status.autoscaling.desiredReplicas`,priority=1,description="pods the autoscaler decided on"
// +kubebuilder:printcolumn:name="Refused",type=integer,JSONPath=`.status.refusedSites`,priority=1
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.spec.cpu`
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.spec.memory`
// +kubebuilder:printcolumn:name="Namespace",type=string,JSONPath=`.spec.namespace`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`

// StaticSitePool is a shared tier of server pods for many StaticSites.
type StaticSitePool struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StaticSitePoolSpec   `json:"spec,omitempty"`
	Status StaticSitePoolStatus `json:"status,omitempty"`
}

// +kubebuilder:object:root=true

// StaticSitePoolList is a list of StaticSitePools.
type StaticSitePoolList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StaticSitePool `json:"items"`
}

func init() {
	SchemeBuilder.Register(&StaticSitePool{}, &StaticSitePoolList{})
}
