//go:build e2e

package e2e

import (
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// evictPoolPod evicts the oldest ready pool pod while the autoscaling step's load runs (the way a node drain ends
// it: the pool is not asked first, internal/poolplacement/drain.go steps 4 and 5) and follows it until it is gone.
// Whatever the pool's size: the pod must be released only once every pool site's slice dropped it, its server
// must stop only after that (without the hold it stopped 5 s after the eviction while the 200 slices took about a
// minute), the loaded site's slice must never be seen without a serving endpoint, and the load (which ends at
// loadEnds) must still run when the last slice dropped it, so the step's zero failed requests cover the eviction.
// With other ready pods the slices drop it at once; the pool's only pod stays in every slice, serving and
// terminating, until its replacement is ready (step 4): the loaded site's slice must not drop it, nor the operator
// release it, before that.
// MEASURED: eviction -> replacement ready -> out of the loaded site's slice -> out of every slice -> released ->
// stopped -> gone.
func evictPoolPod(t *testing.T, poolName string, site poolSite, wait time.Duration, loadEnds time.Time) {
	t.Helper()
	ctx := ctxFor(t, wait+time.Minute)
	pool := &v1alpha1.StaticSitePool{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: poolName}, pool); err != nil {
		t.Fatal(err)
	}
	inPool := []client.ListOption{client.InNamespace(pool.Spec.Namespace),
		client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(poolplacement.PodSelector(poolName))}}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, inPool...); err != nil {
		t.Fatal(err)
	}
	var victim *corev1.Pod
	before := map[string]bool{}
	ready := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		before[p.Name] = true
		if p.DeletionTimestamp == nil && podstate.Ready(p) {
			ready++
		}
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && (victim == nil || p.CreationTimestamp.Before(&victim.CreationTimestamp)) {
			victim = p
		}
	}
	if victim == nil {
		t.Fatalf("no running pool pod to evict among %d", len(pods.Items))
	}
	ev := poolEviction{pod: victim.Name, alone: ready == 1, evicted: time.Now(), loadEnds: loadEnds}
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: victim.Namespace}}
	if err := k8s.SubResource("eviction").Create(ctx, victim, eviction); err != nil {
		t.Fatalf("evict pool pod %s: %v", victim.Name, err)
	}
	sliceKey := client.ObjectKey{Namespace: site.ns, Name: site.name + "-pool"} // poolplacement.EndpointSliceName
	poolSlices := client.MatchingLabels{poolplacement.LabelPool: poolName}
	for deadline := ev.evicted.Add(wait); ev.gone == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pool pod %s evicted%s %.0f s ago and still there: %s", ev.pod, ev.what(), time.Since(ev.evicted).Seconds(), ev.times())
		}
		now := time.Since(ev.evicted)
		// The slices first, then the pods: a slice that dropped the pod for its ready replacement is read before
		// the replacement's readiness, which came first, so the two are never seen the wrong way round.
		var es discoveryv1.EndpointSlice
		if k8s.Get(ctx, sliceKey, &es) == nil {
			if ev.dropped == 0 && !sliceLists(&es, victim.Status.PodIP) {
				ev.dropped = now
			}
			if ev.empty == 0 && !slices.ContainsFunc(es.Endpoints, func(e discoveryv1.Endpoint) bool {
				return e.Conditions.Serving == nil || *e.Conditions.Serving
			}) {
				ev.empty = now
			}
		}
		var all discoveryv1.EndpointSliceList
		if ev.unlisted == 0 && k8s.List(ctx, &all, poolSlices) == nil && len(all.Items) > 0 &&
			!slices.ContainsFunc(all.Items, func(es discoveryv1.EndpointSlice) bool { return sliceLists(&es, victim.Status.PodIP) }) {
			ev.unlisted = now
		}
		var list corev1.PodList
		if ev.replaced == 0 && k8s.List(ctx, &list, inPool...) == nil && slices.ContainsFunc(list.Items, func(p corev1.Pod) bool {
			return !before[p.Name] && p.DeletionTimestamp == nil && podstate.Ready(&p)
		}) {
			ev.replaced = now
		}
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(victim), p); apierrors.IsNotFound(err) {
			ev.gone = now
			continue
		} else if err != nil {
			continue
		}
		if _, ok := p.Annotations[poolplacement.AnnotationDrainReleased]; ok && ev.released == 0 {
			ev.released = now
		}
		if ev.stopped == 0 && slices.ContainsFunc(p.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool {
			return c.Name == "server" && c.State.Terminated != nil
		}) {
			ev.stopped = now
		}
	}
	t.Logf("MEASURED pool eviction%s: pod %s evicted under load -> %s after the eviction; %s",
		ev.what(), ev.pod, ev.times(), poolEventAbout(t, poolName, "PodReleased", ev.pod))
	for _, err := range ev.errors() {
		t.Error(err)
	}
}

// poolEviction is what evictPoolPod saw of one eviction: the pod, whether it was the pool's only ready pod, when it
// was evicted and when the load ends; then how long after the eviction (0: not seen) a pool pod that was not there
// before was ready (replaced), the loaded site's slice no longer listed the pod (dropped), no pool site's slice
// did (unlisted), it was released, its server stopped, it was gone, and the loaded site's slice was first seen
// without a serving endpoint (empty).
type poolEviction struct {
	pod                                                         string
	alone                                                       bool
	evicted, loadEnds                                           time.Time
	replaced, dropped, unlisted, released, stopped, gone, empty time.Duration
}

// what names the case in the MEASURED line.
func (ev *poolEviction) what() string {
	if ev.alone {
		return " (one pod)"
	}
	return ""
}

func (ev *poolEviction) times() string {
	return fmt.Sprintf("replacement ready %.1f s, out of the loaded site's EndpointSlice %.1f s, out of every pool site's slice %.1f s, drain released %.1f s, server stopped %.1f s, pod gone %.1f s",
		ev.replaced.Seconds(), ev.dropped.Seconds(), ev.unlisted.Seconds(), ev.released.Seconds(), ev.stopped.Seconds(), ev.gone.Seconds())
}

// errors are what the eviction's times say went wrong.
func (ev *poolEviction) errors() []error {
	var errs []error
	switch {
	case ev.dropped == 0 || ev.unlisted == 0 || ev.released == 0 || ev.stopped == 0:
		errs = append(errs, fmt.Errorf("pool pod %s gone without being seen out of the loaded site's slice, out of every slice, released or stopped: %s", ev.pod, ev.times()))
	case ev.released < ev.unlisted:
		errs = append(errs, fmt.Errorf("pool pod %s released %.1f s before every pool site's slice dropped it", ev.pod, (ev.unlisted-ev.released).Seconds()))
	case ev.stopped < ev.unlisted:
		errs = append(errs, fmt.Errorf("pool pod %s's server stopped %.1f s before every pool site's slice dropped it (proxies could still send it new connections)",
			ev.pod, (ev.unlisted-ev.stopped).Seconds()))
	}
	if ev.empty != 0 {
		errs = append(errs, fmt.Errorf("the loaded site's slice had no serving endpoint %.1f s after pool pod %s was evicted", ev.empty.Seconds(), ev.pod))
	}
	if ev.alone && (ev.replaced == 0 || ev.dropped < ev.replaced || ev.released < ev.replaced) {
		errs = append(errs, fmt.Errorf("the pool's only pod %s left the loaded site's slice or was released before its replacement was ready: %s", ev.pod, ev.times()))
	}
	if ev.unlisted != 0 && ev.evicted.Add(ev.unlisted).After(ev.loadEnds) {
		errs = append(errs, fmt.Errorf("the load ended %.1f s before every pool site's slice dropped pool pod %s: the step's zero failed requests do not cover the eviction (lengthen its load)",
			ev.evicted.Add(ev.unlisted).Sub(ev.loadEnds).Seconds(), ev.pod))
	}
	return errs
}
