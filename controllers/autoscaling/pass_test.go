package autoscaling

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
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

func TestTargetPerPod(t *testing.T) {
	defaultCPU := resource.MustParse(v1alpha1.DefaultCPU)
	site := func(cpu string, a v1alpha1.AutoscalingSpec) *v1alpha1.StaticSite {
		s := &v1alpha1.StaticSite{Spec: v1alpha1.StaticSiteSpec{Autoscaling: &a}}
		if cpu != "" {
			s.Spec.CPU = ptr.To(resource.MustParse(cpu))
		}
		return s
	}
	cases := []struct {
		name string
		site *v1alpha1.StaticSite
		want float64
	}{
		{"per pod", site("2", v1alpha1.AutoscalingSpec{TargetRPSPerPod: ptr.To[int64](5000)}), 5000},
		{"per CPU × whole CPUs", site("2", v1alpha1.AutoscalingSpec{TargetRPSPerCPU: ptr.To[int64](20000)}), 40000},
		{"per CPU × fraction", site("250m", v1alpha1.AutoscalingSpec{TargetRPSPerCPU: ptr.To[int64](20000)}), 5000},
		{"per CPU, cpu unset means DefaultCPU", site("", v1alpha1.AutoscalingSpec{TargetRPSPerCPU: ptr.To[int64](20000)}),
			20000 * defaultCPU.AsApproximateFloat64()},
	}
	for _, tc := range cases {
		got, err := targetPerPod(tc.site)
		if err != nil || got != tc.want {
			t.Errorf("%s: %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
	if _, err := targetPerPod(site("1", v1alpha1.AutoscalingSpec{})); err == nil {
		t.Error("no target: want an error")
	}
}
