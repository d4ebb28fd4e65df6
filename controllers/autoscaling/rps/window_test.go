package rps

import (
	"math"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

func feed(w *Window, pod string, points ...[2]float64) {
	for _, p := range points {
		w.Add(pod, sec(p[0]), p[1])
	}
}

func wantRate(t *testing.T, w *Window, pod string, now float64, want float64) {
	t.Helper()
	got, ok := w.Rate(pod, sec(now), time.Time{})
	if !ok {
		t.Fatalf("rate of %s at t=%v unknown, want %v", pod, now, want)
	}
	if math.Abs(got-want) > 1e-9 {
		t.Fatalf("rate of %s at t=%v = %v, want %v", pod, now, got, want)
	}
}

func wantUnknown(t *testing.T, w *Window, pod string, now float64) {
	t.Helper()
	if got, ok := w.Rate(pod, sec(now), time.Time{}); ok {
		t.Fatalf("rate of %s at t=%v = %v, want unknown", pod, now, got)
	}
}

func TestSteadyRate(t *testing.T) {
	w := New(15 * time.Second)
	feed(w, "a", [2]float64{0, 0}, [2]float64{5, 500}, [2]float64{10, 1000}, [2]float64{15, 1500}, [2]float64{20, 2000})
	wantRate(t, w, "a", 20, 100)
}

func TestNewPodHasNoRateUntilTwoSamples(t *testing.T) {
	w := New(15 * time.Second)
	wantUnknown(t, w, "a", 0)
	feed(w, "a", [2]float64{0, 1234})
	wantUnknown(t, w, "a", 0)
	feed(w, "a", [2]float64{5, 1734})
	wantRate(t, w, "a", 5, 100)
}

func TestOnlyTheWindowCounts(t *testing.T) {
	w := New(10 * time.Second)
	// 1000 req/s for 20 s, then idle.
	feed(w, "a", [2]float64{0, 0}, [2]float64{10, 10000}, [2]float64{20, 20000}, [2]float64{25, 20000}, [2]float64{30, 20000})
	wantRate(t, w, "a", 30, 0) // anchor t=20, window (20, 30]
	w2 := New(10 * time.Second)
	feed(w2, "a", [2]float64{0, 0}, [2]float64{10, 10000}, [2]float64{20, 20000}, [2]float64{25, 20000})
	wantRate(t, w2, "a", 25, 2000.0/3) // anchor t=10: an increase of 10000 over [10, 25]
}

func TestStepUpShowsWithinOneInterval(t *testing.T) {
	w := New(15 * time.Second)
	feed(w, "a", [2]float64{0, 0}, [2]float64{5, 0}, [2]float64{10, 0}, [2]float64{15, 0}, [2]float64{20, 5000})
	wantRate(t, w, "a", 20, 5000.0/15) // a step of 1000 req/s for 5 s, averaged over 15 s
}

func TestCounterResetIsAnIncreaseFromZero(t *testing.T) {
	w := New(15 * time.Second)
	// 100 req/s; the server restarts between t=10 and t=15 and has counted 200 since.
	feed(w, "a", [2]float64{0, 10000}, [2]float64{5, 10500}, [2]float64{10, 11000}, [2]float64{15, 200})
	wantRate(t, w, "a", 15, (500+500+200)/15.0)
}

func TestScrapeGapsUseTheSamplesAround(t *testing.T) {
	w := New(15 * time.Second)
	// Scrapes at t=10 and t=15 failed: the rate spans the gap.
	feed(w, "a", [2]float64{0, 0}, [2]float64{5, 500}, [2]float64{20, 2000})
	wantRate(t, w, "a", 20, 100) // anchor t=5, window (5, 20]
}

func TestStaleSamplesMeanUnknown(t *testing.T) {
	w := New(15 * time.Second)
	feed(w, "a", [2]float64{0, 0}, [2]float64{5, 500})
	wantRate(t, w, "a", 19, 100)
	wantUnknown(t, w, "a", 21) // nothing scraped in the last 15 s: a missing metric, not 0 and not 100
}

func TestAncientAnchorIsNotUsed(t *testing.T) {
	w := New(10 * time.Second)
	// A long outage between t=0 and t=40: the rate over the last window must not average in 40 s of history.
	feed(w, "a", [2]float64{0, 0}, [2]float64{40, 40000})
	wantUnknown(t, w, "a", 40)
	feed(w, "a", [2]float64{45, 50000})
	wantRate(t, w, "a", 45, 2000)
}

func TestOutOfOrderAndDuplicateSamplesAreDropped(t *testing.T) {
	w := New(15 * time.Second)
	feed(w, "a", [2]float64{0, 0}, [2]float64{5, 500}, [2]float64{5, 99999}, [2]float64{3, 42}, [2]float64{10, 1000})
	wantRate(t, w, "a", 10, 100)
}

func TestPodsAreIndependentAndRetainForgets(t *testing.T) {
	w := New(15 * time.Second)
	feed(w, "a", [2]float64{0, 0}, [2]float64{5, 500})
	feed(w, "b", [2]float64{0, 0}, [2]float64{5, 5000})
	wantRate(t, w, "a", 5, 100)
	wantRate(t, w, "b", 5, 1000)
	w.Retain(map[string]bool{"b": true})
	if w.Len() != 1 {
		t.Fatalf("len = %d after Retain, want 1", w.Len())
	}
	wantUnknown(t, w, "a", 5)
}

func TestMemoryIsBounded(t *testing.T) {
	w := New(15 * time.Second)
	for i := 0; i < 10000; i++ {
		w.Add("a", sec(float64(i)), float64(i*10))
	}
	if n := len(w.pods["a"]); n > 17 {
		t.Fatalf("%d samples kept for a 15 s window at 1 s scrapes, want at most 17", n)
	}
	wantRate(t, w, "a", 9999, 10)
}

func TestSamplesBeforeSinceAreIgnored(t *testing.T) {
	w := New(15 * time.Second)
	// 1000 req/s until a rescale at t=10, 100 req/s after.
	feed(w, "a", [2]float64{0, 0}, [2]float64{5, 5000}, [2]float64{10, 10000}, [2]float64{15, 10500})
	if got, ok := w.Rate("a", sec(15), sec(10)); !ok || math.Abs(got-100) > 1e-9 {
		t.Fatalf("rate since t=10 = %v, %v; want 100", got, ok)
	}
	if _, ok := w.Rate("a", sec(15), sec(12)); ok {
		t.Fatal("one sample since t=12: want unknown")
	}
	wantRate(t, w, "a", 15, 700) // unbounded: 10500 over 15 s
}
