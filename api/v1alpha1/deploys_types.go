package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Deploys of a Git site (docs/design/deploys.md): the fetcher keeps the last spec.content.git.history deploys
// (checked bundles, one per commit) and every server pod keeps their trees, so pinning one (spec.content.git.pin,
// or the annotation AnnotationPin) is a rollback that neither refetches nor downloads: each pod flips to a tree
// already on its disk.

const (
	// DefaultGitHistory is spec.content.git.history when it is unset; MaxGitHistory its maximum (the fetcher's).
	DefaultGitHistory = 5
	MaxGitHistory     = 20

	// AnnotationPin pins a Git site to a deploy of its history, like spec.content.git.pin (which wins when both
	// are set): the quick way in an incident, even when a GitOps tool owns the spec. Remove it to unpin.
	AnnotationPin = "hyperstatic.dev/pin"

	// ConditionDeployPinned is True when every ready pod serves the pinned deploy, False (NotInHistory) when the
	// pin names no deploy of the history (production unchanged) or while pods still serve another, absent when
	// the site is not pinned. Not "Pinned": that condition is the CPU pinning of the server's workers.
	ConditionDeployPinned = "DeployPinned"

	// DeployPinned reasons.
	ReasonPinServed       = "PinServed"
	ReasonPinNotInHistory = "NotInHistory"
	ReasonPinRollingOut   = "PinRollingOut"
	ReasonPinNotDelivered = "PinNotDelivered"
	ReasonPinInvalid      = "InvalidPin"
)

// Deploy is one deploy of a Git site's history (status.deploys), newest fetched first.
type Deploy struct {
	// commit is the full hash of the deploy's commit.
	Commit string `json:"commit"`
	// bundle is the SHA-256 of the deploy's bundle (its tree).
	Bundle string `json:"bundle"`
	// committed is the commit's committer time.
	// +optional
	Committed *metav1.Time `json:"committed,omitempty"`
	// firstServed is when the fetcher first published it; absent when it never was (fetched while pinned).
	// +optional
	FirstServed *metav1.Time `json:"firstServed,omitempty"`
	// lastServed is when another deploy replaced it; absent while it is served or if it never was.
	// +optional
	LastServed *metav1.Time `json:"lastServed,omitempty"`
}

// SkewProtection is spec.server.skewProtection (docs/design/deploys.md, decision 3): for window after a deploy
// stopped being served, each server pod answers a GET or HEAD its current tree has no file for from the trees of
// the previous deploys it keeps (spec.content.git.history), unless the request is a page navigation
// (Sec-Fetch-Dest: document, or an Accept preferring text/html) or names an HTML file. After the window, a 404 as
// usual. Only Git sites keep previous deploys; elsewhere the setting changes nothing.
type SkewProtection struct {
	// window is how long a replaced deploy keeps answering, 1s to 168h (7 days); whole seconds (a fraction is
	// dropped). E.g. "1h".
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1s') && duration(self) <= duration('168h')",message="spec.server.skewProtection.window must be between 1s and 168h (7 days)"
	// +required
	Window metav1.Duration `json:"window"`
}
