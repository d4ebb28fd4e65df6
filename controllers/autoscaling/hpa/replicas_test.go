package hpa

import (
	"errors"
	"testing"
)

func ready(name string, v float64) Pod {
	return Pod{Name: name, State: PodReady, HasValue: true, Value: v}
}
func missing(name string) Pod { return Pod{Name: name, State: PodReady} }
func unready(name string) Pod { return Pod{Name: name, State: PodUnready} }
func ignored(name string, v float64) Pod {
	return Pod{Name: name, State: PodIgnored, HasValue: true, Value: v}
}

var defaultTol = Tolerances{ScaleUp: DefaultTolerance, ScaleDown: DefaultTolerance}

// Each case names the replica_calculator.go behaviour it checks (calcPlainMetricReplicas, Pods metric with an
// AverageValue target).
func TestReplicaCount(t *testing.T) {
	cases := []struct {
		name    string
		current int32
		pods    []Pod
		target  float64
		tol     Tolerances
		want    int32
		wantErr error
	}{
		{"scale up: desired = ceil(readyPods * average/target)", 3,
			[]Pod{ready("a", 150), ready("b", 150), ready("c", 150)}, 100, defaultTol, 5, nil},
		{"scale down: desired = ceil(readyPods * average/target)", 4,
			[]Pod{ready("a", 40), ready("b", 40), ready("c", 40), ready("d", 40)}, 100, defaultTol, 2, nil},
		{"ratio inside tolerance above target keeps the current count", 3,
			[]Pod{ready("a", 108), ready("b", 108), ready("c", 108)}, 100, defaultTol, 3, nil},
		{"ratio inside tolerance below target keeps the current count", 3,
			[]Pod{ready("a", 91), ready("b", 91), ready("c", 91)}, 100, defaultTol, 3, nil},
		{"tolerance boundary is inclusive (|1-ratio| <= tolerance)", 3,
			[]Pod{ready("a", 110), ready("b", 110), ready("c", 110)}, 100, defaultTol, 3, nil},
		{"just outside tolerance scales", 10,
			[]Pod{ready("a", 111), ready("b", 111), ready("c", 111), ready("d", 111), ready("e", 111),
				ready("f", 111), ready("g", 111), ready("h", 111), ready("i", 111), ready("j", 111)}, 100, defaultTol, 12, nil},
		{"configurable tolerance per direction: zero scale-up tolerance scales on +5%", 10,
			[]Pod{ready("a", 105), ready("b", 105), ready("c", 105), ready("d", 105), ready("e", 105),
				ready("f", 105), ready("g", 105), ready("h", 105), ready("i", 105), ready("j", 105)}, 100,
			Tolerances{ScaleUp: 0, ScaleDown: 0.1}, 11, nil},
		{"configurable tolerance per direction: wide scale-down tolerance holds at -20%", 5,
			[]Pod{ready("a", 80), ready("b", 80), ready("c", 80), ready("d", 80), ready("e", 80)}, 100,
			Tolerances{ScaleUp: 0.1, ScaleDown: 0.25}, 5, nil},
		{"missing metrics on scale-down: missing pods assumed at 100% of target", 4,
			[]Pod{ready("a", 50), ready("b", 50), missing("c"), missing("d")}, 100, defaultTol, 3, nil},
		{"missing metrics on scale-up: missing pods assumed at 0", 4,
			[]Pod{ready("a", 300), ready("b", 300), missing("c"), missing("d")}, 100, defaultTol, 6, nil},
		{"missing metrics: no change when the re-run ratio falls inside tolerance", 2,
			[]Pod{ready("a", 85), missing("b")}, 100, defaultTol, 2, nil},
		{"missing metrics: no change when the assumptions reverse the scale direction", 3,
			[]Pod{ready("a", 150), missing("b"), unready("c")}, 100, defaultTol, 3, nil},
		{"unready pods on scale-up assumed at 0: hold instead of a scale-down while over target", 4,
			[]Pod{ready("a", 115), ready("b", 115), unready("c"), unready("d")}, 100, defaultTol, 4, nil},
		{"unready pods on scale-up assumed at 0: scale up by the load of the ready pods", 3,
			[]Pod{ready("a", 400), ready("b", 400), unready("c")}, 100, defaultTol, 8, nil},
		{"unready pods are left out on scale-down", 4,
			[]Pod{ready("a", 40), ready("b", 40), unready("c"), unready("d")}, 100, defaultTol, 1, nil},
		{"deleted and failed pods are ignored entirely", 3,
			[]Pod{ready("a", 200), ready("b", 200), ignored("c", 0)}, 100, defaultTol, 4, nil},
		{"ceil is not fooled by float noise (1.2 x 5 = 6)", 5,
			[]Pod{ready("a", 120), ready("b", 120), ready("c", 120), ready("d", 120), ready("e", 120)}, 100, defaultTol, 6, nil},
		{"no pods is an error", 2, nil, 100, defaultTol, 0, ErrNoPods},
		{"no ready pod with a metric is an error", 2, []Pod{unready("a"), missing("b")}, 100, defaultTol, 0, ErrNoMetrics},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := ReplicaCount(tc.current, tc.pods, tc.target, tc.tol)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error = %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Fatalf("replicas = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestReplicaCountUsage(t *testing.T) {
	_, u, err := ReplicaCount(3, []Pod{ready("a", 100), ready("b", 300), missing("c"), unready("d")}, 100, defaultTol)
	if err != nil {
		t.Fatal(err)
	}
	if u.Total != 400 || u.Average != 200 || u.Measured != 2 || u.Ratio != 2 {
		t.Fatalf("usage = %+v, want total 400, average 200 over 2 pods, ratio 2", u)
	}
}
