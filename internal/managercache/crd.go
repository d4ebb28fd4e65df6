package managercache

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// NewCRDMetadata adds to the manager, and returns, a cache of one CustomResourceDefinition's metadata, found by
// name: its watch events say when a third party's CRD (cert-manager's Certificate, ...) is installed, becomes
// served or is removed, so a controller waiting for that kind learns it at once instead of at its next periodic
// retry. One cache per name, because a field selector requires one exact name, and with it the API server checks
// list and watch against RBAC's resourceNames: the operator needs no permission on the cluster's other CRDs.
func NewCRDMetadata(mgr manager.Manager, name string) (cache.Cache, error) {
	return newMetadataCache(mgr, cache.Options{DefaultFieldSelector: fields.OneTermEqualSelector("metadata.name", name)},
		"the metadata cache of CRD "+name, nil)
}

// CRDMetadata is the metadata-only form of a CustomResourceDefinition, the object a NewCRDMetadata cache watches
// (apiextensions.k8s.io/v1, written out: the operator needs no more of that API's Go module).
func CRDMetadata() client.Object {
	return &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"}}
}
