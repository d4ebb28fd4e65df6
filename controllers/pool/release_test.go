package pool

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
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
	testenv.Eventually(t, "the pod marked released", func() error {
		got := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(first), got); err != nil {
			return err
		}
		if _, ok := got.Annotations[poolplacement.AnnotationDrainReleased]; !ok {
			return fmt.Errorf("annotations %v", got.Annotations)
		}
		return nil
	})
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
	testenv.Eventually(t, "the deleted pool's pod released", func() error {
		got := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p.first), got); err != nil {
			return err
		}
		if _, ok := got.Annotations[poolplacement.AnnotationDrainReleased]; !ok {
			return fmt.Errorf("annotations %v", got.Annotations)
		}
		return nil
	})
}
