package autoscaling

import (
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The per-pod target, one case per rule of resolveTarget's order, with the message status.autoscaling shows.
func TestResolveTarget(t *testing.T) {
	at := metav1.NewTime(time.Date(2026, 11, 27, 20, 1, 2, 0, time.UTC))
	capacity := func(rps int64, current bool) *v1alpha1.CapacityStatus {
		return &v1alpha1.CapacityStatus{Current: current, CapacityMeasurement: v1alpha1.CapacityMeasurement{
			RPSPerPod: rps, Source: v1alpha1.CapacitySourceServerCPU, MeasuredAt: at,
			MeasuredAgainst: v1alpha1.TemplateIdentity{ID: "1a2b3c4d"}}}
	}
	util := func(u int32) *int32 { return ptr.To(u) }
	perPod := func(n int64) *int64 { return ptr.To(n) }
	cases := []struct {
		name     string
		spec     v1alpha1.AutoscalingSpec
		cpu      string
		capacity *v1alpha1.CapacityStatus
		want     perPodTarget
	}{
		// Without targetUtilization: exactly the targets before capacity existed, whatever status.capacity says.
		{"per pod", v1alpha1.AutoscalingSpec{TargetRPSPerPod: perPod(5000)}, "2", nil,
			perPodTarget{5000, v1alpha1.TargetFromTargetRPSPerPod, "targetRPSPerPod 5000"}},
		{"per CPU × whole CPUs", v1alpha1.AutoscalingSpec{TargetRPSPerCPU: perPod(20000)}, "2", nil,
			perPodTarget{40000, v1alpha1.TargetFromTargetRPSPerCPU, "targetRPSPerCPU 20000 × cpu 2"}},
		{"per CPU × fraction", v1alpha1.AutoscalingSpec{TargetRPSPerCPU: perPod(20000)}, "250m", nil,
			perPodTarget{5000, v1alpha1.TargetFromTargetRPSPerCPU, "targetRPSPerCPU 20000 × cpu 250m"}},
		{"per CPU, fractional product kept", v1alpha1.AutoscalingSpec{TargetRPSPerCPU: perPod(3)}, "1500m", nil,
			perPodTarget{4.5, v1alpha1.TargetFromTargetRPSPerCPU, "targetRPSPerCPU 3 × cpu 1500m"}},
		{"per pod ignores a current capacity without targetUtilization", v1alpha1.AutoscalingSpec{TargetRPSPerPod: perPod(100)},
			"1", capacity(2000, true), perPodTarget{100, v1alpha1.TargetFromTargetRPSPerPod, "targetRPSPerPod 100"}},

		// targetUtilization with a current capacity: floor(rpsPerPod × util / 100), whatever else is set.
		{"utilization of a current capacity", v1alpha1.AutoscalingSpec{TargetUtilization: util(70)}, "1", capacity(2143, true),
			perPodTarget{1500, v1alpha1.TargetFromCapacity,
				"70% of 2143 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"}},
		{"capacity wins over targetRPSPerPod", v1alpha1.AutoscalingSpec{TargetUtilization: util(75), TargetRPSPerPod: perPod(100)},
			"1", capacity(2000, true), perPodTarget{1500, v1alpha1.TargetFromCapacity,
				"75% of 2000 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"}},
		{"rounded down", v1alpha1.AutoscalingSpec{TargetUtilization: util(99)}, "1", capacity(199, true),
			perPodTarget{197, v1alpha1.TargetFromCapacity,
				"99% of 199 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"}},
		{"at least 1", v1alpha1.AutoscalingSpec{TargetUtilization: util(1)}, "1", capacity(50, true),
			perPodTarget{1, v1alpha1.TargetFromCapacity,
				"1% of 50 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"}},
		{"100% of the largest figure does not overflow", v1alpha1.AutoscalingSpec{TargetUtilization: util(100)}, "1",
			capacity(1<<62, true), perPodTarget{1 << 62, v1alpha1.TargetFromCapacity,
				"100% of 4611686018427387904 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"}},

		// targetUtilization without a usable capacity: the explicit target, else the default, saying why.
		{"no capacity: default × cpu", v1alpha1.AutoscalingSpec{TargetUtilization: util(70)}, "250m", nil,
			perPodTarget{1250, v1alpha1.TargetFromDefault,
				"targetUtilization 70% not used: no capacity measured yet; default 5000 req/s per CPU × cpu 250m"}},
		{"not current: default", v1alpha1.AutoscalingSpec{TargetUtilization: util(70)}, "1", capacity(2000, false),
			perPodTarget{5000, v1alpha1.TargetFromDefault, "targetUtilization 70% not used: the capacity of 2000 req/s per pod" +
				" was measured for template 1a2b3c4d, not the one serving (not current); default 5000 req/s per CPU × cpu 1"}},
		{"current but 0 req/s: default", v1alpha1.AutoscalingSpec{TargetUtilization: util(70)}, "1", capacity(0, true),
			perPodTarget{5000, v1alpha1.TargetFromDefault,
				"targetUtilization 70% not used: the measured capacity is 0 req/s per pod; default 5000 req/s per CPU × cpu 1"}},
		{"no capacity: targetRPSPerPod", v1alpha1.AutoscalingSpec{TargetUtilization: util(70), TargetRPSPerPod: perPod(800)}, "1", nil,
			perPodTarget{800, v1alpha1.TargetFromTargetRPSPerPod, "targetUtilization 70% not used: no capacity measured yet; targetRPSPerPod 800"}},
		{"not current: targetRPSPerCPU", v1alpha1.AutoscalingSpec{TargetUtilization: util(70), TargetRPSPerCPU: perPod(4000)}, "500m",
			capacity(2000, false), perPodTarget{2000, v1alpha1.TargetFromTargetRPSPerCPU, "targetUtilization 70% not used:" +
				" the capacity of 2000 req/s per pod was measured for template 1a2b3c4d, not the one serving (not current);" +
				" targetRPSPerCPU 4000 × cpu 500m"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := resolveTarget(&tc.spec, resource.MustParse(tc.cpu), tc.capacity)
			if err != nil || got != tc.want {
				t.Fatalf("got %+v, %v\nwant %+v", got, err, tc.want)
			}
		})
	}
}

// A spec that bypassed the CRD's validation gives an error naming what is wrong, never a target.
func TestResolveTargetRejectsWhatValidationWould(t *testing.T) {
	cases := []struct {
		name string
		spec v1alpha1.AutoscalingSpec
		cpu  string
		want string
	}{
		{"no target", v1alpha1.AutoscalingSpec{}, "1", "spec.autoscaling needs a target"},
		{"both RPS targets", v1alpha1.AutoscalingSpec{TargetRPSPerPod: ptr.To[int64](1), TargetRPSPerCPU: ptr.To[int64](1)}, "1",
			"at most one of spec.autoscaling.targetRPSPerPod and spec.autoscaling.targetRPSPerCPU"},
		{"utilization 0", v1alpha1.AutoscalingSpec{TargetUtilization: ptr.To[int32](0)}, "1",
			"spec.autoscaling.targetUtilization must be between 1 and 100"},
		{"utilization over 100", v1alpha1.AutoscalingSpec{TargetUtilization: ptr.To[int32](101)}, "1",
			"spec.autoscaling.targetUtilization must be between 1 and 100"},
		{"per pod 0", v1alpha1.AutoscalingSpec{TargetRPSPerPod: ptr.To[int64](0)}, "1", "must be positive"},
		{"cpu 0", v1alpha1.AutoscalingSpec{TargetUtilization: ptr.To[int32](50)}, "0", "must be positive"},
	}
	for _, tc := range cases {
		got, err := resolveTarget(&tc.spec, resource.MustParse(tc.cpu), nil)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %+v, %v; want an error mentioning %q", tc.name, got, err, tc.want)
		}
	}
}

// A TargetChanged event for a change of value or source, none for the first target or an unchanged one.
func TestTargetChangeMessage(t *testing.T) {
	next := v1alpha1.AutoscalingStatus{TargetRPSPerPod: 1500, TargetSource: v1alpha1.TargetFromCapacity,
		TargetMessage: "75% of 2000 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"}
	cases := []struct {
		name string
		prev *announcedTarget
		next v1alpha1.AutoscalingStatus
		want string
	}{
		{"first target", nil, next, ""},
		{"unchanged", &announcedTarget{1500, v1alpha1.TargetFromCapacity}, next, ""},
		{"value and source", &announcedTarget{5000, v1alpha1.TargetFromDefault}, next,
			"target 1500 req/s per pod (Capacity) was 5000 (Default): 75% of 2000 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"},
		{"source only", &announcedTarget{1500, v1alpha1.TargetFromTargetRPSPerPod}, next,
			"target 1500 req/s per pod (Capacity) was 1500 (TargetRPSPerPod): 75% of 2000 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"},
		{"value only", &announcedTarget{1400, v1alpha1.TargetFromCapacity}, next,
			"target 1500 req/s per pod (Capacity) was 1400 (Capacity): 75% of 2000 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"},
		{"status of an operator without targetSource, same value", &announcedTarget{1500, ""}, next, ""},
		{"status of an operator without targetSource, new value", &announcedTarget{100, ""}, next,
			"target 1500 req/s per pod (Capacity) was 100: 75% of 2000 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"},
		{"no target resolved (invalid spec)", &announcedTarget{1500, v1alpha1.TargetFromCapacity}, v1alpha1.AutoscalingStatus{}, ""},
	}
	for _, tc := range cases {
		if got := targetChangeMessage(tc.prev, tc.next); got != tc.want {
			t.Errorf("%s: %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
