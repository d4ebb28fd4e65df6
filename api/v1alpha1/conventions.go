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
)
