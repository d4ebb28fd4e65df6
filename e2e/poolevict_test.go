//go:build e2e

package e2e

import (
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
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// evictPoolPod evicts the oldest ready pool pod while the autoscaling step's load runs (the way a node drain ends
// it: the pool is not asked first, internal/poolplacement/drain.go steps 4 and 5): the pod must go on serving
// until the loaded site's EndpointSlice (one of the pool's 200) dropped it, be released by the operator once no
// slice lists it, and then end: its server must stop only after every pool site's slice dropped it (without the
// hold it stopped 5 s after the eviction while the 200 slices took about a minute). The load's zero failed
// requests, asserted by the step, cover the eviction.
// MEASURED: eviction -> out of the loaded site's slice -> out of every slice -> released -> stopped -> gone.
func evictPoolPod(t *testing.T, poolName string, site poolSite, wait time.Duration) {
	t.Helper()
	ctx := ctxFor(t, wait+time.Minute)
	pool := &v1alpha1.StaticSitePool{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: poolName}, pool); err != nil {
		t.Fatal(err)
	}
	var pods corev1.PodList
	if err := k8s.List(ctx, &pods, client.InNamespace(pool.Spec.Namespace),
		client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(poolplacement.PodSelector(poolName))}); err != nil {
		t.Fatal(err)
	}
	var victim *corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.DeletionTimestamp == nil && p.Status.PodIP != "" && (victim == nil || p.CreationTimestamp.Before(&victim.CreationTimestamp)) {
			victim = p
		}
	}
	if victim == nil {
		t.Fatalf("no running pool pod to evict among %d", len(pods.Items))
	}
	evicted := time.Now()
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: victim.Name, Namespace: victim.Namespace}}
	if err := k8s.SubResource("eviction").Create(ctx, victim, eviction); err != nil {
		t.Fatalf("evict pool pod %s: %v", victim.Name, err)
	}
	// dropped: the loaded site's slice no longer lists it; unlisted: no pool site's slice does (0: not yet).
	var dropped, unlisted, released, stopped, gone time.Duration
	sliceKey := client.ObjectKey{Namespace: site.ns, Name: site.name + "-pool"} // poolplacement.EndpointSliceName
	poolSlices := client.MatchingLabels{poolplacement.LabelPool: poolName}
	for deadline := evicted.Add(wait); gone == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("pool pod %s evicted %.0f s ago: out of the loaded site's slice after %.1f s, released after %.1f s, a container stopped after %.1f s, still there (0: not yet)",
				victim.Name, time.Since(evicted).Seconds(), dropped.Seconds(), released.Seconds(), stopped.Seconds())
		}
		now := time.Since(evicted)
		p := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(victim), p); apierrors.IsNotFound(err) {
			gone = now
			continue
		} else if err != nil {
			continue
		}
		var es discoveryv1.EndpointSlice
		if dropped == 0 && k8s.Get(ctx, sliceKey, &es) == nil && !sliceLists(&es, victim.Status.PodIP) {
			dropped = now
		}
		var all discoveryv1.EndpointSliceList
		if unlisted == 0 && k8s.List(ctx, &all, poolSlices) == nil && len(all.Items) > 0 &&
			!slices.ContainsFunc(all.Items, func(es discoveryv1.EndpointSlice) bool { return sliceLists(&es, victim.Status.PodIP) }) {
			unlisted = now
		}
		if _, ok := p.Annotations[poolplacement.AnnotationDrainReleased]; ok && released == 0 {
			released = now
		}
		if stopped == 0 && slices.ContainsFunc(p.Status.ContainerStatuses, func(c corev1.ContainerStatus) bool {
			return c.Name == "server" && c.State.Terminated != nil
		}) {
			stopped = now
		}
	}
	t.Logf("MEASURED pool eviction: pod %s evicted under load -> out of the loaded site's EndpointSlice %.1f s, out of every pool site's slice %.1f s, drain released %.1f s, server stopped %.1f s, pod gone %.1f s after the eviction; %s",
		victim.Name, dropped.Seconds(), unlisted.Seconds(), released.Seconds(), stopped.Seconds(), gone.Seconds(), poolEvent(t, poolName, "PodReleased"))
	switch {
	case dropped == 0 || unlisted == 0 || released == 0 || stopped == 0:
		t.Errorf("pool pod %s gone without being seen out of the loaded site's slice (%.1f s), out of every slice (%.1f s), released (%.1f s) or stopped (%.1f s)",
			victim.Name, dropped.Seconds(), unlisted.Seconds(), released.Seconds(), stopped.Seconds())
	case released < unlisted:
		t.Errorf("pool pod %s released %.1f s before every pool site's slice dropped it", victim.Name, (unlisted - released).Seconds())
	case stopped < unlisted:
		t.Errorf("pool pod %s's server stopped %.1f s before every pool site's slice dropped it (proxies could still send it new connections)",
			victim.Name, (unlisted - stopped).Seconds())
	}
}
