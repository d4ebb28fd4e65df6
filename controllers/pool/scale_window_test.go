package pool

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolread"
)

// A scale-down decision whose status write is refused (a conflict: the pass read the pool before its previous
// pass' write reached the cache) is decided again by the next pass, not lost: the window it closed stays open
// until a pass's status is written. Before, the refused pass's window was kept, the next pass found the old count
// in the status and opened a new window there: a whole scaleDownDelay more at the old count (the suite's
// TestPoolScalesOnItsSitesTraffic failed 1 run in 20 under load that way, at 2 replicas instead of 1).
func TestScaleDownDecisionSurvivesARefusedStatusWrite(t *testing.T) {
	r := &Reconciler{TrafficMinInterval: time.Second}
	pool := &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: v1alpha1.StaticSitePoolSpec{Replicas: ptr.To[int32](1),
			Autoscaling: &v1alpha1.PoolAutoscalingSpec{MaxReplicas: 4, TargetRPSPerPod: 100, ScaleDownDelaySeconds: ptr.To[int32](60)}},
		Status: v1alpha1.StaticSitePoolStatus{Autoscaling: &v1alpha1.PoolAutoscalingStatus{DesiredReplicas: 2}}}
	quiet := []poolPodCounts{{uid: "u1", sites: map[string]poolread.ServerSite{"t.a": {ID: "t.a", Requests: 7, Counted: true}}}}
	t0 := time.Date(2026, 12, 3, 1, 0, 0, 0, time.UTC)
	// pass measures at now; written says whether its status write went through.
	pass := func(now time.Time, written bool) int32 {
		t.Helper()
		o := &observation{pool: pool, now: now, admitted: []admittedSite{{}}}
		r.measureScale(o, quiet)
		if o.scale == nil {
			t.Fatal("no scale observation")
		}
		if written {
			r.keepScaleWindow(o)
		}
		return o.scale.decision.Replicas
	}
	pass(t0, true)                                           // the first reading: no rate yet
	if got := pass(t0.Add(10*time.Second), true); got != 2 { // 0 req/s: the window opens, 2 kept
		t.Fatalf("window opened: decision %d, want 2 kept", got)
	}
	end := t0.Add(71 * time.Second)
	if got := pass(end, false); got != 1 { // 61 s below: down to 1, but the write is refused
		t.Fatalf("after the delay: decision %d, want 1", got)
	}
	for i := range 3 { // the passes after it, the status still saying 2, decide 1 again
		if got := pass(end, i == 2); got != 1 {
			t.Fatalf("pass %d after the refused write: decision %d, want 1 again", i+1, got)
		}
	}
	// Once written, the window is closed: the next pass at the new count opens its own.
	pool.Status.Autoscaling.DesiredReplicas = 1
	if got := pass(end.Add(10*time.Second), true); got != 1 {
		t.Fatalf("at the floor: decision %d, want 1", got)
	}
}
