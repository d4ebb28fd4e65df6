package autoscaling

import (
	"testing"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/autoscaling/hpa"
)

// Every reason hpa.Decide can put on a condition reaches the StaticSite as the API's constant, with the same
// spelling as the HPA's.
func TestEveryHPAConditionReasonHasAnAPIConstant(t *testing.T) {
	want := map[hpa.Reason]string{
		hpa.ReasonReadyForNewScale:    v1alpha1.ReasonReadyForNewScale,
		hpa.ReasonScaleUpStabilized:   v1alpha1.ReasonScaleUpStabilized,
		hpa.ReasonScaleDownStabilized: v1alpha1.ReasonScaleDownStabilized,
		hpa.ReasonValidMetricFound:    v1alpha1.ReasonValidMetricFound,
		hpa.ReasonFailedGetMetric:     v1alpha1.ReasonFailedGetRPS,
		hpa.ReasonScalingDisabled:     v1alpha1.ReasonScalingDisabled,
	}
	for r, api := range want {
		if _, ok := hpaConditionReasons[r]; !ok {
			t.Errorf("hpa reason %s has no mapping in hpaConditionReasons", r)
		}
		if got := apiReason(r); got != api || got != string(r) {
			t.Errorf("apiReason(%s) = %q, want %q (the HPA's spelling)", r, got, api)
		}
	}
	if len(hpaConditionReasons) != len(want) {
		t.Errorf("hpaConditionReasons has %d entries, this test knows %d: add the new one here", len(hpaConditionReasons), len(want))
	}
}
