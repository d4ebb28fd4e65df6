package pool

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;patch;delete

// reconcileMirrors copies each ConfigMap of each admitted ConfigMap site into the pool namespace (the fetcher may
// read that namespace only), at most tun.mirrorsPerPass writes a pass.
//
// The tenants' ConfigMaps and the mirrors are followed as metadata only (the referenced cache, setup.go): a mirror
// records the resourceVersion of the source it copies, so a source that did not change is neither read nor written
// again, and the operator's memory never holds the sites' files. A source that does not exist gets no mirror: the
// fetcher reports the site's content missing.
//
// Why a batch: a pool's first pass over N new ConfigMap sites writes N mirrors at the ConfigMaps' request budget
// (two requests each, 50/s shared with every site's site value), and nothing of the pool was published before the
// pass ended: at 10,000 sites no site was placed for nine minutes (docs/bench/operator-pools-2026-12-03.md). Now a
// pass writes one batch (changed mirrors of sites already served first, then new ones, in site order), leaves the
// sites whose mirrors do not all exist out of the index (o.unmirrored), publishes the rest, and the next pass runs
// a second later; a site already in the index stays there while its changed mirror waits for a batch.
func (r *Reconciler) reconcileMirrors(ctx context.Context, o *observation) error {
	pool := o.pool
	have, err := r.mirrorsOf(ctx, pool)
	if err != nil {
		return err
	}
	var writes []mirrorWrite
	for _, a := range o.admitted {
		for _, ref := range a.site.Spec.Content.ConfigMaps {
			name := mirrorName(pool, a.site, ref.Name)
			source := configMapMeta()
			if err := r.referenced.Get(ctx, types.NamespacedName{Namespace: a.site.Namespace, Name: ref.Name}, source); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return err
			}
			m := have[name]
			switch {
			case m != nil && !metav1.IsControlledBy(m, pool):
				o.reject(&reconcile.Problem{Reason: ReasonNotOwned, Message: (&notOwnedError{kind: "ConfigMap",
					key: types.NamespacedName{Namespace: m.Namespace, Name: m.Name}}).Error()})
				continue
			case m != nil && m.Annotations[annotationSourceVersion] == source.ResourceVersion:
				continue // the mirror copies this version of the source
			}
			writes = append(writes, mirrorWrite{site: a, source: ref.Name, name: name, listed: m != nil})
		}
	}
	now, later := batchOf(writes, o.tun.mirrorsPerPass)
	for _, w := range later {
		if !w.listed {
			if o.unmirrored == nil {
				o.unmirrored = map[string]bool{}
			}
			o.unmirrored[w.site.entry.ID] = true
		}
	}
	if err := r.writeMirrors(ctx, o, now); err != nil {
		return err
	}
	// The next batch soon, but only after a batch that got somewhere: a pool whose writes are refused (a quota, a
	// namespace being deleted) is Stalled and retried at its own pace, not in a loop. Not at once either: the next
	// pass sees this batch's mirrors only once the referenced cache has them, and would write them again before.
	if len(later) > 0 && o.mirrorsWritten > 0 && o.rejected == nil {
		o.requeue(nextBatchAfter)
	}
	return nil
}

// nextBatchAfter is how soon the pass after a batch runs: time for the cache to hear of the batch's mirrors,
// small beside a batch's own time (DefaultMirrorsPerPass writes take about 8 s at the ConfigMaps' request budget).
const nextBatchAfter = time.Second

// batchOf splits writes into this pass's (at most n) and the later ones: rewrites of existing mirrors first (their
// sites are served, and a tenant waits for the change), then new mirrors, each group in the order given (sites by
// id).
func batchOf(writes []mirrorWrite, n int) (now, later []mirrorWrite) {
	ordered := make([]mirrorWrite, 0, len(writes))
	for _, listed := range []bool{true, false} {
		for _, w := range writes {
			if w.listed == listed {
				ordered = append(ordered, w)
			}
		}
	}
	if len(ordered) <= n {
		return ordered, nil
	}
	return ordered[:n], ordered[n:]
}

// mirrorsOf lists the pool's mirrors (metadata, from the referenced cache) by name.
func (r *Reconciler) mirrorsOf(ctx context.Context, pool *v1alpha1.StaticSitePool) (map[string]*metav1.PartialObjectMetadata, error) {
	existing := &metav1.PartialObjectMetadataList{}
	existing.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMapList"))
	if err := r.referenced.List(ctx, existing, client.InNamespace(pool.Spec.Namespace), client.MatchingLabels(mirrorSelector(pool.Name))); err != nil {
		return nil, fmt.Errorf("list the mirrors: %w", err)
	}
	have := make(map[string]*metav1.PartialObjectMetadata, len(existing.Items))
	for i := range existing.Items {
		have[existing.Items[i].Name] = &existing.Items[i]
	}
	return have, nil
}

// deleteLeftMirrors deletes the pool's mirrors that no admitted site names (it left the pool or dropped a
// ConfigMap). It runs after the index is written, so the fetcher never reads an index naming a site whose
// content was just deleted.
func (r *Reconciler) deleteLeftMirrors(ctx context.Context, o *observation) error {
	pool := o.pool
	have, err := r.mirrorsOf(ctx, pool)
	if err != nil {
		return err
	}
	want := map[string]bool{}
	for _, a := range o.admitted {
		for _, ref := range a.site.Spec.Content.ConfigMaps {
			want[mirrorName(pool, a.site, ref.Name)] = true
		}
	}
	for name, m := range have {
		if want[name] || !metav1.IsControlledBy(m, pool) {
			continue
		}
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: m.Namespace, Name: m.Name}}
		if err := r.Delete(ctx, cm, client.Preconditions{UID: &m.UID}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete mirror %s: %w", name, err)
		}
		o.mirrorsDeleted++
	}
	return nil
}

// mirrorWrite is one mirror to (re)write: the source ConfigMap of an admitted site, and whether the pool's cache
// already lists the mirror.
type mirrorWrite struct {
	site         admittedSite
	source, name string
	listed       bool
}

// mirrorConcurrency bounds the mirrors written at once. Each is a read of the tenant's ConfigMap (up to 1 MiB) and
// an apply: one after the other, 130 new ConfigMap sites held a pass for two minutes in kind on a busy machine,
// and no site of the pass was served before the pass ended.
const mirrorConcurrency = 8

// writeMirrors runs writeMirror for each of writes, mirrorConcurrency at a time; the first error is returned once
// every write has ended. Each write fills its own observation, merged into o afterwards (o is not shared).
func (r *Reconciler) writeMirrors(ctx context.Context, o *observation, writes []mirrorWrite) error {
	results := make([]observation, len(writes))
	errs := make([]error, len(writes))
	sem := make(chan struct{}, mirrorConcurrency)
	var wg sync.WaitGroup
	for i, w := range writes {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			results[i].pool = o.pool
			errs[i] = r.writeMirror(ctx, &results[i], w.site, w.source, w.name, w.listed)
		}()
	}
	wg.Wait()
	for i := range results {
		if p := results[i].rejected; p != nil {
			o.reject(p)
		}
		o.mirrorsWritten += results[i].mirrorsWritten
	}
	return errors.Join(errs...)
}

// writeMirror reads the source in full (directly: tenants' ConfigMaps are not in the manager's cache) and applies
// its mirror. A name the pool does not control is not overwritten: a listed mirror was checked by the caller,
// another name is looked up in the referenced metadata cache, which holds every ConfigMap's metadata.
//
// Why the cache and not a read around it: a new mirror then costs two requests (the source and the apply), not
// three, and the ConfigMaps' request budget (50/s, shared with every site's site value) was what held a pool's
// first pass at 10,000 sites for nine minutes (docs/bench/operator-pools-2026-12-03.md). What it gives up: a
// foreign ConfigMap created under a mirror's name (a name derived from the pool and the site's hash, in the pool's
// own namespace) in the moment before the cache hears of it is taken over by the apply; the pass after sees it
// controlled by the pool, as it then is.
func (r *Reconciler) writeMirror(ctx context.Context, o *observation, a admittedSite, source, name string, listed bool) error {
	key := types.NamespacedName{Namespace: o.pool.Spec.Namespace, Name: name}
	if !listed {
		live := configMapMeta()
		err := r.referenced.Get(ctx, key, live)
		switch {
		case err == nil && !metav1.IsControlledBy(live, o.pool):
			o.reject(&reconcile.Problem{Reason: ReasonNotOwned, Message: (&notOwnedError{kind: "ConfigMap", key: key}).Error()})
			return nil
		case err != nil && !apierrors.IsNotFound(err):
			return err
		}
	}
	src := &corev1.ConfigMap{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: a.site.Namespace, Name: source}, src); err != nil {
		if apierrors.IsNotFound(err) {
			return nil // deleted since the cache saw it: the next event brings the pass back
		}
		return err
	}
	if err := r.Apply(ctx, mirrorConfigMap(o.pool, a.site, src), client.FieldOwner(sitechild.FieldOwner), client.ForceOwnership); err != nil {
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			o.reject(reconcile.Problemf(ReasonRejected, "mirror %s of ConfigMap %s/%s: %v", name, a.site.Namespace, source, err))
			return nil
		}
		return fmt.Errorf("apply mirror %s: %w", name, err)
	}
	o.mirrorsWritten++
	return nil
}

// configMapMeta is an empty ConfigMap's metadata, for the metadata-only cache.
func configMapMeta() *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("ConfigMap"))
	return m
}
