package pool

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A scale-down drains first (internal/poolplacement/drain.go): the autoscaler wants one pod fewer, the newest pod
// is marked draining with the lowest deletion cost, and the server Deployment keeps its replicas while any pool
// site's EndpointSlice still lists it (status Draining, saying how many). Traffic coming back cancels it (the mark
// comes off); the next scale-down marks the same pod, and once every slice dropped it the replicas go down
// (PodsDrained). A slice that never drops it holds the pool at most poolplacement.DrainTimeout (DrainTimedOut).
// Nothing here plays the site controller: the test writes the slices as it would.
func TestPoolScaleDownDrainsFirst(t *testing.T) {
	ctx := context.Background()
	p := newScaledPool(t, 2, 60)
	pool, s, old, poolNS, name := p.pool, p.s, p.first, p.ns, p.server
	tenant := p.pool.Spec.Namespaces[0]
	d := getDeployment(t, poolNS, name)
	counts := p.counts
	replicas := func(want int32) { t.Helper(); p.replicas(t, want) }
	busy := func(from int) {
		counts(from, from)
		stepClock(t, s, 10*time.Second)
		counts(from+750, from+750) // 150 req/s over 10 s: 2 pods
		stepClock(t, s, 10*time.Second)
	}
	quietFor := func(d time.Duration) {
		for ; d > 0; d -= 30 * time.Second {
			stepClock(t, s, 30*time.Second)
		}
	}
	// quietUntilOnePod: the scale-down window (60 s) in steps of 30 s, each step's decision published before the
	// clock moves again. stepClock alone only knows a pass measured at the new time: when that pass's status write
	// is refused (a conflict), the window it opened is dropped and the next pass opens it again, at the time of
	// the step after if the clock moved meanwhile, one step late.
	autoscaling := func(what string, ok func(*v1alpha1.PoolAutoscalingStatus) bool) {
		t.Helper()
		waitPool(t, pool.Name, what, func(p *v1alpha1.StaticSitePool) error {
			if a := p.Status.Autoscaling; a == nil || !ok(a) {
				return fmt.Errorf("status.autoscaling %+v", a)
			}
			return nil
		})
	}
	quietUntilOnePod := func() {
		t.Helper()
		for _, so := range []string{"(0s so far)", "(30s so far)"} {
			stepClock(t, s, 30*time.Second)
			autoscaling("the window "+so, func(a *v1alpha1.PoolAutoscalingStatus) bool { return strings.HasSuffix(a.Message, so) })
		}
		stepClock(t, s, 30*time.Second)
		autoscaling("1 pod decided", func(a *v1alpha1.PoolAutoscalingStatus) bool { return a.DesiredReplicas == 1 })
	}

	busy(0)
	replicas(2)
	completeRollout(t, d)
	// Its /sites answers before it is ready: a pass that found it unreadable would make that reading incomplete,
	// and the quiet readings after it would start the scale-down window one reading late.
	newSitesServer(t, poolNS, pool.Name+"-2").answer()
	newer := runPod(t, getDeployment(t, poolNS, name), pool.Name+"-2")
	both := []*corev1.Pod{old, newer}
	sliceA := poolSiteSlice(t, tenant, "a", pool.Name, both...)
	sliceB := poolSiteSlice(t, tenant, "b", pool.Name, both...)

	draining := func(what string, want string) {
		t.Helper()
		waitPool(t, pool.Name, what, func(p *v1alpha1.StaticSitePool) error {
			if err := poolCondition(p, v1alpha1.PoolConditionReady, metav1.ConditionFalse, ReasonDraining); err != nil {
				return err
			}
			if c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.PoolConditionReady); !strings.Contains(c.Message, want) {
				return fmt.Errorf("Ready says %q, want %q", c.Message, want)
			}
			return nil
		})
		replicas(2) // the pass that wrote this status applied 2
	}
	marked := func(p *corev1.Pod, want bool) {
		t.Helper()
		testenv.Eventually(t, fmt.Sprintf("pod %s marked draining: %v", p.Name, want), func() error {
			got := &corev1.Pod{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			cost, hasCost := got.Annotations[poolplacement.AnnotationDeletionCost]
			if poolplacement.Draining(got) != want || hasCost != want || (want && cost != poolplacement.DrainingDeletionCost) {
				now := &v1alpha1.StaticSitePool{}
				_ = k8s.Get(ctx, client.ObjectKeyFromObject(pool), now)
				return fmt.Errorf("annotations %v; pool %s autoscaling %+v", got.Annotations, describe(now), now.Status.Autoscaling)
			}
			return nil
		})
	}

	// Quiet for the delay: the autoscaler wants 1, the newest pod drains, both slices still list it.
	quietUntilOnePod()
	marked(newer, true)
	marked(old, false)
	waitPoolEvent(t, pool.Name, "Normal PodsDraining draining "+newer.Name+" before scaling down from 2 to 1 pool pods")
	draining("both slices list the pod", "(2 of 2 still list them)")
	setSlicePods(t, sliceA, old)
	draining("one slice lists the pod", "(1 of 2 still list them)")

	// The traffic comes back before the last slice dropped it: no scale-down, the mark comes off.
	busy(1000)
	marked(newer, false)
	waitPool(t, pool.Name, "no longer draining", func(p *v1alpha1.StaticSitePool) error {
		if c := apimeta.FindStatusCondition(p.Status.Conditions, v1alpha1.PoolConditionReady); c == nil || c.Reason == ReasonDraining {
			return fmt.Errorf("still draining: %s", describe(p))
		}
		return nil
	})
	replicas(2)

	// Quiet again: the same pod drains; once no slice lists it the Deployment goes to 1.
	quietUntilOnePod()
	marked(newer, true)
	draining("slice b lists the pod", "(1 of 2 still list them)")
	setSlicePods(t, sliceB, old)
	replicas(1)
	waitPoolEvent(t, pool.Name, "Normal PodsDrained "+newer.Name+" left all 2 site EndpointSlices after")
	// The ReplicaSet controller deletes the marked pod; the other one was never marked.
	testenv.Must(t, k8s.Delete(ctx, newer))
	marked(old, false)

	// A slice that never drops the pod holds the scale-down at most DrainTimeout.
	busy(3000)
	replicas(2)
	completeRollout(t, d)
	newSitesServer(t, poolNS, pool.Name+"-3").answer()
	third := runPod(t, getDeployment(t, poolNS, name), pool.Name+"-3")
	setSlicePods(t, sliceA, old, third)
	quietUntilOnePod()
	marked(third, true)
	draining("slice a lists the third pod", "(1 of 2 still list them)")
	quietFor(poolplacement.DrainTimeout)
	replicas(1)
	waitPoolEvent(t, pool.Name, "Warning DrainTimedOut 1 of 2 site EndpointSlices still list "+third.Name+" after 5m0s")
}

// poolSiteSlice creates a pool site's EndpointSlice as the site controller would (desired.PoolEndpointSlice's
// labels), listing pods.
func poolSiteSlice(t *testing.T, ns, site, pool string, pods ...*corev1.Pod) *discoveryv1.EndpointSlice {
	t.Helper()
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: site + "-pool", Labels: map[string]string{
		v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue, discoveryv1.LabelManagedBy: desired.EndpointSliceManagedBy,
		discoveryv1.LabelServiceName: site, poolplacement.LabelPool: pool}},
		AddressType: discoveryv1.AddressTypeIPv4}
	s.Endpoints = endpointsOf(pods)
	testenv.Must(t, k8s.Create(context.Background(), s))
	return s
}

func setSlicePods(t *testing.T, s *discoveryv1.EndpointSlice, pods ...*corev1.Pod) {
	t.Helper()
	setSliceEndpoints(t, s, endpointsOf(pods))
}

// setSliceEndpoints writes s's endpoints.
func setSliceEndpoints(t *testing.T, s *discoveryv1.EndpointSlice, eps []discoveryv1.Endpoint) {
	t.Helper()
	testenv.Eventually(t, "slice "+s.Name+" updated", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(s), s); err != nil {
			return err
		}
		s.Endpoints = eps
		return k8s.Update(context.Background(), s)
	})
}

func endpointsOf(pods []*corev1.Pod) []discoveryv1.Endpoint {
	out := []discoveryv1.Endpoint{}
	for i, p := range pods {
		out = append(out, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.0.%d", i+1)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}})
	}
	return out
}
