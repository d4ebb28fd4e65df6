package staticsite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A pool of one pod loses it (an eviction, a deletion): the pod holds its drain (internal/poolplacement/drain.go,
// step 4), and the site's slice keeps it, serving and terminating but not ready, for kube-proxy to fall back on,
// instead of going empty until the replacement is ready. Once a ready pod exists the slice lists only that; without
// one the held pod is back; once the pool controller released it, it is gone from the slice (its release wakes the
// site: the test fails without that watch).
func TestPoolSliceKeepsAHeldPodWhileNothingElseServes(t *testing.T) {
	ctx := context.Background()
	ns, pool, old := onePodPoolSite(t, "single", "10.4.0.1")
	testenv.Eventually(t, "the slice lists the pool's one pod", wantEndpoints(ns, "single", "10.4.0.1 ready,serving"))

	// Evicted: a node on the pod keeps it terminating (nobody here plays its kubelet). Its server fails readiness
	// at its SIGTERM, and holds its drain.
	testenv.Must(t, k8s.Delete(ctx, old))
	setPoolPodReady(t, old, "10.4.0.1", false)
	testenv.Eventually(t, "the held pod serving, terminating", wantEndpoints(ns, "single", "10.4.0.1 serving,terminating"))

	// The replacement is ready: the slice lists it alone.
	replacement := poolPod(t, pool, "server-b", "10.4.0.2", false)
	setPoolPodReady(t, replacement, "10.4.0.2", true)
	testenv.Eventually(t, "the replacement alone", wantEndpoints(ns, "single", "10.4.0.2 ready,serving"))
	// It fails its readiness before the old pod was released: the held pod is all that serves again.
	setPoolPodReady(t, replacement, "10.4.0.2", false)
	testenv.Eventually(t, "the held pod back", wantEndpoints(ns, "single", "10.4.0.1 serving,terminating"))

	// The pool controller released the old pod's drain (it would not have, here; the slice must drop it anyway).
	testenv.Eventually(t, "the old pod marked released", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(old), old); err != nil {
			return err
		}
		old.Annotations = map[string]string{poolplacement.AnnotationDrainReleased: "2026-12-05T06:00:00Z"}
		return k8s.Update(ctx, old)
	})
	testenv.Eventually(t, "the released pod out of the slice", wantEndpoints(ns, "single"))
}

// A pool with no pod to list (its one pod fails its readiness) gives the slice no endpoint and leaves its address
// type alone: an IPv6 pool's slice stays IPv6 (an EndpointSlice's address type cannot change, and IPv4, the family
// of no address, was refused, stalling the site while it kept listing the unready pod as ready).
func TestPoolSliceWithNoPodKeepsItsFamily(t *testing.T) {
	ns, _, only := onePodPoolSite(t, "six", "fd00:10::1")
	slice := func(want ...string) func() error {
		return func() error {
			s := &discoveryv1.EndpointSlice{}
			if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "six-pool"}, s); err != nil {
				return err
			}
			var got []string
			for _, e := range s.Endpoints {
				got = append(got, e.Addresses...)
			}
			if s.AddressType != discoveryv1.AddressTypeIPv6 || !slices.Equal(got, want) {
				return fmt.Errorf("slice %s %v, want IPv6 %v", s.AddressType, got, want)
			}
			return nil
		}
	}
	testenv.Eventually(t, "the IPv6 slice of the pool's pod", slice("fd00:10::1"))
	setPoolPodReady(t, only, "fd00:10::1", false)
	testenv.Eventually(t, "the IPv6 slice without endpoints", slice())
}

// onePodPoolSite creates a pool with one ready pod at ip and a ConfigMap site in it, in a new namespace.
func onePodPoolSite(t *testing.T, site, ip string) (string, *v1alpha1.StaticSitePool, *corev1.Pod) {
	t.Helper()
	ns := namespace(t)
	pool := testPool(t, ns)
	pod := poolPod(t, pool, "server-a", ip, true)
	spec := pagesSite(t, ns)
	spec.Placement = inPool(pool)
	createSite(t, ns, site, spec)
	return ns, pool, pod
}

// wantEndpoints checks the site's pool slice's endpoints, each "address conditions" with the conditions that are
// true, comma-separated, in the order ready, serving, terminating.
func wantEndpoints(ns, site string, want ...string) func() error {
	return func() error {
		s, err := poolSliceOf(ns, site)
		if err != nil {
			return err
		}
		got := []string{}
		for _, e := range s.Endpoints {
			var on []string
			for _, c := range []struct {
				name string
				v    *bool
			}{{"ready", e.Conditions.Ready}, {"serving", e.Conditions.Serving}, {"terminating", e.Conditions.Terminating}} {
				if ptr.Deref(c.v, false) {
					on = append(on, c.name)
				}
			}
			got = append(got, strings.Join(e.Addresses, " ")+" "+strings.Join(on, ","))
		}
		if want == nil {
			want = []string{}
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("slice endpoints %q, want %q", got, want)
		}
		return nil
	}
}
