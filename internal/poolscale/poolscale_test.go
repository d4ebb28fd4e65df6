package poolscale

import (
	"strings"
	"testing"
	"time"
)

var spec = Spec{Floor: 2, Max: 6, TargetRPSPerPod: 1000, ScaleDownDelay: 5 * time.Minute}

func TestNeededIsWithinTheBounds(t *testing.T) {
	for _, c := range []struct {
		rps  float64
		want int32
	}{
		{0, 2}, {1, 2}, {1999, 2}, {2000, 2}, {2001, 3}, {5500, 6}, {1e12, 6},
	} {
		if got := Needed(spec, c.rps); got != c.want {
			t.Errorf("Needed(%v) = %d, want %d", c.rps, got, c.want)
		}
	}
	// A ceiling below the floor (the CRD refuses it) keeps the floor.
	if got := Needed(Spec{Floor: 3, Max: 1, TargetRPSPerPod: 10}, 1000); got != 3 {
		t.Errorf("Needed with max < floor = %d, want the floor 3", got)
	}
}

// A pool grows at once, shrinks only after the rate has needed fewer pods for the whole delay, and then to the
// most pods that window needed; a reading in between that needs as many as run starts the window again.
func TestUpAtOnceDownAfterTheDelayToTheWindowsPeak(t *testing.T) {
	t0 := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	var w Window
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	step := func(current int32, rps float64, measured bool, now time.Time, want int32) Decision {
		t.Helper()
		d := Decide(spec, current, Reading{Known: true, RPS: rps, Measured: measured}, &w, now)
		if d.Replicas != want {
			t.Fatalf("at %s, %d running, %v req/s (measured %v): %d pods (%s), want %d", now.Sub(t0), current, rps, measured, d.Replicas, d.Message, want)
		}
		return d
	}
	step(2, 4500, true, at(0), 5)
	// A lower bound above what runs still adds pods.
	step(5, 5800, false, at(15*time.Second), 6)
	// Low: the window opens, nothing removed yet.
	d := step(6, 2500, true, at(time.Minute), 6)
	if !strings.Contains(d.Message, "kept until the rate has stayed low for 5m0s") {
		t.Errorf("message %q does not say why the pods are kept", d.Message)
	}
	step(6, 3500, true, at(3*time.Minute), 6)
	// A lower bound in the window removes nothing and restarts the window.
	step(6, 100, false, at(4*time.Minute), 6)
	if !w.Since.IsZero() {
		t.Fatalf("an unmeasured reading left the window open: %+v", w)
	}
	step(6, 1500, true, at(5*time.Minute), 6)
	step(6, 3200, true, at(7*time.Minute), 6)
	// Five minutes after the window opened: down to the window's peak (3,200 req/s needs 4), not to 2.
	step(6, 1500, true, at(10*time.Minute), 4)
	if !w.Since.IsZero() {
		t.Fatalf("the window stayed open after the scale-down: %+v", w)
	}
	// A reading that needs what runs closes a window.
	step(4, 500, true, at(11*time.Minute), 4)
	step(4, 3900, true, at(12*time.Minute), 4)
	if !w.Since.IsZero() {
		t.Fatalf("a reading needing what runs left the window open: %+v", w)
	}
	step(4, 500, true, at(13*time.Minute), 4)
	step(4, 500, true, at(18*time.Minute), 2)
}

// Without a rate nothing moves but the bounds; a spec's new bounds apply at once.
func TestWithoutARateOnlyTheBoundsApply(t *testing.T) {
	var w Window
	now := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	if d := Decide(spec, 4, Reading{}, &w, now); d.Replicas != 4 || !strings.Contains(d.Message, "no rate measured yet") {
		t.Errorf("no reading, 4 running: %+v", d)
	}
	if d := Decide(spec, 1, Reading{}, &w, now); d.Replicas != 2 {
		t.Errorf("no reading, below the floor: %+v, want the floor 2", d)
	}
	if d := Decide(spec, 9, Reading{Known: true, RPS: 8000, Measured: true}, &w, now); d.Replicas != 6 {
		t.Errorf("9 running above a ceiling of 6: %+v, want 6 at once", d)
	}
	// A zero delay scales down on the first low reading.
	s := spec
	s.ScaleDownDelay = 0
	if d := Decide(s, 6, Reading{Known: true, RPS: 10, Measured: true}, &w, now); d.Replicas != 2 {
		t.Errorf("delay 0: %+v, want 2 at once", d)
	}
}
