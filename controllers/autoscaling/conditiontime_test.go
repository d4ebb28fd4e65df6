package autoscaling

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The autoscaler's conditions are stamped by its injected clock, like every decision it makes: their transition
// times are the fake time of the pass that changed them, never the wall clock.
func TestConditionTimesFollowTheInjectedClock(t *testing.T) {
	ns := newNamespace(t, "autoscale-clock")
	s := newStepper(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](1), MaxReplicas: 3,
		TargetRPSPerPod: ptr.To[int64](100)}))
	s.load.setRPS(siteKey(ns, "web"), 50)
	s.pass()
	s.step() // the first rate: both conditions are set
	decidedAt := s.clock.Now()
	for _, typ := range []string{v1alpha1.ConditionAbleToScale, v1alpha1.ConditionScalingActive} {
		c := meta.FindStatusCondition(s.site().Status.Conditions, typ)
		if c == nil || !c.LastTransitionTime.Time.Equal(decidedAt) {
			t.Fatalf("%s = %+v, want it stamped at the fake time %v", typ, c, decidedAt)
		}
	}
	s.step() // unchanged: the transition time stays
	if c := meta.FindStatusCondition(s.site().Status.Conditions, v1alpha1.ConditionScalingActive); c == nil || !c.LastTransitionTime.Time.Equal(decidedAt) {
		t.Fatalf("ScalingActive = %+v, want it to keep %v", c, decidedAt)
	}
}
