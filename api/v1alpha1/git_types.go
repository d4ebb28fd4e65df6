package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Content from Git (docs/design/git-content.md): one fetcher pod per site follows the repository, checks each
// new commit's tree with the server's --check and publishes it as a digest-addressed bundle; a puller sidecar in
// every server pod takes each new bundle and swaps it in whole, so a visitor never gets a mix of two commits and
// every replica converges on the fetcher's commit. The operator itself never connects to the repository.

// Defaults of spec.content.git, applied by the controller (not the schema) so that a tenancy cap can lower them.
const (
	// DefaultGitInterval is spec.content.git.interval when it is unset.
	DefaultGitInterval = "1m"
	// DefaultGitMaxSize is spec.content.git.maxSize when it is unset: the limit of the fetched pack and, again, of
	// the served tree's files.
	DefaultGitMaxSize = "512Mi"
	// DefaultGitFetcherMemory is spec.content.git.fetcherMemory when it is unset.
	DefaultGitFetcherMemory = "256Mi"
)

// GitContent follows a Git repository: a branch (every new commit is served), a tag or a commit.
// +kubebuilder:validation:XValidation:rule="!has(self.interval) || duration(self.interval) >= duration('10s')",message="spec.content.git.interval must be at least 10s"
// +kubebuilder:validation:XValidation:rule="!has(self.maxSize) || (quantity(string(self.maxSize)).isGreaterThan(quantity('0')) && quantity(string(self.maxSize)).compareTo(quantity('16Gi')) <= 0)",message="spec.content.git.maxSize must be greater than 0 and at most 16Gi"
// +kubebuilder:validation:XValidation:rule="!has(self.fetcherMemory) || quantity(string(self.fetcherMemory)).compareTo(quantity('64Mi')) >= 0",message="spec.content.git.fetcherMemory must be at least 64Mi"
type GitContent struct {
	// url of the repository: https://host/path, ssh://user@host[:port]/path or user@host:path (SSH), or http://
	// without credentials. Credentials never go in the URL: use secretRef.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=2048
	// +kubebuilder:validation:XValidation:rule="self.matches('^(https?|ssh)://[^\\\\s/@]+(@[^\\\\s/@]+)?(/[^\\\\s]*)?$') || self.matches('^[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\\\\s/][^\\\\s]*$')",message="spec.content.git.url must be https://HOST/PATH, http://HOST/PATH, ssh://[USER@]HOST[:PORT]/PATH or USER@HOST:PATH"
	// +kubebuilder:validation:XValidation:rule="!self.matches('^https?://[^/@]*@')",message="spec.content.git.url must not carry credentials: put them in the Secret of spec.content.git.secretRef"
	// +required
	URL string `json:"url"`

	// ref is a branch (e.g. main or refs/heads/main: every new commit is served), a tag (v1.2.0 or
	// refs/tags/v1.2.0) or a full 40-character commit hash.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.matches('^[^\\\\s~^:?*\\\\[\\\\\\\\]+$') && !self.contains('..') && !self.contains('@{') && !self.startsWith('/') && !self.endsWith('/') && !self.endsWith('.lock')",message="spec.content.git.ref must be a branch, tag or commit hash (no spaces, '..', '~', '^', ':', '?', '*', '[', backslash or '@{')"
	// +required
	Ref string `json:"ref"`

	// path is the directory of the repository to serve, e.g. public or site/build (default: the whole
	// repository).
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(s, s == '..')",message="spec.content.git.path must be a relative path without '..'"
	// +optional
	Path string `json:"path,omitempty"`

	// interval between two fetches when no webhook announces a push (default 1m, at least 10s).
	// +optional
	Interval *metav1.Duration `json:"interval,omitempty"`

	// secretRef names a Secret of the site's namespace with the credentials, in the keys Flux's GitRepository
	// reads: username and password (a token as password works) or bearerToken for HTTPS, ca.crt for a forge whose
	// certificate an internal CA signed; identity (a private key), known_hosts (required: the host key is pinned)
	// and an optional password (the key's passphrase) for SSH. It is mounted into the fetcher pod only, never
	// into the server pods; a change is taken at the next fetch without a restart.
	// +optional
	SecretRef *LocalObjectReference `json:"secretRef,omitempty"`

	// webhookSecretRef names a Secret of the site's namespace whose key "token" authenticates push webhooks
	// (GitHub and Gitea: the HMAC key; GitLab: the token). With it, the fetcher answers POST /hooks on the
	// Service <site>-git-webhook (port 80), which the operator never exposes: route a public path to it (an
	// Ingress or HTTPRoute) so the forge can reach it. A push to the followed branch is served in seconds.
	// +optional
	WebhookSecretRef *LocalObjectReference `json:"webhookSecretRef,omitempty"`

	// maxSize bounds the fetched pack and, again, the files of the served tree (default 512Mi; at most the
	// tenancy policy's git.maxSize). A commit over it is refused (GitTooLarge) and the last good one keeps serving.
	// +optional
	MaxSize *resource.Quantity `json:"maxSize,omitempty"`

	// maxEntries bounds the files, directories and links of the served tree (default 100000; each entry also
	// takes 512 bytes of maxSize). A commit over it, such as a tree that repeats one subtree many times (a pack
	// of a few KB, millions of empty files), is refused (GitTooLarge, naming the limit and the path) and the last
	// good one keeps serving.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	MaxEntries *int32 `json:"maxEntries,omitempty"`

	// maxDepth bounds the path components of an entry of the served tree (default 64): a deeper commit is
	// refused (GitTooLarge) and the last good one keeps serving.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +optional
	MaxDepth *int32 `json:"maxDepth,omitempty"`

	// fetcherMemory is the memory request and limit of the fetcher pod (default 256Mi; at least 64Mi). The fetch
	// streams the pack to disk, so memory grows slowly with the repository: docs/staticsite.md gives measured
	// figures.
	// +optional
	FetcherMemory *resource.Quantity `json:"fetcherMemory,omitempty"`

	// history is how many deploys (the bundles of the last commits fetched) the fetcher keeps and every server
	// pod keeps as trees, for a rollback by pin (default 5, at most 20). Each costs up to maxSize of the pods'
	// disk: the work volumes are sized for history+1 trees.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=20
	// +optional
	History *int32 `json:"history,omitempty"`

	// pin is the full commit hash of a deploy of status.deploys to serve in place of the ref's newest commit: a
	// rollback, served by every pod from a tree already on its disk. The fetcher keeps fetching the ref meanwhile;
	// unset it to serve the newest again. The annotation hyperstatic.dev/pin does the same (this field wins). A
	// commit not in the history changes nothing: DeployPinned=False, NotInHistory.
	// +kubebuilder:validation:XValidation:rule="self.matches('^[0-9a-f]{40}$')",message="spec.content.git.pin must be a full commit hash: 40 lower-case hex digits"
	// +optional
	Pin string `json:"pin,omitempty"`
}

// ContentRevision is which commit of a Git site the ready server pods serve (status.content.revision).
type ContentRevision struct {
	// commit is the full hash of the newest good commit the fetcher published: the one every pod converges on.
	Commit string `json:"commit"`
	// shortCommit is commit's first 12 characters (the Commit printer column).
	ShortCommit string `json:"shortCommit"`
	// commitTime is the commit's committer time.
	// +optional
	CommitTime *metav1.Time `json:"commitTime,omitempty"`
	// ref is the full ref the commit was fetched from (refs/heads/main); absent for a pinned commit.
	// +optional
	Ref string `json:"ref,omitempty"`
	// servedBy is the number of ready server pods that serve commit.
	ServedBy int32 `json:"servedBy"`
	// readyPods is the number of ready server pods.
	ReadyPods int32 `json:"readyPods"`
	// served is servedBy/readyPods, e.g. "3/3" (the Served printer column).
	Served string `json:"served"`
	// deploy is the deploy the fetcher publishes, short: shortCommit, with " (pinned)" when it is a pin (the
	// Deploy printer column).
	// +optional
	Deploy string `json:"deploy,omitempty"`
}
