package main

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The pool part of the run (issue 40, "The operator with 10,000 pool sites on kwok beside 1,000 dedicated ones"):
// one StaticSitePool whose server and fetcher pods are kwok's, and -pool-sites StaticSites placed in it, each with
// its content in one ConfigMap of its own namespace (the cheap path: no Git, no pod of its own). The pods are
// fake, so the processes they stand for run here (poolserve.go) and the pool is served for real.

// benchPool names the pool and its namespace (the platform's: the harness creates it, as a platform team would).
const (
	benchPool          = "bench-pool"
	benchPoolNamespace = "bench-pool"
)

// poolIndexComponent is the app.kubernetes.io/component label of a pool's index shard ConfigMaps
// (controllers/pool/desired_labels.go, componentIndex): the harness follows them to write the index volume.
const poolIndexComponent = "pool-index"

// poolSiteName and poolContentName place pool site i; its namespace is siteNamespace's, so pool and dedicated
// sites share the tenants' namespaces.
func poolSiteName(i int) string    { return fmt.Sprintf("pool-%05d", i) }
func poolContentName(i int) string { return fmt.Sprintf("pool-%05d-content", i) }

// newPool is the benchmark's pool: every tenant namespace admitted, replicas fake pods on kwok's nodes.
func newPool(cfg *config) *v1alpha1.StaticSitePool {
	namespaces := make([]string, 0, cfg.namespaces)
	for n := range cfg.namespaces {
		namespaces = append(namespaces, siteNamespace(n, cfg.namespaces))
	}
	return &v1alpha1.StaticSitePool{
		ObjectMeta: metav1.ObjectMeta{Name: benchPool},
		Spec: v1alpha1.StaticSitePoolSpec{
			Namespace:   benchPoolNamespace,
			Namespaces:  namespaces,
			Replicas:    ptr.To(int32(cfg.poolReplicas)),
			IndexShards: ptr.To(int32(cfg.poolShards)),
		},
	}
}

// newPoolContent is pool site i's content: a page of its own (so no two bundles are the same) and a style sheet.
func newPoolContent(i, namespaces int) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: poolContentName(i), Namespace: siteNamespace(i, namespaces)},
		Data: map[string]string{
			"index.html": fmt.Sprintf("<!doctype html><title>%s</title><link rel=stylesheet href=style.css><h1>%s</h1>\n",
				poolSiteName(i), poolSiteName(i)),
			"style.css": "body{font-family:sans-serif;margin:2em}\n",
		},
	}
}

// newPoolSite is pool site i: placed in the pool, its content the ConfigMap of newPoolContent.
func newPoolSite(i, namespaces int) *v1alpha1.StaticSite {
	return &v1alpha1.StaticSite{
		ObjectMeta: metav1.ObjectMeta{Name: poolSiteName(i), Namespace: siteNamespace(i, namespaces)},
		Spec: v1alpha1.StaticSiteSpec{
			Content:   v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: poolContentName(i)}}},
			Placement: &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: benchPool},
		},
	}
}

// createPool creates the pool's namespace, the pool, and the pool sites with their ConfigMaps (before the operator
// starts, as createSites does: it finds them all at once).
func createPool(ctx context.Context, c client.Client, cfg *config) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: benchPoolNamespace}}
	if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	for n := range cfg.namespaces {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: siteNamespace(n, cfg.namespaces)}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	if err := c.Create(ctx, newPool(cfg)); err != nil {
		return fmt.Errorf("create the pool: %w", err)
	}
	return forEach(ctx, cfg.poolSites, 16, func(ctx context.Context, i int) error {
		if err := c.Create(ctx, newPoolContent(i, cfg.namespaces)); err != nil {
			return fmt.Errorf("create ConfigMap %s: %w", poolContentName(i), err)
		}
		if err := c.Create(ctx, newPoolSite(i, cfg.namespaces)); err != nil {
			return fmt.Errorf("create %s: %w", poolSiteName(i), err)
		}
		return nil
	})
}

// poolProgress is what the sites' status shows of the pool's work at one moment.
type poolProgress struct {
	sites  int // sites whose spec places them in a pool
	placed int // of those: Placed=True (the pool's every ready pod serves the site's current value and content) for the current generation
	ready  int // of those: Ready=True for the current generation
}

// poolSitesProgress is the pure part of observePool: it reads only the sites' status, as any client would.
func poolSitesProgress(sites []v1alpha1.StaticSite) poolProgress {
	var p poolProgress
	for i := range sites {
		s := &sites[i]
		if s.Spec.Placement == nil || s.Spec.Placement.Mode != v1alpha1.PlacementPool {
			continue
		}
		p.sites++
		if conditionTrue(s.Status.Conditions, v1alpha1.ConditionPlaced, s.Generation) {
			p.placed++
		}
		if conditionTrue(s.Status.Conditions, v1alpha1.ConditionReady, s.Generation) {
			p.ready++
		}
	}
	return p
}

// conditionTrue says whether condition t is True for generation gen.
func conditionTrue(conds []metav1.Condition, t string, gen int64) bool {
	c := meta.FindStatusCondition(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gen
}

// observePool lists the sites from the harness' cache (watches, as observe: no LIST of 10,000 sites every 250 ms
// against the API server being measured).
func observePool(ctx context.Context, c client.Reader) (poolProgress, error) {
	var sites v1alpha1.StaticSiteList
	if err := c.List(ctx, &sites); err != nil {
		return poolProgress{}, err
	}
	return poolSitesProgress(sites.Items), nil
}
