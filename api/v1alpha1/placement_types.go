package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Where a StaticSite runs (spec.placement, status.placement): its own pods, a StaticSitePool (pool_types.go), or
// automatically between the two by its traffic. The contract is docs/design/pools.md; the decision of automatic
// placement is internal/autoplacement.

// Placement modes of spec.placement.mode.
const (
	// PlacementDedicated: the site runs on its own pods (the default, as before pools).
	PlacementDedicated = "Dedicated"
	// PlacementPool: the site runs in spec.placement.pool and has no pod of its own.
	PlacementPool = "Pool"
	// PlacementAuto: the site runs in spec.placement.pool while its traffic is low and on its own pods while it is
	// high (promoted above promoteAbove, demoted after demoteAfter below demoteBelow). It stays in the pool's
	// index while it runs on its own pods, so a demotion has no cold start.
	PlacementAuto = "Auto"
)

// StaticSite condition type for placement: True when the site runs where spec.placement says (for a pool site:
// it is in the pool's index and every ready pool pod serves its current value and content).
const ConditionPlaced = "Placed"

// PlacementSpec is where a StaticSite runs.
// +kubebuilder:validation:XValidation:rule="self.mode != 'Pool' || (has(self.pool) && size(self.pool) > 0)",message="spec.placement.pool is required when spec.placement.mode is Pool"
// +kubebuilder:validation:XValidation:rule="self.mode != 'Auto' || (has(self.pool) && size(self.pool) > 0)",message="spec.placement.pool is required when spec.placement.mode is Auto"
// +kubebuilder:validation:XValidation:rule="self.mode == 'Auto' || !(has(self.promoteAbove) || has(self.demoteBelow) || has(self.demoteAfter) || has(self.cooldown))",message="spec.placement.promoteAbove, demoteBelow, demoteAfter and cooldown apply to mode Auto only"
// +kubebuilder:validation:XValidation:rule="!has(self.promoteAbove) || !has(self.demoteBelow) || self.demoteBelow < self.promoteAbove",message="spec.placement.demoteBelow must be below spec.placement.promoteAbove"
// +kubebuilder:validation:XValidation:rule="!has(self.demoteAfter) || (duration(self.demoteAfter) >= duration('10s') && duration(self.demoteAfter) <= duration('168h'))",message="spec.placement.demoteAfter must be between 10s and 168h"
// +kubebuilder:validation:XValidation:rule="!has(self.cooldown) || (duration(self.cooldown) >= duration('0s') && duration(self.cooldown) <= duration('24h'))",message="spec.placement.cooldown must be between 0s and 24h"
type PlacementSpec struct {
	// mode: Dedicated (the default: the site's own pods), Pool (a shared StaticSitePool serves it; the site has
	// no pod of its own) or Auto (the pool while its traffic is low, its own pods while it is high).
	// +kubebuilder:validation:Enum=Dedicated;Pool;Auto
	// +kubebuilder:default=Dedicated
	// +optional
	Mode string `json:"mode,omitempty"`
	// pool is the name of a cluster-scoped StaticSitePool whose spec.namespaces admits the site's namespace.
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +optional
	Pool string `json:"pool,omitempty"`
	// promoteAbove (mode Auto) is the site's requests per second (every pod that serves it, the pool's and its
	// own) above which a site in the pool is promoted to its own pods. Default: half of what the pool lets one site
	// take (its spec.siteLimits.requestsPerSecond on each of its spec.replicas pods), and at least twice
	// demoteBelow.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000000
	// +optional
	PromoteAbove *int64 `json:"promoteAbove,omitempty"`
	// demoteBelow (mode Auto) is the requests per second below which a site on its own pods goes back to the pool,
	// once it stayed below for demoteAfter. 0 never demotes. Default: a tenth of promoteAbove.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000000
	// +optional
	DemoteBelow *int64 `json:"demoteBelow,omitempty"`
	// demoteAfter (mode Auto) is how long the rate must stay below demoteBelow before the site is demoted
	// (default 30m; 10s to 168h).
	// +optional
	DemoteAfter *metav1.Duration `json:"demoteAfter,omitempty"`
	// cooldown (mode Auto) is the least time between a promotion or demotion and the next move (default 5m; 0s to
	// 24h), so a site whose traffic swings around a threshold cannot flap.
	// +optional
	Cooldown *metav1.Duration `json:"cooldown,omitempty"`
}

// PlacementStatus says where a site runs and why.
type PlacementStatus struct {
	// mode the site runs in now: Dedicated or Pool.
	Mode string `json:"mode"`
	// pool serving the site, when mode is Pool.
	// +optional
	Pool string `json:"pool,omitempty"`
	// since when the site runs there.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// reason it runs there: Requested (spec.placement asks for it), Promoted or Demoted (mode Auto moved it),
	// Automatic (mode Auto keeps it where it was), MovingToPool or MovingToDedicated (a move is under way).
	// +optional
	Reason string `json:"reason,omitempty"`
	// servedBy is how many ready pool pods serve the site's current value and content; readyPods how many pool
	// pods are ready.
	// +optional
	ServedBy int32 `json:"servedBy,omitempty"`
	// +optional
	ReadyPods int32 `json:"readyPods,omitempty"`
	// auto is the last decision of automatic placement (spec.placement.mode Auto), kept across passes: where it
	// sends the site, why and when (the cooldown counts from it), and the thresholds in effect.
	// +optional
	Auto *AutoPlacementStatus `json:"auto,omitempty"`
}

// AutoPlacementStatus is automatic placement's last decision.
type AutoPlacementStatus struct {
	// target is where the decision sends the site: Dedicated or Pool.
	Target string `json:"target"`
	// reason of the decision: Promoted, Demoted, or Automatic (the first decision: where the site ran, or the
	// pool for a new site).
	Reason string `json:"reason"`
	// message says what was measured against which threshold.
	// +optional
	Message string `json:"message,omitempty"`
	// decidedAt is when the decision was made.
	DecidedAt metav1.Time `json:"decidedAt"`
	// promoteAbove and demoteBelow (requests per second), demoteAfter and cooldown are the thresholds in effect:
	// spec.placement's, or their defaults derived from the pool.
	PromoteAbove int64           `json:"promoteAbove"`
	DemoteBelow  int64           `json:"demoteBelow"`
	DemoteAfter  metav1.Duration `json:"demoteAfter"`
	Cooldown     metav1.Duration `json:"cooldown"`
}
