package podstate

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestReadyAndServing(t *testing.T) {
	now := metav1.Now()
	ready := []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	cases := []struct {
		name           string
		pod            corev1.Pod
		ready, serving bool
	}{
		{"running and ready", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready}}, true, true},
		{"ready condition false", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady}}, false, false},
		{"no conditions", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, false, false},
		{"pending but ready (stale)", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: ready}}, true, false},
		{"being deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: ready}}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Ready(&tc.pod); got != tc.ready {
				t.Errorf("Ready = %v, want %v", got, tc.ready)
			}
			if got := Serving(&tc.pod); got != tc.serving {
				t.Errorf("Serving = %v, want %v", got, tc.serving)
			}
		})
	}
}
