package autoscaling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/controllers/autoscaling/hpa"
)

func TestClassifyGroupsPodsAsTheHPADoes(t *testing.T) {
	readyCond := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	notReady := []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	now := metav1.Now()
	cases := []struct {
		name string
		pod  corev1.Pod
		want hpa.PodState
	}{
		{"running and Ready", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: readyCond}}, hpa.PodReady},
		{"running, not Ready", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: notReady}}, hpa.PodUnready},
		{"running, no Ready condition yet", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, hpa.PodUnready},
		{"pending", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, hpa.PodUnready},
		{"failed", corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed}}, hpa.PodIgnored},
		{"being deleted", corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &now},
			Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: readyCond}}, hpa.PodIgnored},
	}
	for _, tc := range cases {
		if got := classify(&tc.pod); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
