package benchmark

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// ensureResults creates the results ConfigMap, or finds this Benchmark's. It is the one child the controller
// writes again and again (server samples, then the results), so it is read directly from the API server and its
// controller owner reference checked before any write: a ConfigMap of that name that is not this Benchmark's (a
// user's) is never overwritten, the run fails with ChildNotOwned instead. Every later write is an Update carrying
// this read's resourceVersion, so an object replaced in between is not overwritten either (the write conflicts).
//
// Observes: the results ConfigMap (server samples recorded so far, sample points handled).
func (r *Reconciler) ensureResults(ctx context.Context, b *v1alpha1.Benchmark, o *observation) error {
	cm := &corev1.ConfigMap{}
	err := r.direct().Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: ResultsConfigMapName(b)}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = desiredResultsConfigMap(b)
		if err := r.Create(ctx, cm); err != nil {
			return err
		}
	case err != nil:
		return err
	case !metav1.IsControlledBy(cm, b):
		o.failure = notOwned("ConfigMap", cm.Name)
		return nil
	}
	o.results = cm
	return nil
}

// updateResults writes the results ConfigMap when data or annotations change what it holds; the live object in
// o.results is updated in place. Keys not given are kept.
func (r *Reconciler) updateResults(ctx context.Context, o *observation, data, annotations map[string]string) error {
	want := o.results.DeepCopy()
	for k, v := range data {
		if want.Data == nil {
			want.Data = map[string]string{}
		}
		want.Data[k] = v
	}
	for k, v := range annotations {
		if want.Annotations == nil {
			want.Annotations = map[string]string{}
		}
		want.Annotations[k] = v
	}
	return r.writeResults(ctx, o, want)
}

// publishResults replaces the results ConfigMap's data with the final files (keys left out by the budget go,
// server-samples.json included), keeping its annotations; the live object in o.results is updated in place.
func (r *Reconciler) publishResults(ctx context.Context, o *observation, data map[string]string) error {
	want := o.results.DeepCopy()
	want.Data = data
	return r.writeResults(ctx, o, want)
}

// writeResults updates the results ConfigMap to want unless it already holds it. The update carries the
// resourceVersion of the object the pass read, so it fails on a concurrent change instead of overwriting it.
func (r *Reconciler) writeResults(ctx context.Context, o *observation, want *corev1.ConfigMap) error {
	if equality.Semantic.DeepEqual(want, o.results) {
		return nil
	}
	if err := r.Update(ctx, want); err != nil {
		return err
	}
	o.results = want
	return nil
}
