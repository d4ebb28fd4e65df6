package pool

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A pool pod that ends without the pool asking (a rollout, an eviction, a deletion by hand) holds its drain until
// no pool site's EndpointSlice lists it (internal/poolplacement/drain.go, steps 4 and 5): its template asks for the
// hold and a grace that covers it; while a slice lists the terminating pod it gets no release; once none does it
// is released, again after a refusal (its SIGTERM not come yet), once (marked), with an event.
func TestTerminatingPoolPodReleasedOnceNoSliceListsIt(t *testing.T) {
	ctx := context.Background()
	p := newScaledPool(t, 2, 60)
	tenant := p.pool.Spec.Namespaces[0]

	d := getDeployment(t, p.ns, p.server)
	spec := d.Spec.Template.Spec
	if args := spec.Containers[0].Args; !slices.Contains(args, "--drain-hold") {
		t.Fatalf("the server's args %q hold no drain", args)
	}
	if g := *spec.TerminationGracePeriodSeconds; time.Duration(g)*time.Second < poolplacement.DrainHold+drainDelay+shutdownTimeout {
		t.Fatalf("termination grace %ds does not cover the hold, the drain delay and the shutdown", g)
	}

	// A second pod stays; the first is deleted while both sites' slices list it. It has a node, so the API server
	// keeps it terminating (nobody here plays its kubelet).
	second := runPod(t, d, p.pool.Name+"-2")
	s2 := newSitesServer(t, p.ns, second.Name)
	s2.answer()
	first := p.first
	sliceA := poolSiteSlice(t, tenant, "a", p.pool.Name, first, second)
	sliceB := poolSiteSlice(t, tenant, "b", p.pool.Name, first, second)
	p.s.answerReleases(http.StatusConflict) // its SIGTERM has not come yet
	testenv.Must(t, k8s.Delete(ctx, first))

	releases := p.s.releasesSent
	// Passes run while it is listed (each reads the second pod's /sites): none releases it.
	passes(t, s2, 3)
	setSlicePods(t, sliceA, second)
	passes(t, s2, 3)
	if n := releases(); n != 0 {
		t.Fatalf("%d releases while slice b still lists the pod", n)
	}

	// No slice lists it: released, tried again after the pod refused.
	setSlicePods(t, sliceB, second)
	testenv.Eventually(t, "a release refused", func() error {
		if n := releases(); n == 0 {
			return fmt.Errorf("no release sent")
		}
		return nil
	})
	p.s.answerReleases(http.StatusOK)
	waitReleased(t, first)
	waitPoolEvent(t, p.pool.Name, "Normal PodReleased pod "+first.Name+" left every site's EndpointSlice")
	n := releases()
	if n < 2 {
		t.Fatalf("%d releases sent, want the refused one and the accepted one", n)
	}
	passes(t, s2, 3)
	if again := releases(); again != n {
		t.Fatalf("released again after it was marked: %d releases, then %d", n, again)
	}
	if got := s2.releasesSent(); got != 0 {
		t.Fatalf("the pod that stays was sent %d releases", got)
	}
}

// A pool of one pod loses it (an eviction, a deletion): the site controller keeps it in every slice, serving and
// terminating, not ready, until a replacement is ready (desired.PoolEndpointsOf; the test writes the slices as
// that function says, as the site controller would). It must not be released while a slice falls back to it: no
// release while both slices list it alone; none while one slice lists the ready replacement and the other still
// lists the old pod alone. A replacement that never became ready and is deleted meanwhile is in no slice:
// released at once. Once the last slice lists the old pod only as not ready beside the ready replacement (as a
// site's pass may leave it), it is released, and the slices drop it.
func TestOnePodPoolHoldsItsPodUntilAReplacementIsReady(t *testing.T) {
	ctx := context.Background()
	p := newScaledPool(t, 2, 60)
	tenant := p.pool.Spec.Namespaces[0]
	d := getDeployment(t, p.ns, p.server)
	first := p.first
	sliceA, sliceB := poolSiteSlice(t, tenant, "a", p.pool.Name), poolSiteSlice(t, tenant, "b", p.pool.Name)
	asSites := func(ss ...*discoveryv1.EndpointSlice) {
		t.Helper()
		for _, s := range ss {
			writeSliceAsSite(t, s, p.ns, p.pool.Name)
		}
	}
	asSites(sliceA, sliceB)
	testenv.Must(t, k8s.Delete(ctx, first))
	asSites(sliceA, sliceB)
	held := []discoveryv1.Endpoint{heldEndpoint(first)}
	for _, s := range []*discoveryv1.EndpointSlice{sliceA, sliceB} {
		if !equality.Semantic.DeepEqual(s.Endpoints, held) {
			t.Fatalf("slice %s of a one-pod pool whose pod terminates: %+v, want it serving and terminating", s.Name, s.Endpoints)
		}
	}
	passes(t, p.s, 3) // its /sites is read for its traffic while it is held
	if n := p.s.releasesSent(); n != 0 {
		t.Fatalf("%d releases while every slice falls back to the held pod", n)
	}

	// A replacement that never became ready, deleted: in no slice, released at once.
	sNever := newSitesServer(t, p.ns, p.pool.Name+"-2")
	never := startPod(t, d, p.pool.Name+"-2", corev1.ConditionFalse)
	testenv.Must(t, k8s.Delete(ctx, never))
	asSites(sliceA, sliceB)
	if !equality.Semantic.DeepEqual(sliceA.Endpoints, held) {
		t.Fatalf("slice a with a deleted pod that was never ready: %+v", sliceA.Endpoints)
	}
	waitReleased(t, never)
	waitPoolEvent(t, p.pool.Name, "Normal PodReleased pod "+never.Name+" left every site's EndpointSlice")
	if n := sNever.releasesSent(); n != 1 {
		t.Fatalf("the never-ready pod was sent %d releases", n)
	}

	// The replacement is ready: slice a lists it alone, slice b not rewritten yet falls back to the old pod.
	s3 := newSitesServer(t, p.ns, p.pool.Name+"-3")
	s3.answer()
	third := runPod(t, d, p.pool.Name+"-3")
	asSites(sliceA)
	if n := len(sliceA.Endpoints); n != 1 || sliceA.Endpoints[0].TargetRef.Name != third.Name || !endpointReady(sliceA.Endpoints[0]) {
		t.Fatalf("slice a with the replacement ready: %+v", sliceA.Endpoints)
	}
	passes(t, s3, 3)
	if n := p.s.releasesSent(); n != 0 {
		t.Fatalf("%d releases while slice b falls back to the held pod", n)
	}

	// Slice b lists the old pod not ready beside the ready replacement: released, then out of every slice.
	setSliceEndpoints(t, sliceB, append(held, discoveryv1.Endpoint{Addresses: []string{"10.0.0.3"},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: third.Namespace, Name: third.Name}}))
	waitReleased(t, first)
	waitPoolEvent(t, p.pool.Name, "Normal PodReleased pod "+first.Name+" is ready in no site's EndpointSlice")
	waitPoolEvent(t, p.pool.Name, "(1 list it not ready beside a ready pod)")
	asSites(sliceA, sliceB)
	for _, s := range []*discoveryv1.EndpointSlice{sliceA, sliceB} {
		if len(s.Endpoints) != 1 || s.Endpoints[0].TargetRef.Name != third.Name {
			t.Errorf("slice %s after the release: %+v, want the replacement alone", s.Name, s.Endpoints)
		}
	}
	if n := p.s.releasesSent(); n != 1 {
		t.Errorf("the held pod was sent %d releases, want 1", n)
	}
}

// writeSliceAsSite writes s as a pool site's pass would: desired.PoolEndpointsOf of the pool's pods, with their
// conditions (the addresses are the test's own: every pod here is at loopback).
func writeSliceAsSite(t *testing.T, s *discoveryv1.EndpointSlice, ns, pool string) {
	t.Helper()
	pods := &corev1.PodList{}
	testenv.Must(t, k8s.List(context.Background(), pods, client.InNamespace(ns), client.MatchingLabels(poolplacement.PodSelector(pool))))
	var eps []discoveryv1.Endpoint
	for i, e := range desired.PoolEndpointsOf(pods.Items).Pods {
		eps = append(eps, discoveryv1.Endpoint{Addresses: []string{fmt.Sprintf("10.0.0.%d", i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(e.Ready), Serving: ptr.To(e.Serving), Terminating: ptr.To(e.Terminating)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: e.Namespace, Name: e.Pod}})
	}
	setSliceEndpoints(t, s, eps)
}

// heldEndpoint is p listed as a held pod is: serving, terminating, not ready.
func heldEndpoint(p *corev1.Pod) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false), Serving: ptr.To(true), Terminating: ptr.To(true)},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}}
}

// waitReleased waits until p is marked released.
func waitReleased(t *testing.T, p *corev1.Pod) {
	t.Helper()
	testenv.Eventually(t, "pod "+p.Name+" marked released", func() error {
		got := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if _, ok := got.Annotations[poolplacement.AnnotationDrainReleased]; !ok {
			return fmt.Errorf("annotations %v", got.Annotations)
		}
		return nil
	})
}

// passes waits until n more passes read s, a ready pool pod's /sites.
func passes(t *testing.T, s *sitesServer, n int) {
	t.Helper()
	from := s.reads()
	testenv.Eventually(t, fmt.Sprintf("%d passes", n), func() error {
		if got := s.reads() - from; got < n {
			return fmt.Errorf("%d reads of /sites so far", got)
		}
		return nil
	})
}

// While a terminating pod holds its drain its traffic still counts: an eviction under load (the requests still
// going to the evicted pod while the slices are rewritten) does not read as the pool going quiet. Here the pool is
// at 2 pods for 150 req/s; the first pod is deleted while a slice lists it and goes on counting 150 req/s, the new
// second pod counts none: past the 60 s scale-down window the pool still wants 2.
func TestHeldPodsTrafficCounts(t *testing.T) {
	ctx := context.Background()
	p := newScaledPool(t, 2, 60)
	tenant := p.pool.Spec.Namespaces[0]
	p.counts(0, 0)
	stepClock(t, p.s, 10*time.Second)
	p.counts(750, 750) // 150 req/s over 10 s: 2 pods
	stepClock(t, p.s, 10*time.Second)
	p.replicas(t, 2)
	completeRollout(t, getDeployment(t, p.ns, p.server))
	s2 := newSitesServer(t, p.ns, p.pool.Name+"-2")
	s2.answer(map[string]any{"id": p.a, "state": "memory", "requests": 0}, map[string]any{"id": p.b, "state": "memory", "requests": 0})
	second := runPod(t, getDeployment(t, p.ns, p.server), p.pool.Name+"-2")
	poolSiteSlice(t, tenant, "a", p.pool.Name, p.first, second)
	testenv.Must(t, k8s.Delete(ctx, p.first))

	n := 1500
	for range 8 { // 80 s at 150 req/s on the held pod, none on the other
		n += 1500
		p.counts(n/2, n/2)
		stepClock(t, s2, 10*time.Second)
	}
	waitPool(t, p.pool.Name, "the held pod's traffic counted", func(pool *v1alpha1.StaticSitePool) error {
		if a := pool.Status.Autoscaling; a == nil || !a.Measured || a.CurrentRPS != 150 || a.DesiredReplicas != 2 {
			return fmt.Errorf("status.autoscaling %+v", a)
		}
		return nil
	})
	p.replicas(t, 2)
	// Gone, as its kubelet would make it: a deleted pool releases what is left, and this pod's server is closed
	// with the test.
	testenv.Must(t, k8s.Delete(ctx, p.first, client.GracePeriodSeconds(0)))
}

// A pool deleted while a pod of it holds its drain releases it at once, listed or not: its passes no longer run,
// and nothing else would end the hold before poolplacement.DrainHold (the namespace of a deleted pool waited out
// the whole hold in kind).
func TestDeletedPoolReleasesItsPods(t *testing.T) {
	ctx := context.Background()
	p := newScaledPool(t, 2, 60)
	poolSiteSlice(t, p.pool.Spec.Namespaces[0], "a", p.pool.Name, p.first)
	testenv.Must(t, k8s.Delete(ctx, p.first))
	testenv.Must(t, k8s.Delete(ctx, p.pool))
	waitReleased(t, p.first)
}
