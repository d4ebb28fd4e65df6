package autoscaling

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/internal/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/autoscaling/hpa"
)

// condition is one of the autoscaler's conditions (AbleToScale, ScalingActive) as a pass decided it, with a reason
// from api/v1alpha1/autoscaling_reasons.go.
type condition struct {
	status  bool
	reason  string
	message string
}

// fromDecision turns a condition the hpa package decided into the API's terms.
func fromDecision(c hpa.Condition) *condition {
	return &condition{status: c.Status, reason: apiReason(c.Reason), message: c.Message}
}

// hpaConditionReasons maps every reason hpa.Decide puts on a condition to the API's constant. The hpa package
// stays free of the API types, so this is the one place the two meet.
var hpaConditionReasons = map[hpa.Reason]string{
	hpa.ReasonReadyForNewScale:    v1alpha1.ReasonReadyForNewScale,
	hpa.ReasonScaleUpStabilized:   v1alpha1.ReasonScaleUpStabilized,
	hpa.ReasonScaleDownStabilized: v1alpha1.ReasonScaleDownStabilized,
	hpa.ReasonValidMetricFound:    v1alpha1.ReasonValidMetricFound,
	hpa.ReasonFailedGetMetric:     v1alpha1.ReasonFailedGetRPS,
	hpa.ReasonScalingDisabled:     v1alpha1.ReasonScalingDisabled,
}

// apiReason is the API's reason for an hpa condition reason. A reason missing from hpaConditionReasons (a new
// one added to hpa without a mapping; TestEveryHPAConditionReasonHasAnAPIConstant catches that) keeps the HPA's
// spelling rather than losing the condition.
func apiReason(r hpa.Reason) string {
	if s, ok := hpaConditionReasons[r]; ok {
		return s
	}
	return string(r)
}

// setCondition sets condType on the site from c, stamped with the pass's clock reading (now) when its status
// changes; a nil c (the pass decided nothing about it) leaves it as it was.
func setCondition(site *v1alpha1.StaticSite, condType string, c *condition, now time.Time) {
	if c == nil {
		return
	}
	status := metav1.ConditionFalse
	if c.status {
		status = metav1.ConditionTrue
	}
	reconcile.NewConditions(&site.Status.Conditions, site.Generation, now).Set(condType, status, c.reason, c.message)
}
