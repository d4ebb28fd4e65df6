package v1alpha1

// Names, labels and ports shared by the operator's controllers, the server image and the e2e tests.
// They are part of the contract between the pieces, so they live next to the API.
const (
	// LabelSite is set on every object the operator creates for a StaticSite; its value is the site's name.
	LabelSite = "hyperstatic.dev/site"
	// LabelBenchmark is set on every object the operator creates for a Benchmark; its value is the benchmark's name.
	LabelBenchmark = "hyperstatic.dev/benchmark"
	// LabelManagedBy marks objects managed by the operator.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value.
	ManagedByValue = "hyperstatic-operator"

	// ServerPortName / ServerPort: the server's HTTP listener inside the pod.
	ServerPortName = "http"
	ServerPort     = 8080
	// AdminPortName / AdminPort: the server's admin listener (/healthz, /readyz, /metrics, /content).
	AdminPortName = "admin"
	AdminPort     = 9090

	// SiteRoot is where a site's files are found inside the server container.
	SiteRoot = "/site"

	// SitesAccessDir is, for a site with previews (its server in --sites mode over SiteRoot), where the puller
	// puts the access files the site value names (internal/contentagent/accessfiles.go: SiteRoot/AccessDirName)
	// and the server's --sites-access-dir reads them.
	SitesAccessDir = SiteRoot + "/access"

	// SSOPortName / SSOPort: the login agent beside the server with spec.server.access.sso (internal/ssosite), in
	// the pod and on the site's Service.
	SSOPortName = "sso"
	SSOPort     = 8444
)

// Content from Git (spec.content.git, docs/staticsite.md "Content from Git"): the fetcher's objects are named
// <site>-git (Deployment, Service, NetworkPolicy) and <site>-git-webhook (Service); its pods and the server pods'
// puller sidecar serve the ports below.
const (
	// LabelGitFetcherOf is on a Git site's fetcher objects instead of LabelSite (whose pods the site's Service,
	// autoscaler and Benchmarks select): its value is the site's name.
	LabelGitFetcherOf = "hyperstatic.dev/git-fetcher-of"
	// LabelGitCredentials, set to "true" by whoever owns a Secret, says the Secret is meant to be Git credentials
	// for a site's fetcher: under the tenancy policy's git.requireCredentialsLabel (the default) spec.content.git
	// .secretRef may name no other Secret, so a site cannot hand the fetcher a key of its namespace that its
	// author may not read (docs/security.md, "Tenancy").
	LabelGitCredentials = "hyperstatic.dev/git-credentials"

	// GitFetcherSuffix and GitWebhookSuffix end the names of a Git site's fetcher objects.
	GitFetcherSuffix = "-git"
	GitWebhookSuffix = "-git-webhook"

	// GitFetcherPortName / GitFetcherPort: the fetcher's /revision, /bundles/, /healthz and /metrics, on the
	// fetcher pod and on the Service <site>-git.
	GitFetcherPortName = "http"
	GitFetcherPort     = 8080
	// GitWebhookPortName / GitWebhookPort: the fetcher's POST /hooks alone; the Service <site>-git-webhook
	// exposes it on port 80.
	GitWebhookPortName        = "webhook"
	GitWebhookPort            = 8081
	GitWebhookServicePort     = 80
	GitWebhookServicePortName = "http"
	// ContentPortName / ContentPort: the puller sidecar of a Git site's server pod (/revision: what the pod
	// serves, /healthz, /metrics).
	ContentPortName = "content"
	ContentPort     = 8082
	// GitServedRoot is the server's --root in a Git site's pods: the puller flips this link to each new tree.
	GitServedRoot = SiteRoot + "/current"
)
