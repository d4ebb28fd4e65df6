package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Previews of a Git site (issue 41, docs/design/deploys.md, decision 4): besides production, the site's fetcher
// follows its pull (merge) requests and the branches matching patterns, each checked and bundled as production is,
// and served by the site's own pods under <name>--<site>.<domain>, never under production's hostnames.
//
// As built (2026-12-03): the fetcher follows spec.previews and status.previews reports what it publishes; the
// server pods do NOT serve previews yet (the server's --sites mode and the puller's layout are built in
// content-agent, not wired by the operator), so every preview's ready is false. See deploys.md, "As built: step 5".

const (
	// DefaultPreviewsMax is spec.previews.max when unset; MaxPreviewsMax its maximum (the fetcher's).
	DefaultPreviewsMax = 10
	MaxPreviewsMax     = 50

	// Events of previews, recorded after the status write that holds them.
	EventPreviewPublished = "PreviewPublished"
	EventPreviewRemoved   = "PreviewRemoved"
	EventPreviewFailed    = "PreviewFailed"
)

// PreviewsSpec is spec.previews.
// +kubebuilder:validation:XValidation:rule="(has(self.pullRequests) && self.pullRequests) || (has(self.branches) && size(self.branches) > 0)",message="spec.previews needs pullRequests: true or at least one of spec.previews.branches"
type PreviewsSpec struct {
	// domain is the DNS domain of the previews' hostnames: a preview named pr-42 of site docs answers at
	// pr-42--docs.<domain>. The tenancy policy's hostnames must allow *.<domain>; one wildcard route covers them.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=200
	// +kubebuilder:validation:XValidation:rule="self.matches('^([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\\\\.)+[a-z]([a-z0-9-]{0,61}[a-z0-9])?$')",message="spec.previews.domain must be a lower-case DNS domain of at least two labels, without a wildcard or a trailing dot"
	// +required
	Domain string `json:"domain"`
	// pullRequests previews every pull request (GitHub and Gitea refs/pull/N/head, named pr-N) and merge request
	// (GitLab refs/merge-requests/N/head, named mr-N) of the repository; found by polling at the site's interval,
	// at once on the forge's pull-request webhook (spec.content.git.webhookSecretRef).
	// +optional
	PullRequests bool `json:"pullRequests,omitempty"`
	// branches are patterns of branch names to preview (Go's path.Match: "feature/*" takes feature/login, not
	// feature/a/b). The branch production follows is never a preview.
	// +kubebuilder:validation:MaxItems=20
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=atomic
	// +optional
	Branches []string `json:"branches,omitempty"`
	// ttl is how long a commit stays previewed after it was first published (a new commit on its ref starts
	// again), 1m to 720h (30 days); unset: as long as its ref lives.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m') && duration(self) <= duration('720h')",message="spec.previews.ttl must be between 1m and 720h (30 days)"
	// +optional
	TTL *metav1.Duration `json:"ttl,omitempty"`
	// max is the most previews at once, 1 to 50 (and at most the tenancy policy's previews.max); the newest pull
	// requests first, then branches by name; previews published keep their places.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=50
	// +optional
	Max *int32 `json:"max,omitempty"`
}

// PreviewStatus is one preview in status.previews, from the site's fetcher (what it publishes) and its pods (what
// they serve); nothing a pod says is taken unchecked.
type PreviewStatus struct {
	// name is the preview's name: pr-N, mr-N, or a branch's slug.
	Name string `json:"name"`
	// url is where it is served: http://<name>--<site>.<domain>/.
	URL string `json:"url"`
	// ref is the ref it follows.
	Ref string `json:"ref"`
	// commit is the commit published; absent while none is (its first commit failed: see error).
	// +optional
	Commit string `json:"commit,omitempty"`
	// since is when that commit was first published.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
	// ready is true when every ready server pod serves the commit.
	Ready bool `json:"ready"`
	// error says why the last commit of its ref is not published (it failed the content check, was too large...);
	// the previous good commit, if any, is still the one published.
	// +optional
	Error string `json:"error,omitempty"`
}
