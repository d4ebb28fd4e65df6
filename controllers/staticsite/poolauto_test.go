package staticsite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/autoplacement"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Automatic placement (poolauto.go). The tests play the pool controller: they publish what the pool serves and
// the site's traffic (its band, since when) into the suite's Board, and move the controller's clock.

// autoPlaced checks status.placement: where the site runs and why, and the last decision (target, reason, a part
// of its message).
func autoPlaced(mode, reason, target, decided, message string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		p := s.Status.Placement
		if p == nil || p.Auto == nil {
			return fmt.Errorf("status.placement %+v, want an automatic decision", p)
		}
		a := p.Auto
		if p.Mode != mode || p.Reason != reason || a.Target != target || a.Reason != decided || !strings.Contains(a.Message, message) {
			return fmt.Errorf("status.placement %s/%s, auto %+v; want %s/%s, auto %s/%s %q", p.Mode, p.Reason, *a, mode, reason, target, decided, message)
		}
		return nil
	}
}

func dur(d string) *metav1.Duration {
	v, err := time.ParseDuration(d)
	if err != nil {
		panic(err)
	}
	return &metav1.Duration{Duration: v}
}

// An Auto site starts in its pool; traffic above promoteAbove promotes it: its own pods are created while the pool
// keeps serving it, its Service selects them once they are ready, and the pool's EndpointSlice goes once the
// cluster's lists one of them. Quiet below demoteBelow for demoteAfter (the clock moved, not slept), it is
// demoted: its own pods keep serving until every ready pool pod serves it, then the Service goes to the pool's
// pods and its own are removed. Each decision is in status.placement.auto and an event.
func TestAutoPlacementPromotesAndDemotes(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	pool := testPool(t, ns)
	poolPod(t, pool, "server-a", "10.5.0.1", true)
	spec := pagesSite(t, ns)
	spec.Placement = &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementAuto, Pool: pool.Name, PromoteAbove: ptr.To[int64](100),
		DemoteBelow: ptr.To[int64](10), DemoteAfter: dur("10m"), Cooldown: dur("1m")}
	site := createSite(t, ns, "auto", spec)
	id := poolindex.ID(ns, "auto")
	start := suiteClock.Now()
	report := func(servedBy int32, band autoplacement.Band, rps float64) {
		publish(pool, map[string]poolstate.Served{id: {ServedBy: servedBy, ReadyPods: 1,
			Traffic: autoplacement.Traffic{Band: band, Since: start, RPS: rps}}})
	}
	const pooled, own = v1alpha1.PlacementPool, v1alpha1.PlacementDedicated

	// A new Auto site starts in the pool: no pod of its own.
	testenv.Eventually(t, "the Service without a selector", serviceSelects(ns, "auto", false))
	report(1, autoplacement.BandBetween, 50)
	s := waitSite(t, ns, "auto", "in the pool", autoPlaced(pooled, v1alpha1.PlacementReasonAutomatic, pooled, v1alpha1.PlacementReasonAutomatic, "starts in the pool"))
	if a := s.Status.Placement.Auto; a.PromoteAbove != 100 || a.DemoteBelow != 10 || a.DemoteAfter.Duration != 10*time.Minute || a.Cooldown.Duration != time.Minute {
		t.Errorf("thresholds in effect %+v", *a)
	}
	testenv.Must(t, gone(ns, "auto", &appsv1.Deployment{})())

	// Above promoteAbove: promoted. Its own pods are created; the pool serves it meanwhile.
	report(1, autoplacement.BandAbove, 250)
	waitSite(t, ns, "auto", "promoted, the pool serving until its pods are ready",
		autoPlaced(pooled, v1alpha1.ReasonMovingToDedicated, own, v1alpha1.PlacementReasonPromoted, "250 req/s, above promoteAbove 100 req/s"))
	waitEvent(t, ns, "auto", "Normal Promoted 250 req/s, above promoteAbove 100 req/s")
	d := getDeployment(t, ns, "auto")
	testenv.Must(t, serviceSelects(ns, "auto", false)())
	testenv.Must(t, wantAddresses(ns, "auto", "10.5.0.1")())

	// Its pods are ready: the Service selects them, and the pool's slice goes once the cluster's lists one.
	completeRollout(t, d)
	testenv.Eventually(t, "the Service selects its own pods", serviceSelects(ns, "auto", true))
	testenv.Must(t, wantAddresses(ns, "auto", "10.5.0.1")())
	testenv.Must(t, k8s.Create(ctx, &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "auto-abcde", Labels: map[string]string{
		discoveryv1.LabelServiceName: "auto", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.7"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}}}))
	testenv.Eventually(t, "the pool's slice dropped", gone(ns, "auto-pool", &discoveryv1.EndpointSlice{}))
	waitSite(t, ns, "auto", "on its own pods", autoPlaced(own, v1alpha1.PlacementReasonPromoted, own, v1alpha1.PlacementReasonPromoted, "250 req/s"))
	waitEvent(t, ns, "auto", "MovedToDedicated")

	// Quiet since start. The pool still has the site in its index; it reports serving it on none of its pods
	// for now, to show the order of the demotion below.
	report(0, autoplacement.BandBelow, 0.5)
	// A minute short of the window: a pass (its spec edit shows in the thresholds in effect) keeps it.
	advanceClock(t, 9*time.Minute)
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Placement.Cooldown = dur("2m") })
	waitSite(t, ns, "auto", "kept on its own pods within the window", all(
		autoPlaced(own, v1alpha1.PlacementReasonPromoted, own, v1alpha1.PlacementReasonPromoted, "250 req/s"),
		func(s *v1alpha1.StaticSite) error {
			if c := s.Status.Placement.Auto.Cooldown.Duration; c != 2*time.Minute {
				return fmt.Errorf("cooldown in effect %v: the pass with the edit has not run", c)
			}
			return nil
		}))
	testenv.Must(t, serviceSelects(ns, "auto", true)())

	// The window ends (the requeue it asked for is played by another edit: the fake clock does not fire it).
	advanceClock(t, time.Minute)
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Placement.Cooldown = dur("1m") })
	waitSite(t, ns, "auto", "demoted, its own pods serving until the pool does",
		autoPlaced(own, v1alpha1.ReasonMovingToPool, pooled, v1alpha1.PlacementReasonDemoted, "0.5 req/s, below demoteBelow 10 req/s for 10m0s"))
	waitEvent(t, ns, "auto", "Normal Demoted 0.5 req/s")
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "auto"}, &appsv1.Deployment{}))
	testenv.Must(t, serviceSelects(ns, "auto", true)())

	// Every ready pool pod serves it: the Service goes to the pool's pods, then its own pods go.
	report(1, autoplacement.BandBelow, 0.5)
	testenv.Eventually(t, "its Deployment deleted once the pool serves it", gone(ns, "auto", &appsv1.Deployment{}))
	testenv.Must(t, serviceSelects(ns, "auto", false)())
	testenv.Must(t, wantAddresses(ns, "auto", "10.5.0.1")())
	waitSite(t, ns, "auto", "in the pool", autoPlaced(pooled, v1alpha1.PlacementReasonDemoted, pooled, v1alpha1.PlacementReasonDemoted, "0.5 req/s"))
	waitEvent(t, ns, "auto", "MovedToPool")
}

// A running site switched to Auto stays on its own pods (its first decision), whatever its traffic says.
func TestAutoPlacementStartsWhereTheSiteRuns(t *testing.T) {
	ns := namespace(t)
	pool := testPool(t, ns)
	poolPod(t, pool, "server-a", "10.6.0.1", true)
	site := createSite(t, ns, "running", pagesSite(t, ns))
	rollOutAndWaitReady(t, ns, "running")
	publish(pool, map[string]poolstate.Served{poolindex.ID(ns, "running"): {ServedBy: 1, ReadyPods: 1,
		Traffic: autoplacement.Traffic{Band: autoplacement.BandBelow, Since: suiteClock.Now().Add(-time.Hour)}}})
	updateSite(t, site, func(s *v1alpha1.StaticSite) {
		s.Spec.Placement = &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementAuto, Pool: pool.Name}
	})
	s := waitSite(t, ns, "running", "automatic, on its own pods", autoPlaced(v1alpha1.PlacementDedicated, v1alpha1.PlacementReasonAutomatic,
		v1alpha1.PlacementDedicated, v1alpha1.PlacementReasonAutomatic, "starts on the site's own pods"))
	// The thresholds derived from the pool: half of 2000 req/s on each of its 2 pods, a tenth of that.
	if a := s.Status.Placement.Auto; a.PromoteAbove != 2000 || a.DemoteBelow != 200 || a.DemoteAfter.Duration != 30*time.Minute {
		t.Errorf("derived thresholds %+v", *a)
	}
	testenv.Must(t, serviceSelects(ns, "running", true)())
}

// The API refuses inconsistent automatic placements, naming the field.
func TestAutoPlacementValidation(t *testing.T) {
	ns := namespace(t)
	for name, tc := range map[string]struct {
		placement v1alpha1.PlacementSpec
		message   string
	}{
		"no pool":            {v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementAuto}, "spec.placement.pool is required when spec.placement.mode is Auto"},
		"inverted":           {v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementAuto, Pool: "p", PromoteAbove: ptr.To[int64](10), DemoteBelow: ptr.To[int64](10)}, "spec.placement.demoteBelow must be below spec.placement.promoteAbove"},
		"thresholds on Pool": {v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: "p", PromoteAbove: ptr.To[int64](10)}, "apply to mode Auto only"},
		"short window":       {v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementAuto, Pool: "p", DemoteAfter: dur("1s")}, "spec.placement.demoteAfter must be between 10s and 168h"},
		"long cooldown":      {v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementAuto, Pool: "p", Cooldown: dur("25h")}, "spec.placement.cooldown must be between 0s and 24h"},
		"zero promoteAbove":  {v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementAuto, Pool: "p", PromoteAbove: ptr.To[int64](0)}, "spec.placement.promoteAbove"},
	} {
		t.Run(name, func(t *testing.T) {
			spec := pagesSite(t, ns)
			spec.Placement = &tc.placement
			err := k8s.Create(context.Background(), &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "refused"}, Spec: spec})
			if err == nil || !strings.Contains(err.Error(), tc.message) {
				t.Fatalf("create: %v, want refused with %q", err, tc.message)
			}
		})
	}
}
