package staticsite

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Helpers for the children a site has only when a spec field asks for them (Ingress, HTTPRoute, PodMonitor, Certificate,
// NetworkPolicy): delete the one the site made when the field goes, and follow kinds whose CRDs may be missing.

// deleteOwned deletes the site's child key of this kind, read through reader, when the site controls it. A
// foreign object of that name is left alone, and so is a kind the cluster does not serve (nothing to delete).
func (r *Reconciler) deleteOwned(ctx context.Context, reader client.Reader, site *v1alpha1.StaticSite, kind string, live client.Object, why string) error {
	return r.deleteOwnedNamed(ctx, reader, site, kind, site.Name, live, why)
}

// deleteOwnedNamed is deleteOwned for a child named name (a Git site's <site>-git objects).
func (r *Reconciler) deleteOwnedNamed(ctx context.Context, reader client.Reader, site *v1alpha1.StaticSite, kind, name string, live client.Object, why string) error {
	key := types.NamespacedName{Namespace: site.Namespace, Name: name}
	if err := reader.Get(ctx, key, live); err != nil {
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return nil
		}
		return fmt.Errorf("read %s: %w", kind, err)
	}
	if !metav1.IsControlledBy(live, site) {
		return nil // not ours: leave it
	}
	uid := live.GetUID()
	if err := r.Delete(ctx, live, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete %s: %w", kind, err)
	}
	r.Recorder.Eventf(site, corev1.EventTypeNormal, eventDeleted, "Deleted %s %s: %s", kind, name, why)
	return nil
}

// kindNotServed says an error means the API server does not serve the kind: its CRD is not installed (no REST
// mapping), or was removed after the mapping was learned (an apply of a missing object answers 404 only then).
func kindNotServed(err error) bool {
	return meta.IsNoMatchError(err) || apierrors.IsNotFound(err)
}

// readThrough is a client whose reads go around the manager's cache: for kinds the cache must not hold (an
// informer of HTTPRoutes would hold every HTTPRoute of the cluster, and cannot start while the CRD is missing).
type readThrough struct {
	client.Client
	reader client.Reader
}

func (c readThrough) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.reader.Get(ctx, key, obj, opts...)
}

// optionalWatches starts, once per kind, the watch of a child kind whose CRD may be missing (HTTPRoute, Certificate,
// PodMonitor). A controller cannot watch a kind the API server does not serve (its source would never sync), so
// these watches are added while the controller runs, the first time a pass finds the kind served. The objects
// are watched as metadata only, from a cache that holds the operator's labelled objects only
// (managercache.NewOwnedMetadata): enough to map an event to the owning site. When a pass finds the kind no
// longer served (its CRD was removed), the watch is dropped (forget) and started afresh once it is back: an
// informer left running would sit in its list backoff and miss events for a while after the CRD returns. What
// brings that pass when the CRD comes or goes is the CRD's own watch (optionalcrds.go).
type optionalWatches struct {
	mu         sync.Mutex
	started    map[schema.GroupVersionKind]bool
	controller controller.Controller
	cache      cache.Cache
	handler    handler.EventHandler
}

// ensure starts the watch of gvk unless it runs already. Without a controller (unit tests) it does nothing.
func (w *optionalWatches) ensure(gvk schema.GroupVersionKind) error {
	if w == nil || w.controller == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started[gvk] {
		return nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	if err := w.controller.Watch(source.Kind[client.Object](w.cache, obj, w.handler)); err != nil {
		return fmt.Errorf("watch %s: %w", gvk.Kind, err)
	}
	if w.started == nil {
		w.started = map[schema.GroupVersionKind]bool{}
	}
	w.started[gvk] = true
	return nil
}

// forget stops the watch of gvk, if one runs, so that the next ensure starts a fresh one.
func (w *optionalWatches) forget(ctx context.Context, gvk schema.GroupVersionKind) error {
	if w == nil || w.controller == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.started[gvk] {
		return nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	if err := w.cache.RemoveInformer(ctx, obj); err != nil {
		return fmt.Errorf("stop watching %s: %w", gvk.Kind, err)
	}
	delete(w.started, gvk)
	return nil
}
