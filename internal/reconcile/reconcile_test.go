package reconcile

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestConditionsStampThePassClockOnlyOnATransition(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	var list []metav1.Condition
	NewConditions(&list, 3, t0).Set("Ready", metav1.ConditionFalse, "Creating", "m")
	if got := list[0]; !got.LastTransitionTime.Time.Equal(t0) || got.ObservedGeneration != 3 {
		t.Fatalf("first set: %+v", got)
	}
	t1 := t0.Add(time.Minute)
	NewConditions(&list, 4, t1).Set("Ready", metav1.ConditionFalse, "RollingOut", "m2")
	if got := list[0]; !got.LastTransitionTime.Time.Equal(t0) || got.Reason != "RollingOut" || got.ObservedGeneration != 4 {
		t.Fatalf("same status keeps its transition time: %+v", got)
	}
	NewConditions(&list, 4, t1).SetProblem("Ready", metav1.ConditionTrue, &Problem{"Available", "ok"})
	if got := list[0]; !got.LastTransitionTime.Time.Equal(t1) || got.Message != "ok" {
		t.Fatalf("a new status takes the pass's reading: %+v", got)
	}
	NewConditions(&list, 4, t1).Remove("Ready")
	if len(list) != 0 {
		t.Fatalf("removed: %+v", list)
	}
}

func TestPolarity(t *testing.T) {
	p := NewPolarity([]string{"Stalled"})
	for _, c := range []struct {
		typ    string
		status metav1.ConditionStatus
		want   string
	}{
		{"Ready", metav1.ConditionTrue, corev1.EventTypeNormal},
		{"Ready", metav1.ConditionFalse, corev1.EventTypeWarning},
		{"Ready", metav1.ConditionUnknown, corev1.EventTypeWarning},
		{"Stalled", metav1.ConditionTrue, corev1.EventTypeWarning},
		{"Stalled", metav1.ConditionFalse, corev1.EventTypeNormal},
		{"Stalled", metav1.ConditionUnknown, corev1.EventTypeWarning},
	} {
		if got := p.EventType(metav1.Condition{Type: c.typ, Status: c.status}); got != c.want {
			t.Errorf("%s=%s: %s, want %s", c.typ, c.status, got, c.want)
		}
	}
	if !p.AbnormalTrue("Stalled") || p.AbnormalTrue("Ready") {
		t.Error("AbnormalTrue")
	}
}

func TestTransition(t *testing.T) {
	c := func(s metav1.ConditionStatus, r string) []metav1.Condition {
		return []metav1.Condition{{Type: "Ready", Status: s, Reason: r}}
	}
	if tr := TransitionOf(nil, c(metav1.ConditionTrue, "A"), "Ready"); !tr.Changed() || !tr.Became(metav1.ConditionTrue) || tr.Was(metav1.ConditionTrue) {
		t.Errorf("appeared: %+v", tr)
	}
	if tr := TransitionOf(c(metav1.ConditionTrue, "A"), c(metav1.ConditionTrue, "B"), "Ready"); !tr.Changed() || tr.Became(metav1.ConditionTrue) {
		t.Errorf("new reason: %+v", tr)
	}
	if tr := TransitionOf(c(metav1.ConditionTrue, "A"), c(metav1.ConditionTrue, "A"), "Ready"); tr.Changed() {
		t.Errorf("unchanged: %+v", tr)
	}
	if tr := TransitionOf(c(metav1.ConditionTrue, "A"), nil, "Ready"); tr.Changed() || !tr.Was(metav1.ConditionTrue) {
		t.Errorf("removed: %+v", tr)
	}
}

func TestNowAndOrDefault(t *testing.T) {
	at := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	if got := Now(clocktesting.NewFakePassiveClock(at)); !got.Equal(at) {
		t.Errorf("Now(fake) = %v", got)
	}
	if got := Now(nil); time.Since(got) > time.Hour || got.After(time.Now()) {
		t.Errorf("Now(nil) = %v, want the real clock", got)
	}
	if OrDefault(0*time.Second, time.Minute) != time.Minute || OrDefault(-time.Second, time.Minute) != time.Minute ||
		OrDefault(time.Second, time.Minute) != time.Second || OrDefault(int32(0), 80) != 80 || OrDefault(int32(8080), 80) != 8080 {
		t.Error("OrDefault")
	}
	if (&Problem{"R", "m"}).Error() != "R: m" || *Problemf("R", "%d", 1) != (Problem{"R", "1"}) {
		t.Error("Problem")
	}
}
