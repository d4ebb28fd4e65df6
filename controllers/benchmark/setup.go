package benchmark

import (
	"context"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// FieldOwner names this controller in events and managed fields.
const FieldOwner = "hyperstatic-benchmark-controller"

// +kubebuilder:rbac:groups=hyperstatic.dev,resources=benchmarks,verbs=get;list;watch
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=benchmarks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=benchmarks/finalizers,verbs=update
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites,verbs=get;list;watch
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller: Benchmarks, the Jobs and ConfigMaps they own, and the StaticSites and
// pods they load.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error { return r.setup(mgr, r) }

// setup registers rec (the Reconciler itself, or a test's wrapper of it) for Benchmarks and their children.
func (r *Reconciler) setup(mgr ctrl.Manager, rec reconcile.Reconciler) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("benchmark").
		For(&v1alpha1.Benchmark{}).
		Owns(&batchv1.Job{}).
		Owns(&corev1.ConfigMap{}).
		// A change of a target StaticSite wakes the Benchmarks loading it, so TargetChanged sees even a brief one.
		Watches(&v1alpha1.StaticSite{}, handler.EnqueueRequestsFromMapFunc(r.benchmarksTargeting)).
		// A target.pod that appears or becomes Ready starts the Benchmark waiting for it at once, not at the next poll.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.benchmarksLoadingPod)).
		Complete(rec)
}

// benchmarksLoadingPod are the Benchmarks of the pod's namespace that name it in target.pod and have no outcome yet.
func (r *Reconciler) benchmarksLoadingPod(ctx context.Context, pod client.Object) []reconcile.Request {
	return r.benchmarksWhere(ctx, pod.GetNamespace(), func(b *v1alpha1.Benchmark) bool { return b.Spec.Target.Pod == pod.GetName() })
}

// benchmarksTargeting are the Benchmarks of the StaticSite's namespace that load it and have no outcome yet.
func (r *Reconciler) benchmarksTargeting(ctx context.Context, site client.Object) []reconcile.Request {
	return r.benchmarksWhere(ctx, site.GetNamespace(), func(b *v1alpha1.Benchmark) bool { return b.Spec.Target.StaticSite == site.GetName() })
}

// benchmarksWhere are the Benchmarks of namespace ns that match and have no outcome yet.
func (r *Reconciler) benchmarksWhere(ctx context.Context, ns string, match func(*v1alpha1.Benchmark) bool) []reconcile.Request {
	var list v1alpha1.BenchmarkList
	if err := r.List(ctx, &list, client.InNamespace(ns)); err != nil {
		log.FromContext(ctx).Error(err, "list the Benchmarks of a changed target", "namespace", ns)
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		b := &list.Items[i]
		if match(b) && !outcomeRecorded(b.Status) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(b)})
		}
	}
	return out
}
