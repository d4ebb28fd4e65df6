package staticsite

import (
	"context"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/fairqueue"
)

func queuedSite(ns, name string) *v1alpha1.StaticSite {
	return &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: "1"}}
}

func queuedRequest(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// A pool's fan-out (a map function over every site of the pool, the Board's channel) queues behind a person's change
// to another site, whatever the order of arrival, on the controller's queue (internal/fairqueue).
func TestPoolFanOutQueuesBehindAChangedSite(t *testing.T) {
	ctx := context.Background()
	q := fairqueue.NewByNamespace("test", fairqueue.Options[reconcile.Request]{})
	defer q.ShutDown()

	poolSites := []reconcile.Request{queuedRequest("tenant", "a"), queuedRequest("tenant", "b"), queuedRequest("tenant", "c")}
	fanOut := atLowPriority(handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request { return poolSites }))
	board := atLowPriority(&handler.EnqueueRequestForObject{})
	own := &handler.EnqueueRequestForObject{}

	// The pool's pod became ready, then the Board announced a site, then a person changed site "dedicated".
	fanOut.Generic(ctx, event.GenericEvent{Object: queuedSite("pool-system", "pod")}, q)
	board.Generic(ctx, event.GenericEvent{Object: queuedSite("tenant", "d")}, q)
	oldSite, newSite := queuedSite("other", "dedicated"), queuedSite("other", "dedicated")
	newSite.ResourceVersion = "2"
	own.Update(ctx, event.UpdateEvent{ObjectOld: oldSite, ObjectNew: newSite}, q)

	first, prio, _ := q.GetWithPriority()
	if first != queuedRequest("other", "dedicated") || prio != 0 {
		t.Fatalf("first out: %v at priority %d, want other/dedicated at 0", first, prio)
	}
	q.Done(first)
	for range 4 {
		r, p, _ := q.GetWithPriority()
		if p != handler.LowPriority {
			t.Fatalf("%v came out at priority %d, want the fan-out's %d", r, p, handler.LowPriority)
		}
		q.Done(r)
	}
	if n := q.Len(); n != 0 {
		t.Fatalf("%d requests left", n)
	}
}

// A pool site queued by the fan-out and then changed by a person rises to the person's priority: the low priority
// never holds back a site's own change.
func TestAChangeRaisesAPoolSiteQueuedLow(t *testing.T) {
	ctx := context.Background()
	q := fairqueue.NewByNamespace("test", fairqueue.Options[reconcile.Request]{})
	defer q.ShutDown()

	fanOut := atLowPriority(handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{queuedRequest("tenant", "a"), queuedRequest("tenant", "b")}
	}))
	fanOut.Generic(ctx, event.GenericEvent{Object: queuedSite("pool-system", "pod")}, q)
	(&handler.EnqueueRequestForObject{}).Generic(ctx, event.GenericEvent{Object: queuedSite("tenant", "b")}, q)

	r, p, _ := q.GetWithPriority()
	if r != queuedRequest("tenant", "b") || p != 0 {
		t.Fatalf("first out: %v at %d, want tenant/b at 0", r, p)
	}
	q.Done(r)
	if r, p, _ = q.GetWithPriority(); r != queuedRequest("tenant", "a") || p != handler.LowPriority {
		t.Fatalf("second out: %v at %d, want tenant/a at %d", r, p, handler.LowPriority)
	}
	q.Done(r)
}
