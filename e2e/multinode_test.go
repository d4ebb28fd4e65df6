//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The multi-node scenarios of TestE2E (its cluster has a control plane and two workers): the default spread puts a
// site's replicas on both workers (and both zones) and still schedules more replicas than nodes; a worker is
// drained under load without one failed request; and a worker is lost (its container killed) under load: the site
// keeps serving from the other worker, the failed-request window and the time to a Ready replacement are measured.
// The node loss runs last: the lost worker stays down until the cluster is deleted. (The operator upgrade across
// the nodes is TestE2E's 9b, on the same cluster.)

// spreadSite is a two-replica site of the multi-node scenarios (fractional CPU: three kubelets share 2 CPUs).
func spreadSite(t *testing.T, ns, name string) *v1alpha1.StaticSite {
	t.Helper()
	site := newSite(ns, name, v1alpha1.ContentSource{Image: cfg.siteImage}, "150m")
	site.Spec.Replicas = ptr.To[int32](2)
	if err := k8s.Create(ctxFor(t, time.Minute), site); err != nil {
		t.Fatal(err)
	}
	return waitSiteReady(t, ns, name, 3*time.Minute)
}

// requireSpread fails unless the site's ready pods run on distinct worker nodes, one per worker.
func requireSpread(t *testing.T, ns, name string) []corev1.Pod {
	t.Helper()
	pods := sitePods(ctxFor(t, 30*time.Second), t, ns, name)
	nodes := map[string]bool{}
	for _, p := range pods {
		nodes[p.Spec.NodeName] = true
	}
	if len(pods) != 2 || len(nodes) != 2 {
		t.Fatalf("pods on nodes %v: want 2 pods on 2 different workers", podNodes(pods))
	}
	return pods
}

// testSpreadOverWorkers: with no spread configured, a two-replica site runs one pod on each worker (each worker
// is its own zone here); scaled to three (more replicas than workers) every pod is still scheduled.
func testSpreadOverWorkers(t *testing.T) {
	requireOperator(t)
	ns := newNamespace(t, "spread", false)
	spreadSite(t, ns, "spread")
	pods := requireSpread(t, ns, "spread")
	zones := map[string]bool{}
	for _, w := range workers(t) {
		for _, p := range pods {
			if p.Spec.NodeName == w.Name {
				zones[w.Labels[corev1.LabelTopologyZone]] = true
			}
		}
	}
	if len(zones) != 2 {
		t.Errorf("pods in zones %v, want 2 zones", zones)
	}
	ctx := ctxFor(t, 5*time.Minute)
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "spread"}}
	if err := k8s.Patch(ctx, site, client.RawPatch(types.MergePatchType, []byte(`{"spec":{"replicas":3}}`))); err != nil {
		t.Fatal(err)
	}
	waitSiteReady(t, ns, "spread", 3*time.Minute)
	t.Logf("MEASURED spread: 2 replicas on %v (zones %v); 3 replicas on %v", podNodes(pods), zones, podNodes(sitePods(ctx, t, ns, "spread")))
}

// nodeLossScript is the k6 script of the node scenarios: an open-model load like loadScript, each request with a
// short timeout (a request to a pod on a dead node would otherwise hang for k6's default 60 s), recording when
// requests failed (fail_at, ms since the epoch), so the failure window can be read from its min and max.
const nodeLossScript = `import http from 'k6/http';
import { Trend } from 'k6/metrics';

const failAt = new Trend('fail_at');

export const options = {
  summaryTrendStats: ['min', 'max', 'p(99)'],
  scenarios: {
    load: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE), timeUnit: '1s', duration: __ENV.DURATION,
      preAllocatedVUs: Number(__ENV.VUS), maxVUs: Number(__ENV.VUS),
    },
  },
};

export default function () {
  const r = http.get(__ENV.TARGET, { timeout: __ENV.TIMEOUT });
  if (r.status !== 200) failAt.add(Date.now());
}

function count(m) { return m ? m.values.count : 0; }

export function handleSummary(data) {
  const m = data.metrics;
  const out = {
    requests: count(m.http_reqs), failed: m.http_req_failed ? m.http_req_failed.values.passes : -1,
    dropped: count(m.dropped_iterations),
    firstFailMs: m.fail_at ? m.fail_at.values.min : 0, lastFailMs: m.fail_at ? m.fail_at.values.max : 0,
    p99ms: m.http_req_duration ? m.http_req_duration.values['p(99)'] : 0,
  };
  return { stdout: 'K6RESULT ' + JSON.stringify(out) + '\n' };
}
`

type nodeLoad struct {
	Requests    int64   `json:"requests"`
	Failed      int64   `json:"failed"`
	Dropped     int64   `json:"dropped"`
	FirstFailMs float64 `json:"firstFailMs"`
	LastFailMs  float64 `json:"lastFailMs"`
	P99ms       float64 `json:"p99ms"`
}

const (
	nodeLoadRate    = 100 // requests/s
	nodeLoadTimeout = "2s"
)

// startNodeLoad runs nodeLossScript from the control-plane node against the site's URL.
func startNodeLoad(t *testing.T, ns, base string, duration time.Duration) {
	t.Helper()
	runK6Placed(t, ns, "load", map[string]string{"load.js": nodeLossScript}, []corev1.EnvVar{
		{Name: "TARGET", Value: urlFor(base, "/")}, {Name: "RATE", Value: fmt.Sprint(nodeLoadRate)},
		{Name: "DURATION", Value: fmt.Sprintf("%ds", int(duration.Seconds()))},
		{Name: "VUS", Value: "100"}, {Name: "TIMEOUT", Value: nodeLoadTimeout},
	}, duration, onControlPlane)
}

func nodeLoadResult(t *testing.T, ns string, timeout time.Duration) nodeLoad {
	t.Helper()
	ok, log := waitJob(t, ns, "load", timeout)
	for _, line := range strings.Split(log, "\n") {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), "K6RESULT "); found {
			var r nodeLoad
			if err := json.Unmarshal([]byte(rest), &r); err != nil {
				t.Fatalf("k6 result %q: %v", rest, err)
			}
			if !ok {
				t.Errorf("k6 job failed (result %+v)", r)
			}
			return r
		}
	}
	t.Fatalf("k6 job (succeeded=%v) printed no result; log:\n%s", ok, shorten(log, 4000))
	return nodeLoad{}
}

// testDrainWorkerUnderLoad: `kubectl drain` of a worker that runs one of the site's two pods, under k6 load: the
// PodDisruptionBudget lets one pod go at a time, the evicted pod drains (it leaves the endpoints before it stops
// accepting), the replacement starts on the other worker, and not one request fails.
func testDrainWorkerUnderLoad(t *testing.T) {
	requireOperator(t)
	ns := newNamespace(t, "drain", false)
	site := spreadSite(t, ns, "drain")
	pods := requireSpread(t, ns, "drain")
	node := pods[0].Spec.NodeName
	t.Cleanup(func() {
		if out, err := kubectl(t, time.Minute, "uncordon", node); err != nil {
			t.Errorf("uncordon %s: %v: %s", node, err, out)
		}
	})

	startNodeLoad(t, ns, site.Status.URL, 90*time.Second)
	time.Sleep(10 * time.Second) // the load settles on both pods first
	start := time.Now()
	out, err := kubectl(t, 4*time.Minute, "drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=3m")
	if err != nil {
		t.Fatalf("kubectl drain %s: %v: %s", node, err, out)
	}
	drained := time.Since(start).Round(time.Second)
	waitSiteReady(t, ns, "drain", 3*time.Minute)
	after := sitePods(ctxFor(t, 30*time.Second), t, ns, "drain")
	for _, p := range after {
		if p.Spec.NodeName == node {
			t.Errorf("pod %s still on the drained node %s", p.Name, node)
		}
	}
	r := nodeLoadResult(t, ns, 4*time.Minute)
	t.Logf("MEASURED drain worker %s under load: kubectl drain took %s; k6: %d requests, %d failed, %d dropped, p99 %.1f ms; pods now on %v",
		node, drained, r.Requests, r.Failed, r.Dropped, r.P99ms, podNodes(after))
	if r.Requests == 0 || r.Failed != 0 || r.Dropped != 0 {
		t.Errorf("want zero failed and dropped requests out of many, got %d failed, %d dropped of %d", r.Failed, r.Dropped, r.Requests)
	}
}

// testWorkerLostUnderLoad: the container of a worker that runs one of the site's two pods is killed (a node's
// sudden death) under k6 load. The site keeps serving from the other worker; requests routed to the dead pod fail
// until the node controller marks the node NotReady and the pod leaves the endpoints. The test measures that
// window, and the time from the kill to a Ready replacement pod (the pods tolerate the node-loss taints for 30 s,
// not the default 300 s). The worker that does not run the operator is chosen, so that the measurement is the
// cluster's, not the operator's restart.
func testWorkerLostUnderLoad(t *testing.T) {
	requireOperator(t)
	ns := newNamespace(t, "nodeloss", false)
	site := spreadSite(t, ns, "loss")
	pods := requireSpread(t, ns, "loss")
	op := operatorPod(t)
	victim := pods[0]
	if victim.Spec.NodeName == op.Spec.NodeName {
		victim = pods[1]
	}
	node := victim.Spec.NodeName
	// The pods on the dead node can never confirm their deletion: force them out before the namespace goes.
	t.Cleanup(func() {
		ctx := ctxFor(t, time.Minute)
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node})
		if err != nil {
			t.Errorf("list pods on %s: %v", node, err)
			return
		}
		for _, p := range list.Items {
			_ = cs.CoreV1().Pods(ns).Delete(ctx, p.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)})
		}
	})

	const loadFor = 180 * time.Second
	startNodeLoad(t, ns, site.Status.URL, loadFor)
	time.Sleep(10 * time.Second)
	killed := time.Now()
	docker(t, "kill", node)
	t.Logf("killed node container %s (pod %s) at %s", node, victim.Name, killed.UTC().Format(time.TimeOnly))

	var replacement corev1.Pod
	eventually(t, 5*time.Minute, "a Ready replacement pod on another node", func(ctx context.Context) (bool, string, error) {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelSite + "=loss"})
		if err != nil {
			return false, err.Error(), nil
		}
		var seen []string
		for _, p := range list.Items {
			ready := podCondition(&p, corev1.PodReady)
			seen = append(seen, fmt.Sprintf("%s@%s ready=%v deleting=%v", p.Name, p.Spec.NodeName, ready != nil && ready.Status == corev1.ConditionTrue, p.DeletionTimestamp != nil))
			if p.CreationTimestamp.After(killed.Add(-time.Second)) && p.Spec.NodeName != node && ready != nil && ready.Status == corev1.ConditionTrue {
				replacement = p
				return true, "", nil
			}
		}
		return false, strings.Join(seen, ", "), nil
	})
	ready := podCondition(&replacement, corev1.PodReady).LastTransitionTime.Time
	nodeState, _ := cs.CoreV1().Nodes().Get(ctxFor(t, 30*time.Second), node, metav1.GetOptions{})
	notReadyAt := "?"
	for _, c := range nodeState.Status.Conditions {
		if c.Type == corev1.NodeReady {
			notReadyAt = fmt.Sprintf("%s (%s after the kill)", c.Status, c.LastTransitionTime.Sub(killed).Round(time.Second))
		}
	}
	old, err := cs.CoreV1().Pods(ns).Get(ctxFor(t, 30*time.Second), victim.Name, metav1.GetOptions{})
	evictedAfter := "not marked for deletion"
	if err == nil && old.DeletionTimestamp != nil {
		// deletionTimestamp = eviction time + the pod's grace period
		evictedAfter = (old.DeletionTimestamp.Sub(killed) - time.Duration(ptr.Deref(old.DeletionGracePeriodSeconds, 0))*time.Second).Round(time.Second).String()
	}

	r := nodeLoadResult(t, ns, loadFor+3*time.Minute)
	window, lastAfterKill := time.Duration(0), time.Duration(0)
	if r.Failed > 0 {
		first, last := time.UnixMilli(int64(r.FirstFailMs)), time.UnixMilli(int64(r.LastFailMs))
		window = last.Sub(first).Round(time.Second)
		lastAfterKill = last.Sub(killed).Round(time.Second)
	}
	t.Logf("MEASURED worker lost under load (%s killed): k6: %d requests, %d failed (%.2f%%), %d dropped, p99 %.1f ms; "+
		"failed-request window %s (last failure %s after the kill; request timeout %s); node Ready=%s; old pod evicted %s after the kill; "+
		"replacement %s on %s Ready %s after the kill",
		node, r.Requests, r.Failed, 100*float64(r.Failed)/float64(max(r.Requests, 1)), r.Dropped, r.P99ms,
		window, lastAfterKill, nodeLoadTimeout, notReadyAt, evictedAfter,
		replacement.Name, replacement.Spec.NodeName, ready.Sub(killed).Round(time.Second))
	if r.Requests == 0 || r.Failed*2 > r.Requests {
		t.Errorf("the site did not keep serving from the other worker: %d failed of %d", r.Failed, r.Requests)
	}
	// The replacement must come from the short toleration, not the 300 s default.
	if d := ready.Sub(killed); d > 200*time.Second {
		t.Errorf("replacement Ready %s after the node loss: the node-loss tolerations (%ds) did not apply", d, 30)
	}
}
