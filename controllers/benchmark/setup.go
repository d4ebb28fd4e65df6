package benchmark

import (
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// FieldOwner names this controller in events and managed fields.
const FieldOwner = "hyperstatic-benchmark-controller"

// +kubebuilder:rbac:groups=hyperstatic.dev,resources=benchmarks,verbs=get;list;watch
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=benchmarks/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=benchmarks/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch;create;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods/log,verbs=get
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// SetupWithManager registers the controller: Benchmarks, and the Jobs and ConfigMaps they own.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("benchmark").
		For(&v1alpha1.Benchmark{}).
		Owns(&batchv1.Job{}).
		Owns(&corev1.ConfigMap{}).
		Complete(r)
}
