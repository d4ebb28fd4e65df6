package staticsite

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
)

// Placed from the Board, every case: an error wins over the counts (the pool may still serve the last good
// content), a report of another pool is no report.
func TestPoolPlaced(t *testing.T) {
	for name, tc := range map[string]struct {
		known  bool
		served poolstate.Served
		status metav1.ConditionStatus
		reason string
	}{
		"not reported": {false, poolstate.Served{}, metav1.ConditionUnknown, v1alpha1.ReasonPoolNotReported},
		"other pool":   {true, poolstate.Served{Pool: "other", ServedBy: 2, ReadyPods: 2}, metav1.ConditionUnknown, v1alpha1.ReasonPoolNotReported},
		"served":       {true, poolstate.Served{Pool: "shared", ServedBy: 2, ReadyPods: 2}, metav1.ConditionTrue, v1alpha1.ReasonServedByPool},
		"catching up":  {true, poolstate.Served{Pool: "shared", ServedBy: 1, ReadyPods: 2}, metav1.ConditionUnknown, v1alpha1.ReasonPoolCatchingUp},
		"no ready pod": {true, poolstate.Served{Pool: "shared"}, metav1.ConditionFalse, v1alpha1.ReasonNoReadyPoolPods},
		"fetch error":  {true, poolstate.Served{Pool: "shared", ServedBy: 2, ReadyPods: 2, FetchError: "x"}, metav1.ConditionFalse, v1alpha1.ReasonPoolFetchError},
		"pod error":    {true, poolstate.Served{Pool: "shared", ReadyPods: 2, PodError: "too many files"}, metav1.ConditionFalse, v1alpha1.ReasonPoolPodError},
	} {
		c := poolPlaced(&poolPass{name: "shared", known: tc.known, served: tc.served})
		if c.Status != tc.status || c.Reason != tc.reason || c.Message == "" {
			t.Errorf("%s: %s/%s %q, want %s/%s", name, c.Status, c.Reason, c.Message, tc.status, tc.reason)
		}
	}
}
