package hpa

import (
	"errors"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }

// step is one pass: at second `at`, with the target at `current` replicas, the metric recommends `metric`.
// want is the decided count; when the decision rescales, the step records the scale (as the controller does
// after a successful update).
type step struct {
	at      int
	current int32
	metric  int32
	want    int32
	reason  Reason // expected AbleToScale reason or LimitReason when non-empty
}

func run(t *testing.T, b *autoscalingv2.HorizontalPodAutoscalerBehavior, minR, maxR int32, steps []step) {
	t.Helper()
	behavior := WithDefaults(b)
	var s State
	for i, st := range steps {
		d := s.Decide(Input{Now: at(st.at), CurrentReplicas: st.current, MinReplicas: minR, MaxReplicas: maxR,
			Behavior: behavior, MetricReplicas: st.metric, MetricDescription: "rps"})
		if d.DesiredReplicas != st.want {
			t.Fatalf("step %d (t=%ds, current %d, metric %d): desired = %d, want %d (able %+v, limit %s)",
				i, st.at, st.current, st.metric, d.DesiredReplicas, st.want, d.AbleToScale, d.LimitReason)
		}
		if st.reason != "" && st.reason != d.AbleToScale.Reason && st.reason != d.LimitReason {
			t.Fatalf("step %d: reasons able=%s limit=%s, want %s", i, d.AbleToScale.Reason, d.LimitReason, st.reason)
		}
		if d.Rescale {
			s.RecordScale(at(st.at), behavior, st.current, d.DesiredReplicas)
		}
	}
}

func noDownWindow() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)}}
}

func TestDecideClamps(t *testing.T) {
	t.Run("desired above maxReplicas is clamped to max (TooManyReplicas)", func(t *testing.T) {
		run(t, nil, 1, 5, []step{{0, 4, 9, 5, "TooManyReplicas"}})
	})
	t.Run("desired below minReplicas is clamped to min (TooFewReplicas)", func(t *testing.T) {
		run(t, noDownWindow(), 2, 10, []step{{0, 4, 1, 2, "TooFewReplicas"}})
	})
	t.Run("current above maxReplicas snaps to max without rate limits", func(t *testing.T) {
		run(t, noDownWindow(), 1, 3, []step{{0, 20, 20, 3, ""}})
	})
	t.Run("current below minReplicas snaps to min without rate limits", func(t *testing.T) {
		run(t, nil, 30, 50, []step{{0, 1, 1, 30, ""}})
	})
}

func TestDecideScalingDisabledAtZeroReplicas(t *testing.T) {
	var s State
	d := s.Decide(Input{Now: t0, CurrentReplicas: 0, MinReplicas: 1, MaxReplicas: 5, Behavior: WithDefaults(nil), MetricReplicas: 3})
	if d.Rescale || d.ScalingActive.Status || d.ScalingActive.Reason != "ScalingDisabled" {
		t.Fatalf("decision = %+v, want no rescale and ScalingActive False ScalingDisabled", d)
	}
}

func TestDecideMetricErrorDoesNotScale(t *testing.T) {
	var s State
	d := s.Decide(Input{Now: t0, CurrentReplicas: 3, MinReplicas: 1, MaxReplicas: 5, Behavior: WithDefaults(nil),
		MetricReplicas: 5, MetricErr: errors.New("boom")})
	if d.Rescale || d.DesiredReplicas != 3 || d.ScalingActive.Status || d.ScalingActive.Reason != "FailedGetRPS" {
		t.Fatalf("decision = %+v, want hold at 3 with ScalingActive False FailedGetRPS", d)
	}
}

func TestDecideScaleUpPolicies(t *testing.T) {
	t.Run("default scale-up: at most max(4 pods, 100%) per 15 s, small target adds 4", func(t *testing.T) {
		run(t, nil, 1, 100, []step{{0, 2, 20, 6, "ScaleUpLimit"}})
	})
	t.Run("default scale-up: at most max(4 pods, 100%) per 15 s, large target doubles", func(t *testing.T) {
		run(t, nil, 1, 100, []step{{0, 10, 50, 20, "ScaleUpLimit"}})
	})
	t.Run("scale-up events within the period count against the limit; freed after the period", func(t *testing.T) {
		run(t, nil, 1, 100, []step{
			{0, 2, 20, 6, "ScaleUpLimit"},
			{5, 6, 20, 6, "ScaleUpLimit"}, // period start was 2: limit max(2+4, 4) = 6
			{14, 6, 20, 6, "ScaleUpLimit"},
			{15, 6, 20, 12, "ScaleUpLimit"}, // an event exactly one period old no longer counts (After(cutoff) is strict): max(6+4, 12)
		})
	})
	t.Run("selectPolicy Min picks the smallest change", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MinChangePolicySelect)}}
		run(t, b, 1, 100, []step{{0, 10, 50, 14, "ScaleUpLimit"}})
	})
	t.Run("selectPolicy Disabled never scales up", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.DisabledPolicySelect)}}
		run(t, b, 1, 100, []step{{0, 3, 9, 3, ""}, {60, 3, 9, 3, ""}})
	})
	t.Run("Percent scale-up rounds up so one pod can grow", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
			Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 10, PeriodSeconds: 60}}}}
		run(t, b, 1, 100, []step{{0, 1, 5, 2, "ScaleUpLimit"}})
	})
	t.Run("scale-up stabilization window uses the lowest recent recommendation", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}}
		run(t, b, 1, 100, []step{
			{0, 2, 2, 2, ""},
			{10, 2, 8, 2, "ScaleUpStabilized"},
			{61, 2, 8, 6, "ScaleUpLimit"}, // the 2 of t=0 left the window; 8 limited to 2+4
		})
	})
}

func TestDecideScaleDown(t *testing.T) {
	t.Run("default scale-down stabilization: highest recommendation of the last 300 s", func(t *testing.T) {
		run(t, nil, 1, 100, []step{
			{0, 10, 10, 10, ""},
			{100, 10, 6, 10, "ScaleDownStabilized"},
			{200, 10, 3, 10, "ScaleDownStabilized"},
			{299, 10, 3, 10, "ScaleDownStabilized"}, // the 10 of t=0 is still inside the window
			{300, 10, 3, 6, "ScaleDownStabilized"},  // exactly 300 s old is out (After(cutoff) is strict): 6 of t=100 is the highest
			{401, 6, 3, 3, ""},                      // only 3s left in the window
		})
	})
	t.Run("default scale-down policy allows 100% per 15 s, bounded by minReplicas", func(t *testing.T) {
		run(t, noDownWindow(), 2, 100, []step{{0, 10, 1, 2, "TooFewReplicas"}})
	})
	t.Run("Percent scale-down truncates and counts from the period start", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0),
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60}}}}
		run(t, b, 1, 100, []step{
			{0, 10, 1, 5, "ScaleDownLimit"},
			{30, 5, 1, 5, "ScaleDownLimit"}, // period start 10: limit 5 = current
			{61, 5, 1, 2, "ScaleDownLimit"}, // int(5 × 0.5) = 2
		})
	})
	t.Run("selectPolicy Max takes the policy allowing the biggest decrease", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0),
			Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60}}}}
		run(t, b, 1, 100, []step{{0, 10, 1, 5, "ScaleDownLimit"}})
	})
	t.Run("selectPolicy Min takes the policy allowing the smallest decrease", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0),
			SelectPolicy:               ptr.To(autoscalingv2.MinChangePolicySelect),
			Policies: []autoscalingv2.HPAScalingPolicy{
				{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60},
				{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60}}}}
		run(t, b, 1, 100, []step{{0, 10, 1, 9, "ScaleDownLimit"}})
	})
	t.Run("selectPolicy Disabled never scales down", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0), SelectPolicy: ptr.To(autoscalingv2.DisabledPolicySelect)}}
		run(t, b, 1, 100, []step{{0, 10, 1, 10, ""}, {600, 10, 1, 10, ""}})
	})
	t.Run("a recent scale-up raises the scale-down period start", func(t *testing.T) {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](0),
			Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}}}}
		run(t, b, 1, 100, []step{
			{0, 4, 8, 8, ""},                // up 4 → 8
			{10, 8, 1, 2, "ScaleDownLimit"}, // period start 8-4 = 4: limit 4-2 = 2
		})
	})
}

func TestDecideFirstPassSeedsStabilizationWithCurrentReplicas(t *testing.T) {
	// Deliberate difference from the HPA (documented on State.Decide): a fresh State does not scale down
	// before one scale-down window has passed.
	run(t, nil, 1, 100, []step{
		{0, 8, 2, 8, "ScaleDownStabilized"},
		{300, 8, 2, 2, ""},
	})
}

func TestWithDefaults(t *testing.T) {
	b := WithDefaults(nil)
	if *b.ScaleUp.StabilizationWindowSeconds != 0 || *b.ScaleDown.StabilizationWindowSeconds != 300 ||
		*b.ScaleUp.SelectPolicy != autoscalingv2.MaxChangePolicySelect || len(b.ScaleUp.Policies) != 2 ||
		len(b.ScaleDown.Policies) != 1 || b.ScaleDown.Policies[0].Value != 100 || b.ScaleDown.Policies[0].PeriodSeconds != 15 {
		t.Fatalf("defaults = %+v / %+v", b.ScaleUp, b.ScaleDown)
	}
	// Field by field: setting only the scale-down window keeps the default scale-down policies.
	b = WithDefaults(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](30)}})
	if *b.ScaleDown.StabilizationWindowSeconds != 30 || len(b.ScaleDown.Policies) != 1 || *b.ScaleDown.SelectPolicy != autoscalingv2.MaxChangePolicySelect {
		t.Fatalf("merged scale-down = %+v", b.ScaleDown)
	}
}

func TestTolerancesFor(t *testing.T) {
	q := resource.MustParse("50m")
	b := WithDefaults(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{Tolerance: &q}})
	got := TolerancesFor(b, 0.2)
	if got.ScaleUp != 0.05 || got.ScaleDown != 0.2 {
		t.Fatalf("tolerances = %+v, want up 0.05 (behavior) and down 0.2 (spec)", got)
	}
}
