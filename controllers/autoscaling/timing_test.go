package autoscaling

import (
	"slices"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The whole life of a load step, pass by pass, at the production scrape interval (5 s) and rate window (15 s).
// Every instant below follows from the algorithm (package hpa, rps.Window, the per-pod windows of measure) and
// the fake kubelet, which brings the pods to spec.replicas at the next step: the test asserts them exactly.
func TestScalesUpOnLoadAndDownAfterStabilization(t *testing.T) {
	const downWindow = 30 * time.Second
	ns := newNamespace(t, "autoscale-updown")
	s := newStepper(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{
		MinReplicas:     ptr.To[int32](1),
		MaxReplicas:     6,
		TargetRPSPerPod: ptr.To[int64](100),
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To(int32(downWindow / time.Second))}},
	}))
	web := siteKey(ns, "web")
	iv := s.interval

	// 0 s: one sample is no rate yet. The pass reports the scale it read and decides nothing.
	s.load.setRPS(web, 50)
	if res := s.pass(); res.RequeueAfter != iv {
		t.Fatalf("first pass asked for %+v, want RequeueAfter %v", res, iv)
	}
	site := s.site()
	wantStatus(t, site, v1alpha1.AutoscalingStatus{CurrentReplicas: 1, DesiredReplicas: 1, TargetRPSPerPod: 100, TargetSource: perPod100.source, TargetMessage: perPod100.message})
	for _, c := range []string{v1alpha1.ConditionAbleToScale, v1alpha1.ConditionScalingActive} {
		if meta.FindStatusCondition(site.Status.Conditions, c) != nil {
			t.Fatalf("%s set before any rate was known: %+v", c, site.Status.Conditions)
		}
	}

	// 5 s: 50 req/s on one pod, ratio 0.5, ceil(0.5 × 1) = 1: a valid metric, nothing to change.
	s.step()
	site = s.site()
	wantStatus(t, site, v1alpha1.AutoscalingStatus{CurrentRPS: 50, CurrentAverageRPS: 50, TargetRPSPerPod: 100, TargetSource: perPod100.source, TargetMessage: perPod100.message,
		MeasuredPods: 1, CurrentReplicas: 1, DesiredReplicas: 1})
	assertCondition(t, site, v1alpha1.ConditionScalingActive, metav1.ConditionTrue, v1alpha1.ReasonValidMetricFound)
	assertCondition(t, site, v1alpha1.ConditionAbleToScale, metav1.ConditionTrue, v1alpha1.ReasonReadyForNewScale)

	// The load steps to 350 req/s.
	//   +5 s  the 15 s window holds 5 s at 50 and 5 s at 350: 200 req/s, ceil(2.0) = 2          → 1 → 2
	//   +10 s pod 1 took all 350 req/s since the rescale (pod 2 turned Ready just now); pod 2 has no rate yet
	//         and counts at 0: 350 / 2 pods, ratio 1.75, ceil(3.5) = 4 (policy: max(1+4, 2×1) = 5)  → 2 → 4
	//   +15 s 175 each on pods 1-2 since the rescale; pods 3-4 just turned Ready and count at 0: 350 / 4
	//         = 87.5, ratio 0.875, which reverses the direction of the scale-up: hold
	//   +20 s every pod has two samples since the 4 became Ready: 87.5 each over that span, ratio 0.875,
	//         ceil(3.5) = 4: holds — no overshoot
	stepAt := s.now()
	s.load.setRPS(web, 350)
	highest := int32(1)
	s.stepUntil(stepAt+6*iv, func() { highest = max(highest, replicasOf(s.site())) })
	if want := []rescale{{stepAt + iv, 1, 2}, {stepAt + 2*iv, 2, 4}}; !slices.Equal(s.rescales, want) {
		t.Fatalf("rescales after the load step %v, want %v", s.rescales, want)
	}
	if highest != 4 {
		t.Fatalf("replicas reached %d, want at most 4 (no overshoot)", highest)
	}
	wantEvents(t, s.eventsSince(stepAt),
		"Normal Rescaled Rescaled 1 → 2: requests per second per pod above target; 200 req/s per pod over 1 measured pods (total 200 req/s), target 100",
		"Normal Rescaled Rescaled 2 → 4: requests per second per pod above target; 350 req/s per pod over 1 measured pods (total 350 req/s), target 100")
	t.Logf("load step at %v (fake): first scale write %v later, 4 replicas %v later", stepAt,
		s.rescales[0].at-stepAt, s.rescales[1].at-stepAt)
	site = s.site()
	wantStatus(t, site, v1alpha1.AutoscalingStatus{CurrentRPS: 350, CurrentAverageRPS: 88, TargetRPSPerPod: 100, TargetSource: perPod100.source, TargetMessage: perPod100.message,
		MeasuredPods: 4, CurrentReplicas: 4, DesiredReplicas: 4, LastScaleTime: fakeTime(stepAt + 2*iv)})
	assertCondition(t, site, v1alpha1.ConditionScalingActive, metav1.ConditionTrue, v1alpha1.ReasonValidMetricFound)
	assertCondition(t, site, v1alpha1.ConditionAbleToScale, metav1.ConditionTrue, v1alpha1.ReasonReadyForNewScale)

	// The pass that just ran recommended 4, the last high recommendation: the load drops to 50 req/s now. The
	// recommendations fall as the window slides past the drop (+5 s: 62.5 req/s → 3, +10 s: 37.5 → 2, from +15 s:
	// 12.5 → 1), but the highest one within the 30 s scale-down window is the 4 until exactly +30 s, where it
	// leaves (the window is open at its old end) and the highest left is the 3 of +5 s:
	//   +30 s                                                                                     → 4 → 3
	//   +35 s pod 4 is gone (just now: the 3 left shared the load with it since the rescale, 12.5 each), → 1;
	//         the highest in the window is now the 2 of +10 s (the 3 of +5 s is exactly 30 s old)   → 3 → 2
	//   +40 s 16.7 each on pods 1-2 since that rescale → 1; the 2 of +10 s has left the window too  → 2 → 1
	// For one pass, the pods left after a scale-down measure the share they had before the others went: an
	// underestimate in the direction the stabilization window already holds back.
	dropAt := s.now()
	s.load.setRPS(web, 50)
	firstDownAt := dropAt + downWindow
	s.stepUntil(firstDownAt-iv, func() {
		site := s.site()
		if r := replicasOf(site); r != 4 {
			t.Fatalf("at %v, %v after the drop: replicas %d inside the %v scale-down window", s.now(), s.now()-dropAt, r, downWindow)
		}
		assertCondition(t, site, v1alpha1.ConditionAbleToScale, metav1.ConditionTrue, v1alpha1.ReasonScaleDownStabilized)
		if a := site.Status.Autoscaling; a.DesiredReplicas != 4 {
			t.Fatalf("at %v: desiredReplicas %d while stabilized at 4", s.now(), a.DesiredReplicas)
		}
	})
	s.stepUntil(dropAt+12*iv, nil)
	if want := []rescale{{firstDownAt, 4, 3}, {firstDownAt + iv, 3, 2}, {firstDownAt + 2*iv, 2, 1}}; !slices.Equal(s.rescalesSince(dropAt), want) {
		t.Fatalf("rescales after the load drop at %v: %v, want %v", dropAt, s.rescalesSince(dropAt), want)
	}
	wantEvents(t, s.eventsSince(dropAt),
		"Normal Rescaled Rescaled 4 → 3: all metrics below target; 13 req/s per pod over 4 measured pods (total 50 req/s), target 100",
		"Normal Rescaled Rescaled 3 → 2: all metrics below target; 13 req/s per pod over 3 measured pods (total 38 req/s), target 100",
		"Normal Rescaled Rescaled 2 → 1: all metrics below target; 17 req/s per pod over 2 measured pods (total 33 req/s), target 100")
	t.Logf("load drop at %v (fake): first scale-down %v later, down to 1 %v later", dropAt,
		firstDownAt-dropAt, firstDownAt+2*iv-dropAt)
	site = s.site()
	wantStatus(t, site, v1alpha1.AutoscalingStatus{CurrentRPS: 50, CurrentAverageRPS: 50, TargetRPSPerPod: 100, TargetSource: perPod100.source, TargetMessage: perPod100.message,
		MeasuredPods: 1, CurrentReplicas: 1, DesiredReplicas: 1, LastScaleTime: fakeTime(firstDownAt + 2*iv)})
	assertCondition(t, site, v1alpha1.ConditionAbleToScale, metav1.ConditionTrue, v1alpha1.ReasonReadyForNewScale)
}

// fakeTime is the API's lastScaleTime for fake time at since the stepper started.
func fakeTime(at time.Duration) *metav1.Time { return &metav1.Time{Time: fakeStart.Add(at)} }

func wantStatus(t *testing.T, site *v1alpha1.StaticSite, want v1alpha1.AutoscalingStatus) {
	t.Helper()
	got := site.Status.Autoscaling
	if got == nil {
		t.Fatalf("status.autoscaling missing, want %s", statusString(&want))
	}
	sameTime := (got.LastScaleTime == nil) == (want.LastScaleTime == nil) &&
		(got.LastScaleTime == nil || got.LastScaleTime.Equal(want.LastScaleTime))
	g, w := *got, want
	g.LastScaleTime, w.LastScaleTime = nil, nil
	if g != w || !sameTime {
		t.Fatalf("status.autoscaling %s (last scale %v), want %s (last scale %v)",
			statusString(got), got.LastScaleTime, statusString(&want), want.LastScaleTime)
	}
}

func wantEvents(t *testing.T, got []event, want ...string) {
	t.Helper()
	var texts []string
	for _, e := range got {
		texts = append(texts, e.text)
	}
	if !slices.Equal(texts, want) {
		t.Fatalf("events %q, want %q", texts, want)
	}
}
