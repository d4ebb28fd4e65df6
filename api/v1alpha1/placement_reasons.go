package v1alpha1

// Reasons of the Placed condition and of status.placement (docs/design/pools.md, "Status"). A refused placement
// uses the refusal's own reason (internal/poolplacement: PoolNotFound, NamespaceNotAdmitted, FeatureNotPooled,
// GitCredentialsNotPooled) or ReasonPoolsNotRunning, and makes the site Stalled; the site stays as it was.

// status.placement.reason: why the site runs where it runs.
const (
	// PlacementReasonRequested: spec.placement asks for it.
	PlacementReasonRequested = "Requested"
	// PlacementReasonPromoted (mode Auto): its traffic passed promoteAbove; it runs on its own pods. Also the
	// reason of the event recorded when the decision is made.
	PlacementReasonPromoted = "Promoted"
	// PlacementReasonDemoted (mode Auto): its traffic stayed below demoteBelow for demoteAfter; it runs in the
	// pool. Also the reason of the event recorded when the decision is made.
	PlacementReasonDemoted = "Demoted"
	// PlacementReasonAutomatic (mode Auto): no move yet; the site runs where it ran when it became Auto (the pool
	// for a new site).
	PlacementReasonAutomatic = "Automatic"
)

// Placed=True reasons.
const (
	// ReasonDedicated: the site runs on its own pods, as spec.placement asks.
	ReasonDedicated = "Dedicated"
	// ReasonServedByPool: every ready pod of the pool serves the site's current value and content.
	ReasonServedByPool = "ServedByPool"
)

// Placed=Unknown reasons: the move or the pool's report is under way.
const (
	// ReasonPoolNotReported: the pool has not reported the site yet (its first pass, or an operator restart).
	ReasonPoolNotReported = "PoolNotReported"
	// ReasonPoolCatchingUp: some ready pool pods do not serve the site's current value or content yet.
	ReasonPoolCatchingUp = "PoolCatchingUp"
	// ReasonMovingToDedicated: spec.placement went back to Dedicated; the pool serves the site until its own pods
	// are ready and the Service selects them.
	ReasonMovingToDedicated = "MovingToDedicated"
)

// Placed=False reasons.
const (
	// ReasonPoolFetchError: the pool's fetcher failed to fetch or bundle the site's content (the message has its
	// error); the pool keeps serving the last good bundle, if any.
	ReasonPoolFetchError = "FetchError"
	// ReasonPoolPodError: a pool pod refused the site's tree (e.g. past the pool's per-site limits).
	ReasonPoolPodError = "PodError"
	// ReasonNoReadyPoolPods: the pool has no ready pod.
	ReasonNoReadyPoolPods = "NoReadyPoolPods"
	// ReasonPoolsNotRunning: the operator runs without the pool controller, so no pool can serve the site.
	ReasonPoolsNotRunning = "PoolsNotRunning"
)

// Reconciling=True reasons of a site moving between its own pods and a pool (Ready as the serving side says).
const (
	// ReasonMovingToPool: the site waits for its pool to serve it; its own pods serve it meanwhile.
	ReasonMovingToPool = "MovingToPool"
	// ReasonWaitingForPool: a pool site the pool does not serve yet (no pod of its own serves it either).
	ReasonWaitingForPool = "WaitingForPool"
)
