package autoscaling

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The API server (CRD schema and CEL) rejects what the autoscaler could not act on, naming the field.
func TestInvalidAutoscalingIsRejectedNamingTheField(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "autoscale-invalid")
	cases := []struct {
		name string
		as   v1alpha1.AutoscalingSpec
		want string
	}{
		{"both RPS targets", v1alpha1.AutoscalingSpec{MaxReplicas: 3, TargetRPSPerPod: ptr.To[int64](10), TargetRPSPerCPU: ptr.To[int64](10)},
			"set at most one of spec.autoscaling.targetRPSPerPod and spec.autoscaling.targetRPSPerCPU"},
		{"both RPS targets with targetUtilization", v1alpha1.AutoscalingSpec{MaxReplicas: 3, TargetUtilization: ptr.To[int32](70),
			TargetRPSPerPod: ptr.To[int64](10), TargetRPSPerCPU: ptr.To[int64](10)},
			"set at most one of spec.autoscaling.targetRPSPerPod and spec.autoscaling.targetRPSPerCPU"},
		{"no target", v1alpha1.AutoscalingSpec{MaxReplicas: 3},
			"spec.autoscaling needs a target: targetUtilization (of the measured capacity), targetRPSPerPod or targetRPSPerCPU"},
		{"targetUtilization 0", v1alpha1.AutoscalingSpec{MaxReplicas: 3, TargetUtilization: ptr.To[int32](0)},
			"spec.autoscaling.targetUtilization in body should be greater than or equal to 1"},
		{"targetUtilization over 100", v1alpha1.AutoscalingSpec{MaxReplicas: 3, TargetUtilization: ptr.To[int32](101)},
			"spec.autoscaling.targetUtilization in body should be less than or equal to 100"},
		{"min above max", v1alpha1.AutoscalingSpec{MinReplicas: ptr.To[int32](5), MaxReplicas: 3, TargetRPSPerPod: ptr.To[int64](10)},
			"spec.autoscaling.minReplicas must be less than or equal to spec.autoscaling.maxReplicas"},
		{"tolerance of 1 or more", v1alpha1.AutoscalingSpec{MaxReplicas: 3, TargetRPSPerPod: ptr.To[int64](10), Tolerance: ptr.To(resource.MustParse("1.5"))},
			"spec.autoscaling.tolerance must be at least 0 and less than 1"},
		{"negative tolerance", v1alpha1.AutoscalingSpec{MaxReplicas: 3, TargetRPSPerPod: ptr.To[int64](10), Tolerance: ptr.To(resource.MustParse("-100m"))},
			"spec.autoscaling.tolerance must be at least 0 and less than 1"},
		{"zero target", v1alpha1.AutoscalingSpec{MaxReplicas: 3, TargetRPSPerPod: ptr.To[int64](0)},
			"spec.autoscaling.targetRPSPerPod"},
		{"maxReplicas 0", v1alpha1.AutoscalingSpec{MaxReplicas: 0, TargetRPSPerPod: ptr.To[int64](10)},
			"spec.autoscaling.maxReplicas"},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			as := tc.as
			err := env.Client.Create(ctx, newSite(ns, "bad-"+itoa(int32(i)), 1, &as))
			if err == nil {
				t.Fatalf("created; want rejection mentioning %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q does not mention %q", err.Error(), tc.want)
			}
		})
	}
	// A valid one with a quantity tolerance and targetRPSPerCPU is accepted.
	ok := v1alpha1.AutoscalingSpec{MaxReplicas: 3, TargetRPSPerCPU: ptr.To[int64](20000), Tolerance: ptr.To(resource.MustParse("50m"))}
	if err := env.Client.Create(ctx, newSite(ns, "good", 1, &ok)); err != nil {
		t.Fatalf("valid autoscaling rejected: %v", err)
	}
	if got := getSite(t, ns, "good").Spec.Autoscaling.MinReplicas; got == nil || *got != 1 {
		t.Fatalf("minReplicas default = %v, want 1", got)
	}
	// targetUtilization alone, or with one RPS target as its fallback, is accepted (and deleted when the test
	// ends, before a later test's manager could find it).
	for name, as := range map[string]v1alpha1.AutoscalingSpec{
		"utilization":         {MaxReplicas: 3, TargetUtilization: ptr.To[int32](100)},
		"utilization-per-pod": {MaxReplicas: 3, TargetUtilization: ptr.To[int32](1), TargetRPSPerPod: ptr.To[int64](10)},
		"utilization-per-cpu": {MaxReplicas: 3, TargetUtilization: ptr.To[int32](70), TargetRPSPerCPU: ptr.To[int64](10)},
	} {
		createSite(t, newSite(ns, name, 1, &as))
	}
}

// spec.autoscaling.behavior is validated as strictly as an HPA's (kube-apiserver's validateScalingRules and
// validateScalingPolicy): what an HPA would refuse is refused here too, naming the field, instead of being
// accepted and silently meaning something else (an empty policy list, or one of unknown types, allows no
// scale-up at all). The objects are unstructured, as kubectl sends them: a Go client's omitempty would drop the
// empty list before it reached the API server.
func TestInvalidBehaviorIsRejectedAsTheHPAWould(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "autoscale-behavior")
	policy := func(typ string, value, period int64) map[string]any {
		return map[string]any{"type": typ, "value": value, "periodSeconds": period}
	}
	cases := []struct {
		name  string
		rules map[string]any // one direction's rules
		want  string         // with <dir> for scaleUp / scaleDown
	}{
		{"empty policies", map[string]any{"policies": []any{}},
			"spec.autoscaling.behavior.<dir>.policies must list at least one policy"},
		{"unknown policy type", map[string]any{"policies": []any{policy("Replicas", 4, 15)}},
			"spec.autoscaling.behavior.<dir>.policies[*].type must be Pods or Percent"},
		{"policy value 0", map[string]any{"policies": []any{policy("Pods", 0, 15)}},
			"spec.autoscaling.behavior.<dir>.policies[*].value must be greater than zero"},
		{"policy period 0", map[string]any{"policies": []any{policy("Percent", 100, 0)}},
			"spec.autoscaling.behavior.<dir>.policies[*].periodSeconds must be greater than zero and at most 1800"},
		{"policy period over 30 min", map[string]any{"policies": []any{policy("Percent", 100, 1801)}},
			"spec.autoscaling.behavior.<dir>.policies[*].periodSeconds must be greater than zero and at most 1800"},
		{"unknown selectPolicy", map[string]any{"selectPolicy": "Average"},
			"spec.autoscaling.behavior.<dir>.selectPolicy must be Max, Min or Disabled"},
		{"negative stabilization window", map[string]any{"stabilizationWindowSeconds": int64(-1)},
			"spec.autoscaling.behavior.<dir>.stabilizationWindowSeconds must be between 0 and 3600"},
		{"stabilization window over an hour", map[string]any{"stabilizationWindowSeconds": int64(3601)},
			"spec.autoscaling.behavior.<dir>.stabilizationWindowSeconds must be between 0 and 3600"},
		{"negative tolerance", map[string]any{"tolerance": "-50m"},
			"spec.autoscaling.behavior.<dir>.tolerance must be at least 0"},
	}
	n := 0
	for _, dir := range []string{"scaleUp", "scaleDown"} {
		for _, tc := range cases {
			t.Run(dir+"/"+tc.name, func(t *testing.T) {
				n++
				err := env.Client.Create(ctx, behaviorSite(ns, fmt.Sprintf("bad-behavior-%d", n), map[string]any{dir: tc.rules}))
				want := strings.ReplaceAll(tc.want, "<dir>", dir)
				if err == nil {
					t.Fatalf("created; want rejection mentioning %q", want)
				}
				if !strings.Contains(err.Error(), want) {
					t.Fatalf("error %q does not mention %q", err.Error(), want)
				}
			})
		}
	}

	// What an HPA accepts is accepted: no policies field (the defaults), every policy type, the bounds themselves,
	// scale-up turned off the HPA's way (selectPolicy: Disabled).
	ok := map[string]any{
		"scaleUp": map[string]any{"selectPolicy": "Disabled", "stabilizationWindowSeconds": int64(3600),
			"tolerance": "0"},
		"scaleDown": map[string]any{"selectPolicy": "Min", "stabilizationWindowSeconds": int64(0),
			"policies": []any{policy("Pods", 1, 1), policy("Percent", 10, 1800)}},
	}
	good := behaviorSite(ns, "good-behavior", ok)
	if err := env.Client.Create(ctx, good); err != nil {
		t.Fatalf("valid behavior rejected: %v", err)
	}
	// Gone before a later test's manager (which watches every namespace) could find it.
	if err := env.Client.Delete(ctx, good); err != nil {
		t.Fatalf("delete: %v", err)
	}
}

// behaviorSite is an autoscaled site with the given spec.autoscaling.behavior, as unstructured JSON.
func behaviorSite(ns, name string, behavior map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(),
		"kind":       "StaticSite",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec": map[string]any{
			"content":  map[string]any{"image": "example.test/site:1"},
			"replicas": int64(1),
			"autoscaling": map[string]any{"maxReplicas": int64(3), "targetRPSPerPod": int64(100),
				"behavior": behavior},
		},
	}}
	return u
}
