package managercache

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	var err error
	if env, err = testenv.Start(); err != nil {
		panic(err)
	}
	code := m.Run()
	_ = env.Stop()
	os.Exit(code)
}

// startManager runs a manager with the production cache settings and the referenced objects' cache.
func startManager(t *testing.T) (ctrl.Manager, cache.Cache) {
	t.Helper()
	return startManagerWith(t, ReferencedMetadata)
}

// startManagerWith runs a manager with the production cache settings and the extra cache newCache adds to it.
func startManagerWith(t *testing.T, newCache func(ctrl.Manager) (cache.Cache, error)) (ctrl.Manager, cache.Cache) {
	t.Helper()
	mgr, err := env.NewManager(func(o *ctrl.Options) { o.Cache = cache.Options{ByObject: OwnedObjectsOnly()} })
	testenv.Must(t, err)
	extra, err := newCache(mgr)
	testenv.Must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	})
	return mgr, extra
}

func configMaps(t *testing.T) (own, users *corev1.ConfigMap) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "cache-"}}
	testenv.Must(t, env.Client.Create(ctx, ns))
	own = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "bench-script",
		Labels: map[string]string{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}}, Data: map[string]string{"k": "v"}}
	users = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: "pages"},
		Data: map[string]string{"index.html": strings.Repeat("x", 100<<10)}}
	testenv.Must(t, env.Client.Create(ctx, own))
	testenv.Must(t, env.Client.Create(ctx, users))
	return own, users
}

// Whatever makes the manager hold full ConfigMaps (a Benchmark's Owns, a Get through the manager's client), the
// cache holds the operator's own only, never the user's (possibly huge) ones.
func TestManagerCacheHoldsOnlyTheOperatorsConfigMaps(t *testing.T) {
	own, users := configMaps(t)
	mgr, _ := startManager(t)
	ctx := context.Background()
	testenv.Eventually(t, "the operator's ConfigMap in the cache", func() error {
		return mgr.GetCache().Get(ctx, client.ObjectKeyFromObject(own), &corev1.ConfigMap{})
	})
	list := &corev1.ConfigMapList{}
	testenv.Must(t, mgr.GetCache().List(ctx, list, client.InNamespace(own.Namespace)))
	if len(list.Items) != 1 || list.Items[0].Name != own.Name {
		var names []string
		for _, cm := range list.Items {
			names = append(names, cm.Name)
		}
		t.Errorf("the manager's cache holds ConfigMaps %v, want only %s", names, own.Name)
	}
	if err := mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(users), &corev1.ConfigMap{}); err == nil {
		t.Errorf("the manager's client found the user's ConfigMap %s in its cache", users.Name)
	}
}

// The referenced objects' cache sees the user's ConfigMaps, as metadata without managed fields, and refuses to
// become a full-object cache.
func TestReferencedMetadataHoldsMetadataOnly(t *testing.T) {
	_, users := configMaps(t)
	_, referenced := startManager(t)
	ctx := context.Background()
	meta := &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}}
	testenv.Eventually(t, "the user's ConfigMap's metadata", func() error {
		return referenced.Get(ctx, client.ObjectKeyFromObject(users), meta)
	})
	if meta.ResourceVersion != users.ResourceVersion || len(meta.ManagedFields) != 0 {
		t.Errorf("metadata %+v: want resourceVersion %s and no managed fields", meta.ObjectMeta, users.ResourceVersion)
	}
	for what, err := range map[string]error{
		"Get":         referenced.Get(ctx, client.ObjectKeyFromObject(users), &corev1.ConfigMap{}),
		"List":        referenced.List(ctx, &corev1.ConfigMapList{}),
		"GetInformer": func() error { _, err := referenced.GetInformer(ctx, &corev1.ConfigMap{}); return err }(),
		"GetInformerForKind": func() error {
			_, err := referenced.GetInformerForKind(ctx, corev1.SchemeGroupVersion.WithKind("ConfigMap"))
			return err
		}(),
		"IndexField": referenced.IndexField(ctx, &corev1.ConfigMap{}, "x", func(client.Object) []string { return nil }),
	} {
		if !errors.Is(err, errNotMetadata) {
			t.Errorf("%s of a full ConfigMap: %v, want refused", what, err)
		}
	}
}

// Every controller of one manager that asks for the referenced objects' cache gets the same one (one informer, one
// watch per kind, each ConfigMap's metadata held once); another manager gets its own; a stopped manager's entry
// is dropped.
func TestReferencedMetadataIsOnePerManager(t *testing.T) {
	count := func() int { referenced.Lock(); defer referenced.Unlock(); return len(referenced.of) }
	before := count()
	mgr, first := startManager(t)
	again, err := ReferencedMetadata(mgr)
	testenv.Must(t, err)
	if again != first {
		t.Errorf("a second ask of one manager made a second cache")
	}
	_, other := startManager(t)
	if other == first {
		t.Errorf("two managers share one cache")
	}
	if n := count(); n != before+2 {
		t.Errorf("%d managers' caches held, want %d", n, before+2)
	}
	// A manager of its own, stopped here, so that its cache's end can be waited for.
	stop, err := env.NewManager(func(o *ctrl.Options) { o.Cache = cache.Options{ByObject: OwnedObjectsOnly()} })
	testenv.Must(t, err)
	_, err = ReferencedMetadata(stop)
	testenv.Must(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- stop.Start(ctx) }()
	testenv.Eventually(t, "the third manager's cache synced", func() error {
		c, _ := ReferencedMetadata(stop)
		if !c.WaitForCacheSync(ctx) {
			return errors.New("not synced")
		}
		return nil
	})
	cancel()
	testenv.Must(t, <-done)
	if n := count(); n != before+2 {
		t.Errorf("after a manager stopped, %d managers' caches held, want %d", n, before+2)
	}
}

// The optional children's cache (HTTPRoutes, PodMonitors in production; ConfigMaps here, a kind every API server
// has) holds the metadata of the operator's labelled objects only, and refuses full objects.
func TestOwnedMetadataHoldsOnlyTheOperatorsObjects(t *testing.T) {
	own, users := configMaps(t)
	_, owned := startManagerWith(t, NewOwnedMetadata)
	ctx := context.Background()
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMapList"}}
	testenv.Eventually(t, "the operator's ConfigMap's metadata", func() error {
		if err := owned.List(ctx, list, client.InNamespace(own.Namespace)); err != nil {
			return err
		}
		if len(list.Items) != 1 || list.Items[0].Name != own.Name {
			var names []string
			for _, m := range list.Items {
				names = append(names, m.Name)
			}
			return fmt.Errorf("holds %v, want only %s (not %s)", names, own.Name, users.Name)
		}
		return nil
	})
	if err := owned.Get(ctx, client.ObjectKeyFromObject(own), &corev1.ConfigMap{}); !errors.Is(err, errNotMetadata) {
		t.Errorf("Get of a full ConfigMap: %v, want refused", err)
	}
}

// A CRD's cache holds the metadata of the CRD of that name and of no other (here the StaticSite CRD, beside the
// suite's other Hyperstatic CRDs): its field selector on metadata.name is what lets RBAC grant list and watch on
// the named CRDs alone (cmd/manager's TestManagerRuns runs the manager with exactly that grant).
func TestCRDMetadataHoldsTheNamedCRDOnly(t *testing.T) {
	const name = "staticsites.hyperstatic.dev"
	_, crds := startManagerWith(t, func(mgr ctrl.Manager) (cache.Cache, error) { return NewCRDMetadata(mgr, name) })
	list := &metav1.PartialObjectMetadataList{TypeMeta: metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinitionList"}}
	testenv.Eventually(t, "the CRD's metadata", func() error {
		if err := crds.List(context.Background(), list); err != nil {
			return err // the manager may not have started the cache yet
		}
		if len(list.Items) != 1 || list.Items[0].Name != name {
			var names []string
			for _, m := range list.Items {
				names = append(names, m.Name)
			}
			return fmt.Errorf("holds CRDs %v, want only %s", names, name)
		}
		return nil
	})
}
