package staticsite

// A site in a pool (docs/design/pools.md; issue 40). spec.placement {mode: Pool, pool} asks for a StaticSitePool;
// poolplacement.Check admits or refuses it, the same check the pool controller makes before putting the site in
// its index, so the two never disagree. With mode Auto, poolauto.go decides each pass whether the site runs in the
// pool or on its own pods, and the pass then runs as below for that placement.
//
//   - Refused (no such pool, namespace not admitted, a feature a pool site cannot have, no pool controller): Placed
//     False with the refusal's reason and a message naming the field, Stalled True (a Warning event), and no step
//     runs: the site stays as it was. A site running on its own pods keeps them; a new site gets nothing.
//   - Admitted, and the pool serves it (the Board: every ready pool pod serves its current value and content), or
//     it has no pods of its own to lose: the site has no pod of its own. Its Service loses its selector and gets an
//     EndpointSlice of the pool's ready server pods (applied before the Service changes, so the Service never has
//     no endpoints); the EndpointSlices the cluster made for its own pods are deleted (Kubernetes leaves them
//     behind once a Service has no selector, and kube-proxy would keep sending connections to the pods' dead
//     addresses: step_poolslices.go), then its own children go: Deployment, Git fetcher, PodDisruptionBudget, PodMonitor,
//     NetworkPolicy, site-value ConfigMap, capacity measurements. Hostnames, route and the site value (through the
//     pool's index) work as before.
//   - Admitted while its own pods serve it and the pool does not yet (moving in): nothing changes but the status
//     (Reconciling MovingToPool); every pass runs the dedicated steps as before, so a move loses no request.
//   - Back to Dedicated while the pool serves it (moving out): the dedicated steps create its pods; the Service
//     keeps the pool's EndpointSlice and no selector until they are ready, then gets its selector back; the slice
//     goes once the cluster's EndpointSlice controller lists a ready pod of the site (or at once for 0 replicas).
//     status.placement says Pool until then: the pool controller keeps the site in its index while it does.
//
// The phase is decided at the start of a pass from the world (the live Service's selector, the live slice and
// Deployment, the Board), never from the status.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
)

// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsitepools,verbs=get;list;watch

// poolPhase is where a pool site is in its placement this pass.
type poolPhase int

const (
	// phaseMovingIn: the site asks for a pool that does not serve it yet; its own pods serve it meanwhile.
	phaseMovingIn poolPhase = iota + 1
	// phasePooled: the pool serves the site (or nothing else would): no pod of its own.
	phasePooled
	// phaseMovingOut: the site asks for its own pods; the pool serves it until they are ready.
	phaseMovingOut
)

// poolPass is a pool site's placement as this pass sees it; nil in the observation for a dedicated site that is
// in no pool.
type poolPass struct {
	phase poolPhase
	// name of the pool the site moves into, runs in or leaves; pool is that StaticSitePool (nil: not found).
	name string
	pool *v1alpha1.StaticSitePool
	// served is the Board's entry of the site (known: the pool has reported it).
	served poolstate.Served
	known  bool
	// sliceExists: the site's pool EndpointSlice exists (at the start of the pass); servicePooled: the live
	// Service has no selector.
	sliceExists, servicePooled bool
	// selectorBack: moving out, this pass gave the Service its selector back.
	selectorBack bool
	// gitContent: a pool Git site's ContentAvailable, from the Board (nil for ConfigMap sites).
	gitContent *metav1.Condition
}

// servedByPool: every ready pod of the pool named serves the site's current value and content.
func (p *poolPass) servedByPool() bool {
	return p != nil && p.known && p.served.Pool == p.name && p.served.ReadyPods > 0 && p.served.ServedBy == p.served.ReadyPods
}

// placeSite decides the pass's placement: o.pool for a site in (or moving into or out of) a pool, o.refused and
// o.placeRefusal for a refused one.
func (r *Reconciler) placeSite(ctx context.Context, o *observation) error {
	site := o.site
	name := poolplacement.Wants(site)
	if name == "" {
		// Two reads from the cache: whether a pool still serves it (its status may have been lost).
		return r.placeDedicated(ctx, o, placedPool(site))
	}
	if r.Pools == nil {
		o.placeRefusal = &poolplacement.Refusal{Reason: v1alpha1.ReasonPoolsNotRunning, Field: "spec.placement.mode",
			Message: "the operator runs without the pool controller: no StaticSitePool can serve the site; keep it Dedicated"}
		o.refused = &problem{Reason: o.placeRefusal.Reason, Message: o.placeRefusal.Error()}
		return nil
	}
	pool, err := r.getPool(ctx, name)
	if err != nil {
		return err
	}
	if ref := poolplacement.Check(pool, site); ref != nil {
		o.placeRefusal = ref
		o.refused = &problem{Reason: ref.Reason, Message: ref.Error()}
		return nil
	}
	if poolplacement.Auto(site) {
		// Automatic placement decides where the site runs (poolauto.go); on its own pods, the pass is a dedicated
		// site's (moving out of the pool while the pool still serves it).
		if err := r.decideAuto(ctx, o, pool); err != nil {
			return err
		}
		if o.auto.Target == v1alpha1.PlacementDedicated {
			return r.placeDedicated(ctx, o, placedPool(site))
		}
	}
	p := &poolPass{name: name, pool: pool}
	p.served, p.known = r.Pools.Get(poolindex.ID(site.Namespace, site.Name))
	if err := r.observePoolObjects(ctx, site, p); err != nil {
		return err
	}
	p.phase = phasePooled
	if !p.servedByPool() && !p.servicePooled {
		// Its own pods, if it has any, serve it until the pool does.
		d := &appsv1.Deployment{}
		err := r.Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, d)
		switch {
		case err == nil && metav1.IsControlledBy(d, site):
			p.phase = phaseMovingIn
		case client.IgnoreNotFound(err) != nil:
			return fmt.Errorf("read the Deployment: %w", err)
		}
	}
	o.pool = p
	return nil
}

// placeDedicated: spec.placement asks for the site's own pods. It moves out of a pool while its Service has no
// selector or its pool EndpointSlice exists; pool is the pool it ran in ("" when unknown).
func (r *Reconciler) placeDedicated(ctx context.Context, o *observation, pool string) error {
	p := &poolPass{phase: phaseMovingOut, name: pool}
	if err := r.observePoolObjects(ctx, o.site, p); err != nil {
		return err
	}
	if !p.sliceExists && !p.servicePooled {
		return nil // dedicated, in no pool
	}
	if p.name != "" {
		pl, err := r.getPool(ctx, p.name)
		if err != nil {
			return err
		}
		p.pool = pl
		if r.Pools != nil {
			p.served, p.known = r.Pools.Get(poolindex.ID(o.site.Namespace, o.site.Name))
		}
	}
	o.pool = p
	return nil
}

// placedPool is the pool the site ran in, as the last pass recorded it.
func placedPool(site *v1alpha1.StaticSite) string { return poolplacement.Placed(site) }

// observePoolObjects reads, from the cache, whether the site's Service has no selector and whether its pool
// EndpointSlice exists (and the pool it names, when p does not know it).
func (r *Reconciler) observePoolObjects(ctx context.Context, site *v1alpha1.StaticSite, p *poolPass) error {
	svc := &corev1.Service{}
	err := r.Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, svc)
	switch {
	case err == nil:
		p.servicePooled = metav1.IsControlledBy(svc, site) && len(svc.Spec.Selector) == 0
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read the Service: %w", err)
	}
	slice := &discoveryv1.EndpointSlice{}
	err = r.Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: poolplacement.EndpointSliceName(site)}, slice)
	switch {
	case err == nil:
		p.sliceExists = metav1.IsControlledBy(slice, site)
		if p.sliceExists && p.name == "" {
			p.name = slice.Labels[poolplacement.LabelPool]
		}
	case !apierrors.IsNotFound(err):
		return fmt.Errorf("read the EndpointSlice: %w", err)
	}
	return nil
}

// getPool reads a StaticSitePool from the cache; nil when it does not exist.
func (r *Reconciler) getPool(ctx context.Context, name string) (*v1alpha1.StaticSitePool, error) {
	pool := &v1alpha1.StaticSitePool{}
	if err := r.Get(ctx, types.NamespacedName{Name: name}, pool); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("read StaticSitePool %s: %w", name, err)
	}
	return pool, nil
}

// poolPods lists the pool's server pods (the manager's cache holds them: they carry the operator's label).
func (r *Reconciler) poolPods(ctx context.Context, pool *v1alpha1.StaticSitePool) ([]corev1.Pod, error) {
	if pool == nil {
		return nil, nil
	}
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(pool.Spec.Namespace), client.MatchingLabels(poolplacement.PodSelector(pool.Name))); err != nil {
		return nil, fmt.Errorf("list the pods of StaticSitePool %s: %w", pool.Name, err)
	}
	return list.Items, nil
}
