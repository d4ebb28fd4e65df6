package benchmark

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// watchSite reads the target StaticSite while the run goes on, so that deriveStatus can record it when the Job is
// created (status.targetAtStart) and say, with TargetChanged, when it is no longer the configuration the run
// started against. URL targets have nothing to watch. It never stops the run: a changed target still gives
// numbers, they just describe more than one configuration.
//
// Observes: the target StaticSite (generation, spec.replicas, status.readyReplicas), or that it is gone.
func (r *Reconciler) watchSite(ctx context.Context, b *v1alpha1.Benchmark, o *observation) error {
	name := b.Spec.Target.StaticSite
	if name == "" || o.job == nil {
		return nil
	}
	site := &v1alpha1.StaticSite{}
	err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, site)
	switch {
	case apierrors.IsNotFound(err):
		o.siteGone = true
		return nil
	case err != nil:
		return err
	}
	o.site = targetState(site)
	return nil
}

// targetState is what a run records of its target StaticSite.
func targetState(site *v1alpha1.StaticSite) *v1alpha1.BenchmarkTargetState {
	st := &v1alpha1.BenchmarkTargetState{StaticSite: site.Name, Generation: site.Generation, ReadyReplicas: site.Status.ReadyReplicas}
	if site.Spec.Replicas != nil {
		st.Replicas = *site.Spec.Replicas
	}
	return st
}
