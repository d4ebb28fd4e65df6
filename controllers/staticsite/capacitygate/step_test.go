package capacitygate

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The measurement's name stays a DNS label the Benchmark CRD accepts, whatever the site's name.
func TestMeasurementName(t *testing.T) {
	long := strings.Repeat("a", 62) + "b"
	if n := MeasurementName(long, "0123456789ab"); len(n) > maxBenchmarkName || !strings.HasSuffix(n, "-cap-01234567") {
		t.Errorf("name %q (%d)", n, len(n))
	}
	if n := MeasurementName(strings.Repeat("a", 46)+"-x", "0123456789ab"); strings.Contains(n, "--") {
		t.Errorf("name %q", n)
	}
	if n := MeasurementName("site", "0123456789ab"); n != "site-cap-01234567" {
		t.Errorf("name %q", n)
	}
}

// A failed measurement is tried again only once MeasurementRetry has passed since it failed.
func TestFailedRecently(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	failed := capacityCondition(metav1.ConditionFalse, v1alpha1.ReasonMeasurementFailed, "x")
	failed.LastTransitionTime = metav1.NewTime(at)
	if retry, ok := failedRecently(failed, at.Add(time.Minute)); !ok || !retry.Equal(at.Add(MeasurementRetry)) {
		t.Errorf("a minute after a failure: %v %v", retry, ok)
	}
	if _, ok := failedRecently(failed, at.Add(MeasurementRetry)); ok {
		t.Error("the retry is due at MeasurementRetry")
	}
	measuringNow := capacityCondition(metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity, "x")
	if _, ok := failedRecently(measuringNow, at); ok {
		t.Error("a measurement under way is no failure")
	}
}
