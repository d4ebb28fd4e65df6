package fairqueue

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ByNamespace is a controller.Options.NewQueue for a controller of namespaced objects: NewByNamespace with the
// controller's name and rate limiter, and metrics from p (nil: none).
func ByNamespace(p workqueue.MetricsProvider) func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
	return func(name string, rl workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request] {
		return NewByNamespace(name, Options[reconcile.Request]{RateLimiter: rl, Metrics: p})
	}
}

// NewByNamespace is a queue of reconcile requests with one lane per namespace (cluster-scoped requests share the
// lane "").
func NewByNamespace(name string, o Options[reconcile.Request]) *Queue[reconcile.Request] {
	return New(name, func(r reconcile.Request) string { return r.Namespace }, o)
}
