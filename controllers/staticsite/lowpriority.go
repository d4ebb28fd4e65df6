package staticsite

import (
	"context"
	"time"

	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Why the site controller's queue has priorities.
//
// One controller serves every site of the cluster, with a few workers (--staticsite-max-concurrent-reconciles) and
// one client-side budget of API requests (--kube-api-qps) shared by every controller. A pool fans out: its spec, a
// server pod's readiness or a pass of the pool controller wakes every site placed in it, hundreds at once, none of
// them changed by anyone. In a FIFO queue a person's change to another site waits behind all of them: with 200
// pool sites being created, a dedicated site's new generation waited more than a minute for its pass (e2e
// scenarios 12 and 14 beside 20-pool, 2026-12-02).
//
// So the queue has controller-runtime's priorities (internal/fairqueue: the priority queue's contract, with the
// namespaces served in turn within a priority), and the fan-out events are queued at handler.LowPriority:
// whatever a person changes on any site (a pool site's creation included), and what a site's own children report
// (priority 0), is reconciled first, and the pool's sites still converge, in order, whenever a worker is free of
// more urgent work. A pass requeued by its own result keeps the priority it was taken with (controller-runtime's
// reconcileHandler), and the cache's initial list is low priority too, so after an operator restart with thousands
// of sites a changed site still goes first.
//
// A pool site's creation stays at priority 0. Lowering it too (tried on 2026-12-02) most likely put a new pool
// site's first pass, which writes the hostnames it holds, behind the fan-out: the pool served its content by
// Service name while one pod's index still lacked its hostnames, and e2e 20-pool's requests by hostname got 404
// from that pod. A pod's servedBy then counted the site value and the content, not the hostnames; it now compares
// the whole index entry (docs/design/pools.md), and the creation stays at priority 0 until a run shows that lowered
// it passes.

// atLowPriority wraps h so that every request it queues is queued at handler.LowPriority. On a queue without
// priorities it is h.
func atLowPriority(h handler.EventHandler) handler.EventHandler {
	return lowPriorityHandler{inner: h}
}

type lowPriorityHandler struct{ inner handler.EventHandler }

type requestQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h lowPriorityHandler) Create(ctx context.Context, e event.CreateEvent, q requestQueue) {
	h.inner.Create(ctx, e, lowered(q))
}

func (h lowPriorityHandler) Update(ctx context.Context, e event.UpdateEvent, q requestQueue) {
	h.inner.Update(ctx, e, lowered(q))
}

func (h lowPriorityHandler) Delete(ctx context.Context, e event.DeleteEvent, q requestQueue) {
	h.inner.Delete(ctx, e, lowered(q))
}

func (h lowPriorityHandler) Generic(ctx context.Context, e event.GenericEvent, q requestQueue) {
	h.inner.Generic(ctx, e, lowered(q))
}

// lowered is q with every add at handler.LowPriority; q itself when it has no priorities.
func lowered(q requestQueue) requestQueue {
	pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		return q
	}
	return lowPriorityQueue{PriorityQueue: pq}
}

// lowPriorityQueue is a priority queue whose adds default to handler.LowPriority. It is still a PriorityQueue, so a
// handler that sets a priority of its own (controller-runtime's lower one for unchanged objects) keeps it.
type lowPriorityQueue struct {
	priorityqueue.PriorityQueue[reconcile.Request]
}

func lowPriority() *int { return ptr.To(handler.LowPriority) }

func (q lowPriorityQueue) Add(r reconcile.Request) {
	q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: lowPriority()}, r)
}

func (q lowPriorityQueue) AddAfter(r reconcile.Request, after time.Duration) {
	q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: lowPriority(), After: after}, r)
}

func (q lowPriorityQueue) AddRateLimited(r reconcile.Request) {
	q.PriorityQueue.AddWithOpts(priorityqueue.AddOpts{Priority: lowPriority(), RateLimited: true}, r)
}

func (q lowPriorityQueue) AddWithOpts(o priorityqueue.AddOpts, rs ...reconcile.Request) {
	if o.Priority == nil || *o.Priority > handler.LowPriority {
		o.Priority = lowPriority()
	}
	q.PriorityQueue.AddWithOpts(o, rs...)
}
