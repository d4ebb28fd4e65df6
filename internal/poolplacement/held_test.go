package poolplacement

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// A held pod is terminating, unreleased, with an IP and not finished; it serves when it was ready at its deletion
// (its Ready still True, or turned False since the deletion was asked for), never when it was not ready then.
func TestHoldingDrainAndServingHeld(t *testing.T) {
	asked := time.Date(2026, 12, 4, 6, 0, 0, 0, time.UTC)
	pod := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", DeletionTimestamp: &metav1.Time{Time: asked.Add(320 * time.Second)},
			DeletionGracePeriodSeconds: ptr.To[int64](320)},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.0.0.1", Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: asked.Add(-time.Hour)}}}}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	readyTurned := func(status corev1.ConditionStatus, at time.Time) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions[1].Status, p.Status.Conditions[1].LastTransitionTime = status, metav1.Time{Time: at}
		}
	}
	cases := []struct {
		name             string
		pod              *corev1.Pod
		holding, serving bool
	}{
		{"ready when deleted, still ready", pod(nil), true, true},
		{"unready since its SIGTERM", pod(readyTurned(corev1.ConditionFalse, asked.Add(5*time.Second))), true, true},
		{"unready in the second of its deletion", pod(readyTurned(corev1.ConditionFalse, asked)), true, true},
		{"never ready", pod(readyTurned(corev1.ConditionFalse, asked.Add(-time.Minute))), true, false},
		{"no Ready condition", pod(func(p *corev1.Pod) { p.Status.Conditions = p.Status.Conditions[:1] }), true, false},
		{"not terminating", pod(func(p *corev1.Pod) { p.DeletionTimestamp = nil }), false, false},
		{"released", pod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{AnnotationDrainReleased: "2026-12-04T06:01:00Z"}
		}), false, false},
		{"no IP", pod(func(p *corev1.Pod) { p.Status.PodIP = "" }), false, false},
		{"succeeded", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), false, false},
		{"failed", pod(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), false, false},
	}
	for _, tc := range cases {
		if got := HoldingDrain(tc.pod); got != tc.holding {
			t.Errorf("%s: HoldingDrain = %v, want %v", tc.name, got, tc.holding)
		}
		if got := ServingHeld(tc.pod); got != tc.serving {
			t.Errorf("%s: ServingHeld = %v, want %v", tc.name, got, tc.serving)
		}
	}
	if got := DeletionRequested(pod(nil)); !got.Equal(asked) {
		t.Errorf("DeletionRequested = %s, want %s (the deletion timestamp less the grace)", got, asked)
	}
}
