package managercache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// ReferencedMetadata returns the manager's cache of object metadata only, for the user's objects that StaticSites
// reference by name (ConfigMaps, PersistentVolumeClaims), adding it to the manager on the first call: their watch
// events tell the controllers when to look again, and the controllers then read the named objects directly. It is
// unfiltered (the user's objects carry no label of ours) and holds, per object, its metadata without managed fields:
// a few hundred bytes, whatever the object's data.
//
// One per manager, whoever asks: the StaticSite and the pool controllers both follow tenants' ConfigMaps (the pool's
// mirrors among them), and a cache each held every ConfigMap's metadata twice and watched them twice (about half of
// the 14.5 MB these caches took at 3,000 pool sites; docs/bench/operator-memory-2026-12-04.md). The manager's entry
// is dropped when the cache stops, so a process that runs many managers (the test suites) does not keep them.
//
// It refuses full objects (see metadataOnly): a structured informer here would cache every ConfigMap of the
// cluster, data included, which is what OwnedObjectsOnly keeps out of the manager's cache.
//
// The manager starts it with its own caches, before the controllers, and waits for it to sync.
func ReferencedMetadata(mgr manager.Manager) (cache.Cache, error) {
	referenced.Lock()
	defer referenced.Unlock()
	if c, ok := referenced.of[mgr]; ok {
		return c, nil
	}
	c, err := newMetadataCache(mgr, cache.Options{}, "the referenced objects' metadata cache", func() {
		referenced.Lock()
		defer referenced.Unlock()
		delete(referenced.of, mgr)
	})
	if err != nil {
		return nil, err
	}
	referenced.of[mgr] = c
	return c, nil
}

// referenced holds each running (or not yet started) manager's referenced-objects cache.
var referenced = struct {
	sync.Mutex
	of map[manager.Manager]cache.Cache
}{of: map[manager.Manager]cache.Cache{}}

// NewOwnedMetadata adds to the manager, and returns, a cache of object metadata only for the children whose CRDs
// may be missing (HTTPRoutes, PodMonitors, Certificates), restricted to the objects the operator labelled as its
// own. They cannot be in OwnedObjectsOnly: the manager's cache resolves every kind named there when it is
// created, and fails when a CRD is not installed. Here an informer starts only when a controller first watches the
// kind (after it has found the CRD), with the same label filter.
func NewOwnedMetadata(mgr manager.Manager) (cache.Cache, error) {
	return newMetadataCache(mgr, cache.Options{DefaultLabelSelector: ownedSelector()}, "the owned optional children's metadata cache", nil)
}

// newMetadataCache adds to the manager, and returns, a metadata-only cache narrowed by the selectors of narrow;
// stopped (if not nil) is called when the cache has stopped.
func newMetadataCache(mgr manager.Manager, narrow cache.Options, what string, stopped func()) (cache.Cache, error) {
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
	if err := mgr.Add(startWithCaches{mc, stopped}); err != nil {
		return nil, err
	}
	return mc, nil
}

// startWithCaches puts a cache in the manager's group of caches (the manager recognises them by GetCache), which
// start on every replica before any controller and are waited for, rather than with the leader's controllers.
type startWithCaches struct {
	cache.Cache
	stopped func() // if not nil, called once the cache has stopped
}

func (s startWithCaches) GetCache() cache.Cache { return s.Cache }

func (s startWithCaches) Start(ctx context.Context) error {
	if s.stopped != nil {
		defer s.stopped()
	}
	return s.Cache.Start(ctx)
}

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
