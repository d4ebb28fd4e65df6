package autoscaling

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// writeStatus puts the pass's result into status.autoscaling and the AbleToScale / ScalingActive conditions of
// a fresh copy of the StaticSite and writes it with Status().Update (optimistic concurrency: the StaticSite
// controller writes its own fields the same way, so neither loses the other's). A conflict re-reads (the cache
// may lag behind our own scale update) and retries with backoff;
// nothing is written when nothing changed.
func (r *Reconciler) writeStatus(ctx context.Context, key types.NamespacedName, res passResult) error {
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		site := &v1alpha1.StaticSite{}
		if err := r.client.Get(ctx, key, site); err != nil {
			return err
		}
		if site.Spec.Autoscaling == nil {
			return nil // turned off meanwhile: the next pass clears what is left
		}
		before := site.Status.DeepCopy()
		status := res.status
		site.Status.Autoscaling = &status
		setCondition(site, v1alpha1.ConditionAbleToScale, res.ableToScale, res.now)
		setCondition(site, v1alpha1.ConditionScalingActive, res.scalingActive, res.now)
		if equality.Semantic.DeepEqual(before, &site.Status) {
			return nil
		}
		return r.client.Status().Update(ctx, site)
	})
}

// clearStatus removes status.autoscaling and the autoscaler's conditions from a site whose autoscaling was
// turned off. A site that never had them is not written at all.
func (r *Reconciler) clearStatus(ctx context.Context, key types.NamespacedName) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		site := &v1alpha1.StaticSite{}
		if err := r.client.Get(ctx, key, site); err != nil {
			return client.IgnoreNotFound(err)
		}
		if site.Spec.Autoscaling != nil {
			return nil
		}
		changed := site.Status.Autoscaling != nil
		site.Status.Autoscaling = nil
		for _, t := range []string{v1alpha1.ConditionAbleToScale, v1alpha1.ConditionScalingActive} {
			if meta.RemoveStatusCondition(&site.Status.Conditions, t) {
				changed = true
			}
		}
		if !changed {
			return nil
		}
		return r.client.Status().Update(ctx, site)
	})
}
