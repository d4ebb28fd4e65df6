package pool

import (
	"maps"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// The labels and owner of every object of a pool. Every object but the mirrors carries the operator's managed-by
// label, which keeps it in the manager's cache (internal/managercache); the mirrors hold tenants' content and do
// not, so that the operator's memory does not hold every ConfigMap site's files (mirror.go).
const (
	// Components of the objects that are neither the server's nor the fetcher's (poolplacement names those two).
	componentIndex  = "pool-index"
	componentMirror = "pool-mirror"
	// labelSiteNamespace and v1alpha1.LabelSite name the site a mirror belongs to (namespace and name: the id
	// itself may be longer than a label value).
	labelSiteNamespace = "hyperstatic.dev/site-namespace"
	// annotationSite is a mirror's site id; annotationSourceVersion the resourceVersion of the tenant's ConfigMap
	// it copies (a mirror whose source did not change is not read or written again).
	annotationSite          = "hyperstatic.dev/pool-site"
	annotationSourceVersion = "hyperstatic.dev/source-resource-version"
)

// objectLabels are on every object of component comp of pool (pods included).
func objectLabels(pool, comp string) map[string]string {
	return map[string]string{
		poolplacement.LabelPool:      pool,
		poolplacement.LabelComponent: comp,
		sitechild.LabelName:          poolplacement.AppName,
		sitechild.LabelInstance:      pool,
		v1alpha1.LabelManagedBy:      v1alpha1.ManagedByValue,
	}
}

// serverLabels are the server pods' and objects': PodSelector (which the site controller selects) and the rest.
func serverLabels(pool string) map[string]string {
	l := objectLabels(pool, poolplacement.ComponentServer)
	maps.Copy(l, poolplacement.PodSelector(pool))
	return l
}

// fetcherLabels are the fetcher's objects' and pod's.
func fetcherLabels(pool string) map[string]string {
	l := objectLabels(pool, poolplacement.ComponentFetcher)
	maps.Copy(l, poolplacement.FetcherSelector(pool))
	return l
}

// mirrorSelector selects the mirrors of pool (never its index: the component differs).
func mirrorSelector(pool string) map[string]string {
	return map[string]string{poolplacement.LabelPool: pool, poolplacement.LabelComponent: componentMirror}
}

// ownerReference makes the pool the controlling owner of an object in its namespace: deleting the pool deletes it
// (a cluster-scoped owner may own namespaced objects).
func ownerReference(pool *v1alpha1.StaticSitePool) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(v1alpha1.GroupVersion.String()).
		WithKind("StaticSitePool").
		WithName(pool.Name).
		WithUID(pool.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}
