package managercache

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// NewReferencedMetadata adds to the manager, and returns, a cache of object metadata only, for the user's objects
// that StaticSites reference by name (ConfigMaps, PersistentVolumeClaims): their watch events tell the controller
// when to look again, and the controller then reads the named objects directly. It is unfiltered (the user's
// objects carry no label of ours) and holds, per object, its metadata without managed fields: a few hundred
// bytes, whatever the object's data.
//
// It refuses full objects (see metadataOnly): a structured informer here would cache every ConfigMap of the
// cluster, data included, which is what OwnedObjectsOnly keeps out of the manager's cache.
//
// The manager starts it with its own caches, before the controllers, and waits for it to sync.
func NewReferencedMetadata(mgr manager.Manager) (cache.Cache, error) {
	return newMetadataCache(mgr, cache.Options{}, "the referenced objects' metadata cache")
}

// NewOwnedMetadata adds to the manager, and returns, a cache of object metadata only for the children whose CRDs
// may be missing (HTTPRoutes, PodMonitors, Certificates), restricted to the objects the operator labelled as its
// own. They cannot be in OwnedObjectsOnly: the manager's cache resolves every kind named there when it is
// created, and fails when a CRD is not installed. Here an informer starts only when a controller first watches the
// kind (after it has found the CRD), with the same label filter.
func NewOwnedMetadata(mgr manager.Manager) (cache.Cache, error) {
	return newMetadataCache(mgr, cache.Options{DefaultLabelSelector: ownedSelector()}, "the owned optional children's metadata cache")
}

// newMetadataCache adds to the manager, and returns, a metadata-only cache narrowed by the selectors of narrow.
func newMetadataCache(mgr manager.Manager, narrow cache.Options, what string) (cache.Cache, error) {
	c, err := cache.New(mgr.GetConfig(), cache.Options{
		HTTPClient:           mgr.GetHTTPClient(),
		Scheme:               mgr.GetScheme(),
		Mapper:               mgr.GetRESTMapper(),
		DefaultTransform:     cache.TransformStripManagedFields(),
		DefaultLabelSelector: narrow.DefaultLabelSelector,
		DefaultFieldSelector: narrow.DefaultFieldSelector,
	})
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", what, err)
	}
	mc := metadataOnly{c}
	if err := mgr.Add(startWithCaches{mc}); err != nil {
		return nil, err
	}
	return mc, nil
}

// startWithCaches puts a cache in the manager's group of caches (the manager recognises them by GetCache), which
// start on every replica before any controller and are waited for, rather than with the leader's controllers.
type startWithCaches struct{ cache.Cache }

func (s startWithCaches) GetCache() cache.Cache { return s.Cache }

// metadataOnly is a cache that serves and watches metav1.PartialObjectMetadata(List) only.
type metadataOnly struct{ cache.Cache }

// errNotMetadata is returned for a full object: ask for metav1.PartialObjectMetadata with the kind's TypeMeta.
var errNotMetadata = errors.New("the referenced objects' cache holds metadata only: use metav1.PartialObjectMetadata")

func (m metadataOnly) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
		return fmt.Errorf("get %T: %w", obj, errNotMetadata)
	}
	return m.Cache.Get(ctx, key, obj, opts...)
}

func (m metadataOnly) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if _, ok := list.(*metav1.PartialObjectMetadataList); !ok {
		return fmt.Errorf("list %T: %w", list, errNotMetadata)
	}
	return m.Cache.List(ctx, list, opts...)
}

func (m metadataOnly) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
		return nil, fmt.Errorf("informer for %T: %w", obj, errNotMetadata)
	}
	return m.Cache.GetInformer(ctx, obj, opts...)
}

// GetInformerForKind would make a full-object informer for a kind in the scheme: refused.
func (m metadataOnly) GetInformerForKind(_ context.Context, gvk schema.GroupVersionKind, _ ...cache.InformerGetOption) (cache.Informer, error) {
	return nil, fmt.Errorf("informer for %s: %w", gvk, errNotMetadata)
}

// IndexField adds an index to the informer of obj, which it would create: metadata only, as GetInformer.
func (m metadataOnly) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if _, ok := obj.(*metav1.PartialObjectMetadata); !ok {
		return fmt.Errorf("index %T: %w", obj, errNotMetadata)
	}
	return m.Cache.IndexField(ctx, obj, field, extract)
}
