package fairqueue

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func request(ns, name string) reconcile.Request {
	return reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}
}

// The queue a controller gets from ByNamespace: controller-runtime sees a priority queue (its handlers then use
// priorities), the namespaces take turns, and its depth is controller-runtime's own workqueue_depth series, by the
// controller's name and the priority. If a new controller-runtime describes its workqueue metrics otherwise,
// ControllerRuntimeMetrics fails here.
func TestByNamespaceAsAControllerQueue(t *testing.T) {
	p, err := ControllerRuntimeMetrics()
	if err != nil {
		t.Fatal(err)
	}
	wq := ByNamespace(p)("fairqueue-test", workqueue.DefaultTypedItemBasedRateLimiter[reconcile.Request]())
	defer wq.ShutDown()
	q, ok := wq.(priorityqueue.PriorityQueue[reconcile.Request])
	if !ok {
		t.Fatalf("%T is not a controller-runtime PriorityQueue", wq)
	}
	q.Add(request("busy", "a"))
	q.Add(request("busy", "b"))
	q.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(-100)}, request("busy", "c"))
	q.Add(request("quiet", "a"))
	if d0, dLow := depth(t, "0"), depth(t, "-100"); d0 != 3 || dLow != 1 {
		t.Fatalf("workqueue_depth{name=fairqueue-test}: priority 0 %v, -100 %v; want 3 and 1", d0, dLow)
	}
	var got []string
	for range 4 {
		r, prio, _ := q.GetWithPriority()
		got = append(got, r.String())
		if r.Name == "c" && prio != -100 {
			t.Errorf("%s handed out with priority %d", r, prio)
		}
		q.Done(r)
	}
	expect(t, got, "busy/a", "quiet/a", "busy/b", "busy/c")
	if d0 := depth(t, "0"); d0 != 0 {
		t.Fatalf("depth %v after every Get", d0)
	}
}

// depth reads workqueue_depth{name="fairqueue-test", priority} from controller-runtime's registry.
func depth(t *testing.T, priority string) float64 {
	t.Helper()
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "workqueue_depth" {
			continue
		}
		for _, m := range f.GetMetric() {
			if label(m, "name") == "fairqueue-test" && label(m, "priority") == priority {
				return m.GetGauge().GetValue()
			}
		}
	}
	t.Fatalf("no workqueue_depth{name=fairqueue-test,priority=%s}", priority)
	return 0
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}
