package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// siteName and siteNamespace place site i: spread evenly over the namespaces, as one site per team would be.
func siteName(i int) string { return fmt.Sprintf("site-%04d", i) }
func siteNamespace(i, namespaces int) string {
	return fmt.Sprintf("bench-%02d", i%namespaces)
}

// benchContentImage is the dedicated sites' content image (kwok never pulls it; benchPolicy allows it).
const benchContentImage = "hyperstatic/example-site:0.1.0"

// newSite is the benchmark's StaticSite: content from an image (kwok never pulls it), a fractional CPU.
func newSite(i, namespaces int, replicas int32) *v1alpha1.StaticSite {
	cpu := resource.MustParse("250m")
	return &v1alpha1.StaticSite{
		ObjectMeta: metav1.ObjectMeta{Name: siteName(i), Namespace: siteNamespace(i, namespaces)},
		Spec: v1alpha1.StaticSiteSpec{
			Content:  v1alpha1.ContentSource{Image: benchContentImage},
			Replicas: ptr.To(replicas),
			CPU:      &cpu,
		},
	}
}

// forEach runs fn(i) for i in [0, n) on workers goroutines and returns the first error.
func forEach(ctx context.Context, n, workers int, fn func(ctx context.Context, i int) error) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n || ctx.Err() != nil {
					return
				}
				if err := fn(ctx, i); err != nil {
					cancel(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	return context.Cause(ctx)
}

// createSites creates the namespaces and the sites (before the operator starts: it finds them all at once, as
// after a restart or an upgrade).
func createSites(ctx context.Context, c client.Client, cfg *config) error {
	for n := range min(cfg.namespaces, cfg.sites) {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: siteNamespace(n, cfg.namespaces)}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return err
		}
	}
	return forEach(ctx, cfg.sites, 16, func(ctx context.Context, i int) error {
		if err := c.Create(ctx, newSite(i, cfg.namespaces, int32(cfg.replicas))); err != nil {
			return fmt.Errorf("create %s: %w", siteName(i), err)
		}
		return nil
	})
}

// progress is what the cluster shows of the operator's work at one moment.
type progress struct {
	reconciled int // status.observedGeneration == generation and the Deployment exists
	available  int // reconciled, and the Deployment has every replica ready
	readyPods  int
}

// reconciledSites is the pure part of observe: sites keyed by namespace/name with their generation and
// observed generation, Deployments by the same key with their ready replicas.
func reconciledSites(sites []v1alpha1.StaticSite, deployments map[types.NamespacedName]appsv1.Deployment) progress {
	var p progress
	for i := range sites {
		s := &sites[i]
		d, ok := deployments[types.NamespacedName{Namespace: s.Namespace, Name: s.Name}]
		if !ok || s.Status.ObservedGeneration != s.Generation {
			continue
		}
		p.reconciled++
		p.readyPods += int(d.Status.ReadyReplicas)
		if d.Spec.Replicas != nil && d.Status.ReadyReplicas == *d.Spec.Replicas && d.Status.UpdatedReplicas == *d.Spec.Replicas {
			p.available++
		}
	}
	return p
}

// observe lists the sites and their Deployments from the harness' own cache (watches: polling LISTs of 1,000
// Deployments every 250 ms would load the API server the operator is measured against).
func observe(ctx context.Context, c client.Reader) (progress, error) {
	var sites v1alpha1.StaticSiteList
	if err := c.List(ctx, &sites); err != nil {
		return progress{}, err
	}
	var deps appsv1.DeploymentList
	if err := c.List(ctx, &deps, client.MatchingLabels{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}); err != nil {
		return progress{}, err
	}
	byKey := make(map[types.NamespacedName]appsv1.Deployment, len(deps.Items))
	for _, d := range deps.Items {
		byKey[types.NamespacedName{Namespace: d.Namespace, Name: d.Name}] = d
	}
	return reconciledSites(sites.Items, byKey), nil
}

// enableAutoscaling turns autoscaling on for the first n sites: minReplicas at the sites' replica count, so an
// idle site stays where it is and every pod keeps being scraped.
func enableAutoscaling(ctx context.Context, c client.Client, cfg *config, n int) error {
	return forEach(ctx, n, 16, func(ctx context.Context, i int) error {
		site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Name: siteName(i), Namespace: siteNamespace(i, cfg.namespaces)}}
		patch := fmt.Appendf(nil, `{"spec":{"autoscaling":{"minReplicas":%d,"maxReplicas":%d,"targetRPSPerPod":1000}}}`,
			cfg.replicas, cfg.replicas*2)
		return c.Patch(ctx, site, client.RawPatch(types.MergePatchType, patch))
	})
}

// guardPodIPs watches every pod and calls abort with the first pod IP that is not machine-local (local): the
// operator would scrape it. It returns how many pod IPs it checked so far (a func, read at any time).
func guardPodIPs(ctx context.Context, f informers.SharedInformerFactory, local machineLocal, abort func(error)) (func() int64, error) {
	var checked atomic.Int64
	seen := sync.Map{}
	check := func(obj any) {
		p, ok := obj.(*corev1.Pod)
		if !ok || p.Status.PodIP == "" {
			return
		}
		for _, ip := range append([]corev1.PodIP{{IP: p.Status.PodIP}}, p.Status.PodIPs...) {
			if !local.contains(ip.IP) {
				abort(fmt.Errorf("pod %s/%s got the IP %s, which is not machine-local (%s)", p.Namespace, p.Name, ip.IP, local))
				return
			}
		}
		if _, dup := seen.LoadOrStore(p.UID, true); !dup {
			checked.Add(1)
		}
	}
	inf := f.Core().V1().Pods().Informer()
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, obj any) { check(obj) },
	}); err != nil {
		return nil, err
	}
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return checked.Load, nil
}

// writeSiteValue writes the site value of the first dedicated site, read back from the API server (its defaults
// applied, as the operator reads it), to workDir/site.json for the single-site server's --site.
func writeSiteValue(ctx context.Context, c client.Client, namespaces int, workDir string) (string, error) {
	site := &v1alpha1.StaticSite{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: siteNamespace(0, namespaces), Name: siteName(0)}, site); err != nil {
		return "", fmt.Errorf("read %s back: %w", siteName(0), err)
	}
	path := filepath.Join(workDir, "site.json")
	return path, os.WriteFile(path, sitevalue.Render(site).Bytes, 0o644)
}
