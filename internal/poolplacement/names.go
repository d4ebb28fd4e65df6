package poolplacement

import "hyperstatic.dev/hyperstatic/api/v1alpha1"

// The pool's objects, as both controllers name and select them: the pool controller creates them in the pool's
// spec.namespace; the site controller lists the pool's server pods (by PodSelector) to fill each pool site's
// EndpointSlice, whose ports are the pool pods' v1alpha1.ServerPort (HTTP), as a dedicated site's pods'.
//
// Every object of a pool, its server pods included, also carries v1alpha1.LabelManagedBy=ManagedByValue: the
// manager's cache holds only the operator's labelled pods (internal/managercache), so pool pods without it are
// invisible to the site controller's list and watch.
const (
	// LabelPool on every object of a pool holds the pool's name.
	LabelPool = "hyperstatic.dev/pool"
	// LabelComponent says which part of the pool an object belongs to: ComponentServer or ComponentFetcher.
	LabelComponent   = "app.kubernetes.io/component"
	ComponentServer  = "pool-server"
	ComponentFetcher = "pool-fetcher"
	// AppName is the app.kubernetes.io/name of a pool's objects.
	AppName = "hyperstatic-pool"
)

// PodSelector selects pool's server pods (never its fetcher).
func PodSelector(pool string) map[string]string {
	return map[string]string{LabelPool: pool, LabelComponent: ComponentServer, "app.kubernetes.io/name": AppName}
}

// FetcherSelector selects pool's fetcher pod.
func FetcherSelector(pool string) map[string]string {
	return map[string]string{LabelPool: pool, LabelComponent: ComponentFetcher, "app.kubernetes.io/name": AppName}
}

// ServerName is the name of the pool's server Deployment (and its PodDisruptionBudget); FetcherName the fetcher's
// Deployment and Service; IndexName the ConfigMap of index shard i.
func ServerName(pool string) string  { return pool }
func FetcherName(pool string) string { return pool + "-fetcher" }
func IndexName(pool string, i int) string {
	return pool + ".index-" + string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10))
}

// EndpointSliceName is the name of a pool site's EndpointSlice in the site's namespace (label
// kubernetes.io/service-name is the site's Service name).
func EndpointSliceName(site *v1alpha1.StaticSite) string { return site.Name + "-pool" }

// IndexKey is the key of index shard i in its ConfigMap: the file name it has in the pool's index directory (a
// projected volume of every shard's ConfigMap, so the keys differ between shards; the readers take every *.json).
func IndexKey(i int) string {
	return "index-" + string(rune('0'+i/100%10)) + string(rune('0'+i/10%10)) + string(rune('0'+i%10)) + ".json"
}
