package autoplacement

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

var t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

func pool(rpsPerPod int64, replicas int32) *v1alpha1.StaticSitePool {
	p := &v1alpha1.StaticSitePool{}
	p.Name = "shared"
	p.Spec.SiteLimits.RequestsPerSecond = ptr.To(rpsPerPod)
	p.Spec.Replicas = ptr.To(replicas)
	return p
}

func TestThresholdsOf(t *testing.T) {
	d := func(s string) *metav1.Duration { v, _ := time.ParseDuration(s); return &metav1.Duration{Duration: v} }
	for name, tc := range map[string]struct {
		pool *v1alpha1.StaticSitePool
		spec *v1alpha1.PlacementSpec
		want Thresholds
	}{
		"defaults from the pool": {pool(1000, 3), nil, Thresholds{1500, 150, 30 * time.Minute, 5 * time.Minute}},
		"no pool: its defaults":  {nil, &v1alpha1.PlacementSpec{}, Thresholds{2000, 200, 30 * time.Minute, 5 * time.Minute}},
		"a tiny pool":            {pool(1, 1), nil, Thresholds{1, 0, 30 * time.Minute, 5 * time.Minute}},
		"all set": {pool(1000, 3), &v1alpha1.PlacementSpec{PromoteAbove: ptr.To[int64](50), DemoteBelow: ptr.To[int64](5),
			DemoteAfter: d("1m"), Cooldown: d("0s")}, Thresholds{50, 5, time.Minute, 0}},
		"promoteAbove set: demoteBelow a tenth": {pool(1000, 3), &v1alpha1.PlacementSpec{PromoteAbove: ptr.To[int64](400)},
			Thresholds{400, 40, 30 * time.Minute, 5 * time.Minute}},
		"demoteBelow over the derived promoteAbove: promoteAbove twice it": {pool(100, 1),
			&v1alpha1.PlacementSpec{DemoteBelow: ptr.To[int64](80)}, Thresholds{160, 80, 30 * time.Minute, 5 * time.Minute}},
		"inverted (stored around the API's rule): never equal": {nil,
			&v1alpha1.PlacementSpec{PromoteAbove: ptr.To[int64](10), DemoteBelow: ptr.To[int64](10)}, Thresholds{10, 9, 30 * time.Minute, 5 * time.Minute}},
	} {
		t.Run(name, func(t *testing.T) {
			if got := ThresholdsOf(tc.pool, tc.spec); got != tc.want {
				t.Fatalf("ThresholdsOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestBandOf(t *testing.T) {
	th := Thresholds{PromoteAbove: 100, DemoteBelow: 10}
	for _, tc := range []struct {
		rps      float64
		complete bool
		want     Band
	}{
		{100.5, true, BandAbove}, {100.5, false, BandAbove}, // a lower bound above is above
		{100, true, BandBetween}, {10, true, BandBetween}, {9.9, true, BandBelow}, {0, true, BandBelow},
		{0, false, BandUnknown}, {50, false, BandUnknown},
	} {
		if got := BandOf(th, tc.rps, tc.complete); got != tc.want {
			t.Errorf("BandOf(%v, complete %v) = %q, want %q", tc.rps, tc.complete, got, tc.want)
		}
	}
	if got := BandOf(Thresholds{PromoteAbove: 1, DemoteBelow: 0}, 0, true); got != BandBetween {
		t.Errorf("demoteBelow 0: band %q, want Between (never demoted)", got)
	}
}

func TestDecide(t *testing.T) {
	th := Thresholds{PromoteAbove: 100, DemoteBelow: 10, DemoteAfter: 30 * time.Minute, Cooldown: 5 * time.Minute}
	last := func(target, reason string, at time.Time) *v1alpha1.AutoPlacementStatus {
		return &v1alpha1.AutoPlacementStatus{Target: target, Reason: reason, DecidedAt: metav1.NewTime(at), Message: "before"}
	}
	traffic := func(b Band, since time.Time, rps float64) Traffic { return Traffic{Band: b, Since: since, RPS: rps} }
	const pool, own = v1alpha1.PlacementPool, v1alpha1.PlacementDedicated
	const promoted, demoted, automatic = v1alpha1.PlacementReasonPromoted, v1alpha1.PlacementReasonDemoted, v1alpha1.PlacementReasonAutomatic
	for name, tc := range map[string]struct {
		in      Input
		target  string
		reason  string
		moved   bool
		at      time.Time
		recheck time.Duration
		message string
	}{
		"a new site starts in the pool": {in: Input{Now: t0}, target: pool, reason: automatic, at: t0},
		"a running site starts where it runs": {in: Input{OwnPods: true, Now: t0, Traffic: traffic(BandBelow, t0.Add(-time.Hour), 0)},
			target: own, reason: automatic, at: t0, recheck: 30 * time.Minute},
		"a new busy site is promoted at once": {in: Input{Now: t0, Traffic: traffic(BandAbove, t0, 250)},
			target: own, reason: promoted, moved: true, at: t0, message: "250 req/s, above promoteAbove 100 req/s"},
		"in the pool, above: promoted": {in: Input{Last: last(pool, demoted, t0.Add(-time.Hour)), Now: t0, Traffic: traffic(BandAbove, t0, 101)},
			target: own, reason: promoted, moved: true, at: t0},
		"in the pool, above within the cooldown: held": {in: Input{Last: last(pool, demoted, t0.Add(-2*time.Minute)), Now: t0, Traffic: traffic(BandAbove, t0, 500)},
			target: pool, reason: demoted, at: t0.Add(-2 * time.Minute), recheck: 3 * time.Minute},
		"in the pool, between: stays": {in: Input{Last: last(pool, automatic, t0.Add(-time.Hour)), Now: t0, Traffic: traffic(BandBetween, t0, 50)},
			target: pool, reason: automatic, at: t0.Add(-time.Hour)},
		"in the pool, below: stays": {in: Input{Last: last(pool, demoted, t0.Add(-time.Hour)), Now: t0, Traffic: traffic(BandBelow, t0.Add(-time.Hour), 0)},
			target: pool, reason: demoted, at: t0.Add(-time.Hour)},
		"in the pool, unknown: stays": {in: Input{Last: last(pool, demoted, t0.Add(-time.Hour)), Now: t0},
			target: pool, reason: demoted, at: t0.Add(-time.Hour)},
		"dedicated, above: stays": {in: Input{Last: last(own, promoted, t0.Add(-time.Hour)), Now: t0, Traffic: traffic(BandAbove, t0, 1e6)},
			target: own, reason: promoted, at: t0.Add(-time.Hour)},
		"dedicated, below for less than the window: rechecked when it ends": {in: Input{Last: last(own, promoted, t0.Add(-time.Hour)), Now: t0,
			Traffic: traffic(BandBelow, t0.Add(-20*time.Minute), 1)}, target: own, reason: promoted, at: t0.Add(-time.Hour), recheck: 10 * time.Minute},
		"dedicated, below for the window: demoted": {in: Input{Last: last(own, promoted, t0.Add(-time.Hour)), Now: t0,
			Traffic: traffic(BandBelow, t0.Add(-30*time.Minute), 2.5)}, target: pool, reason: demoted, moved: true, at: t0,
			message: "2.5 req/s, below demoteBelow 10 req/s for 30m0s"},
		"dedicated, between resets nothing here but does not demote": {in: Input{Last: last(own, promoted, t0.Add(-time.Hour)), Now: t0,
			Traffic: traffic(BandBetween, t0.Add(-time.Hour), 20)}, target: own, reason: promoted, at: t0.Add(-time.Hour)},
		"dedicated, unknown: stays, whatever the time": {in: Input{Last: last(own, promoted, t0.Add(-48*time.Hour)), Now: t0},
			target: own, reason: promoted, at: t0.Add(-48 * time.Hour)},
		"the window counts from the promotion, not from an older below": {in: Input{Last: last(own, promoted, t0.Add(-10*time.Minute)), Now: t0,
			Traffic: traffic(BandBelow, t0.Add(-2*time.Hour), 0)}, target: own, reason: promoted, at: t0.Add(-10 * time.Minute), recheck: 20 * time.Minute},
		"a cooldown longer than the window holds the demotion": {in: Input{Thresholds: Thresholds{PromoteAbove: 100, DemoteBelow: 10, DemoteAfter: time.Minute, Cooldown: time.Hour},
			Last: last(own, promoted, t0.Add(-10*time.Minute)), Now: t0, Traffic: traffic(BandBelow, t0.Add(-9*time.Minute), 0)},
			target: own, reason: promoted, at: t0.Add(-10 * time.Minute), recheck: 50 * time.Minute},
		"an unknown target is a first decision": {in: Input{Last: last("Elsewhere", promoted, t0.Add(-time.Hour)), OwnPods: true, Now: t0},
			target: own, reason: automatic, at: t0},
	} {
		t.Run(name, func(t *testing.T) {
			in := tc.in
			if in.Thresholds == (Thresholds{}) {
				in.Thresholds = th
			}
			d := Decide(in)
			if d.Target != tc.target || d.Reason != tc.reason || d.Moved != tc.moved || !d.DecidedAt.Equal(tc.at) || d.RecheckAfter != tc.recheck {
				t.Fatalf("Decide = %+v\nwant target %s reason %s moved %v at %v recheck %v", d, tc.target, tc.reason, tc.moved, tc.at, tc.recheck)
			}
			if !strings.Contains(d.Message, tc.message) {
				t.Fatalf("message %q, want it to contain %q", d.Message, tc.message)
			}
		})
	}
}

// A site whose rate swings across both thresholds every minute moves at most once per cooldown: the decisions are
// replayed minute by minute, each reading the status the previous one left.
func TestDecideCannotFlap(t *testing.T) {
	th := Thresholds{PromoteAbove: 100, DemoteBelow: 10, DemoteAfter: 10 * time.Second, Cooldown: 5 * time.Minute}
	var last *v1alpha1.AutoPlacementStatus
	var moves []time.Time
	since := t0
	for i := range 60 {
		now := t0.Add(time.Duration(i) * time.Minute)
		tr := Traffic{Band: BandAbove, Since: now, RPS: 1000}
		if i%2 == 1 {
			tr = Traffic{Band: BandBelow, Since: since, RPS: 0}
		} else {
			since = now.Add(30 * time.Second) // below from half a minute after each high minute
		}
		d := Decide(Input{Thresholds: th, Last: last, Now: now, Traffic: tr})
		if d.Moved {
			moves = append(moves, now)
		}
		last = Status(d, th)
	}
	for i := 1; i < len(moves); i++ {
		if gap := moves[i].Sub(moves[i-1]); gap < th.Cooldown {
			t.Fatalf("moves at %v and %v: %v apart, under the cooldown %v", moves[i-1], moves[i], gap, th.Cooldown)
		}
	}
	if len(moves) < 2 {
		t.Fatalf("%d moves in an hour of swings: the test does not exercise the cooldown", len(moves))
	}
}
