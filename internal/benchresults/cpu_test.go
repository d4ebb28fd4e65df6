package benchresults

import "testing"

func TestWindowUse(t *testing.T) {
	// One core saturated from t=1000 to t=5000 after an idle start-up second, limit 1 core.
	samples := []CPUSample{{UnixMs: 500, Seconds: 0.1}, {UnixMs: 1000, Seconds: 0.2}, {UnixMs: 3000, Seconds: 2.2}, {UnixMs: 5000, Seconds: 4.2, ThrottledSeconds: 0.5}}
	u := WindowUse(samples, 1000, 5000, 1)
	if u.Seconds != 4 || u.WallSeconds != 4 || u.Fraction != 1 || len(u.Series) != 4 || u.Series[0] != 1 {
		t.Fatalf("%+v", u)
	}
	if u.ThrottledSeconds != 0.5 {
		t.Fatalf("throttled %v", u.ThrottledSeconds)
	}
	// Same use with two cores allowed: half.
	if u := WindowUse(samples, 1000, 5000, 2); u.Fraction != 0.5 {
		t.Fatalf("%+v", u)
	}
	// Interpolation inside a sample interval: 2000..3000 is half of 1000..3000's 2 s of CPU.
	if u := WindowUse(samples, 2000, 3000, 1); u.Seconds != 1 {
		t.Fatalf("%+v", u)
	}
	if u := WindowUse(nil, 0, 1000, 1); u.Fraction != 0 {
		t.Fatal("no samples")
	}
}
