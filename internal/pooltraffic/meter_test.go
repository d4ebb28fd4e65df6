package pooltraffic

import (
	"math"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/autoplacement"
)

var (
	t0 = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)
	th = autoplacement.Thresholds{PromoteAbove: 100, DemoteBelow: 10}
)

func reading(missing bool, counts ...Count) map[string]Reading {
	return map[string]Reading{"team.docs": {Counts: counts, Missing: missing, Thresholds: th}}
}

// step is one pass: the clock, what the pods say, and the traffic the pass must publish.
type step struct {
	at        time.Duration
	missing   bool
	counts    []Count
	rps       float64
	band      autoplacement.Band
	sinceAt   time.Duration
	forgotten bool
}

func run(t *testing.T, steps []step) {
	t.Helper()
	m := &Meter{MinInterval: 5 * time.Second}
	for i, s := range steps {
		in := reading(s.missing, s.counts...)
		if s.forgotten {
			in = map[string]Reading{}
		}
		got := m.Update(t0.Add(s.at), in)
		if s.forgotten {
			if len(got) != 0 || len(m.sites) != 0 {
				t.Fatalf("pass %d: the site is still measured", i)
			}
			continue
		}
		tr := got["team.docs"]
		if math.Abs(tr.RPS-s.rps) > 1e-9 || tr.Band != s.band || !tr.Since.Equal(t0.Add(s.sinceAt)) {
			t.Fatalf("pass %d at +%v: traffic %+v, want %v req/s %q since +%v", i, s.at, tr, s.rps, s.band, s.sinceAt)
		}
	}
}

func TestRatesSumPodsOverTheirInterval(t *testing.T) {
	run(t, []step{
		// First sight of both pods: no rate yet.
		{at: 0, counts: []Count{{"a", 1000}, {"b", 50}}, band: autoplacement.BandUnknown},
		// 10 s later: (1500-1000)/10 + (550-50)/10 = 100 req/s: between (not above 100).
		{at: 10 * time.Second, counts: []Count{{"a", 1500}, {"b", 550}}, rps: 100, band: autoplacement.BandBetween, sinceAt: 10 * time.Second},
		// A pass 1 s later changes no rate, whatever the counters say.
		{at: 11 * time.Second, counts: []Count{{"a", 9e9}, {"b", 550}}, rps: 100, band: autoplacement.BandBetween, sinceAt: 10 * time.Second},
		// 20 s after the last rate: (3510-1500)/20 = 100.5, b idle: above.
		{at: 30 * time.Second, counts: []Count{{"a", 3510}, {"b", 550}}, rps: 100.5, band: autoplacement.BandAbove, sinceAt: 30 * time.Second},
		// Quiet: below.
		{at: 40 * time.Second, counts: []Count{{"a", 3520}, {"b", 550}}, rps: 1, band: autoplacement.BandBelow, sinceAt: 40 * time.Second},
		// Still below: since stays.
		{at: 50 * time.Second, counts: []Count{{"a", 3520}, {"b", 551}}, rps: 0.1, band: autoplacement.BandBelow, sinceAt: 40 * time.Second},
		// Pod b is gone (scaled down): its traffic went to a; complete without it.
		{at: 60 * time.Second, counts: []Count{{"a", 3530}}, rps: 1, band: autoplacement.BandBelow, sinceAt: 40 * time.Second},
		{forgotten: true},
		// Measured again from scratch.
		{at: 70 * time.Second, counts: []Count{{"a", 3530}}, band: autoplacement.BandUnknown, sinceAt: 70 * time.Second},
	})
}

// A restarted pod's counter starts again at 0, and a new pod has no earlier reading: neither gives a rate that
// pass, so the site's rate is a lower bound: it may say Above, never Below (a restart must not look quiet and
// start a demotion window).
func TestResetsAndNewPodsGiveALowerBound(t *testing.T) {
	run(t, []step{
		{at: 0, counts: []Count{{"a", 100}, {"b", 100}}, band: autoplacement.BandUnknown},
		{at: 10 * time.Second, counts: []Count{{"a", 100}, {"b", 100}}, rps: 0, band: autoplacement.BandBelow, sinceAt: 10 * time.Second},
		// b restarted: its counter went down.
		{at: 20 * time.Second, counts: []Count{{"a", 100}, {"b", 3}}, rps: 0, band: autoplacement.BandUnknown, sinceAt: 20 * time.Second},
		// Its next reading counts from its restart's.
		{at: 30 * time.Second, counts: []Count{{"a", 100}, {"b", 23}}, rps: 2, band: autoplacement.BandBelow, sinceAt: 30 * time.Second},
		// A new pod c, and a busy a: the lower bound is already above.
		{at: 40 * time.Second, counts: []Count{{"a", 2100}, {"b", 23}, {"c", 0}}, rps: 200, band: autoplacement.BandAbove, sinceAt: 40 * time.Second},
	})
}

// A pod that could not be read makes the rate a lower bound; when it answers again, its last sample (kept) gives
// its rate over the whole time since.
func TestAnUnreadablePodIsKeptForItsReturn(t *testing.T) {
	run(t, []step{
		{at: 0, counts: []Count{{"a", 0}, {"b", 0}}, band: autoplacement.BandUnknown},
		{at: 10 * time.Second, counts: []Count{{"a", 0}, {"b", 0}}, rps: 0, band: autoplacement.BandBelow, sinceAt: 10 * time.Second},
		{at: 20 * time.Second, missing: true, counts: []Count{{"a", 10}}, rps: 1, band: autoplacement.BandUnknown, sinceAt: 20 * time.Second},
		{at: 30 * time.Second, counts: []Count{{"a", 20}, {"b", 200}}, rps: 1 + 200.0/20, band: autoplacement.BandBetween, sinceAt: 30 * time.Second},
	})
}

// Hostile counters: a jump of 2^64-1 in one second counts as MaxRPSPerPod, not as an overflow or +Inf.
func TestAPodsRateIsBounded(t *testing.T) {
	run(t, []step{
		{at: 0, counts: []Count{{"a", 0}, {"b", 0}}, band: autoplacement.BandUnknown},
		{at: 5 * time.Second, counts: []Count{{"a", math.MaxUint64}, {"b", math.MaxUint64}}, rps: 2 * MaxRPSPerPod,
			band: autoplacement.BandAbove, sinceAt: 5 * time.Second},
	})
}

// New thresholds move the band at once, without a new rate.
func TestBandFollowsTheThresholds(t *testing.T) {
	m := &Meter{}
	m.Update(t0, reading(false, Count{"a", 0}))
	got := m.Update(t0.Add(10*time.Second), reading(false, Count{"a", 500}))["team.docs"]
	if got.Band != autoplacement.BandBetween {
		t.Fatalf("50 req/s: %+v", got)
	}
	lower := map[string]Reading{"team.docs": {Counts: []Count{{"a", 500}}, Thresholds: autoplacement.Thresholds{PromoteAbove: 40, DemoteBelow: 4}}}
	got = m.Update(t0.Add(11*time.Second), lower)["team.docs"]
	if got.Band != autoplacement.BandAbove || got.RPS != 50 || !got.Since.Equal(t0.Add(11*time.Second)) {
		t.Fatalf("promoteAbove lowered to 40: %+v", got)
	}
}
