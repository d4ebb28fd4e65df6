package autoscaling

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

func newNamespace(t *testing.T, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := env.Client.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func newSite(ns, name string, replicas int32, as *v1alpha1.AutoscalingSpec) *v1alpha1.StaticSite {
	return &v1alpha1.StaticSite{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.StaticSiteSpec{
			Content:     v1alpha1.ContentSource{Image: "example.test/site:1"},
			Replicas:    ptr.To(replicas),
			CPU:         ptr.To(resource.MustParse("250m")),
			Autoscaling: as,
		},
	}
}

func getSite(t *testing.T, ns, name string) *v1alpha1.StaticSite {
	t.Helper()
	s := &v1alpha1.StaticSite{}
	if err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, s); err != nil {
		t.Fatalf("get site: %v", err)
	}
	return s
}

// eventually polls cond every 50 ms (wall clock) until it holds or timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s (last: %s)", what, last)
}

func replicasOf(s *v1alpha1.StaticSite) int32 {
	if s.Spec.Replicas == nil {
		return -1
	}
	return *s.Spec.Replicas
}

func rescaleEvents(t *testing.T, ns, name string) []string {
	t.Helper()
	list := &corev1.EventList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		t.Fatalf("list events: %v", err)
	}
	var msgs []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.Reason == "Rescaled" {
			msgs = append(msgs, e.Message)
		}
	}
	return msgs
}

func TestScalesUpOnLoadAndDownAfterStabilization(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t, "autoscale-updown")
	site := newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{
		MinReplicas:     ptr.To[int32](1),
		MaxReplicas:     6,
		TargetRPSPerPod: ptr.To[int64](100),
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{
			StabilizationWindowSeconds: ptr.To[int32](30)}},
	})
	if err := env.Client.Create(ctx, site); err != nil {
		t.Fatalf("create site: %v", err)
	}
	go kubelet(ctx, t, ns, "web")

	// 350 req/s against a target of 100 per pod: ceil(1 × 3.5) = 4 (the default policy allows up to 5 from 1).
	stepAt := clk.Now()
	load.set(ns+"/web", 350)
	eventually(t, 30*time.Second, "spec.replicas to rise to 4 through /scale", func() (bool, string) {
		s := getSite(t, ns, "web")
		return replicasOf(s) == 4, "replicas " + itoa(replicasOf(s))
	})
	t.Logf("load step to scale write: at most %v (fake time, passes every fake second)", clk.Now().Sub(stepAt))
	// Once the load spreads over 4 pods (87.5 each, ratio 0.875 → ceil(3.5) = 4) the count holds, and the
	// status tells the story.
	eventually(t, 30*time.Second, "status.autoscaling to report ~350 req/s over 4 pods", func() (bool, string) {
		s := getSite(t, ns, "web")
		a := s.Status.Autoscaling
		if a == nil {
			return false, "no status.autoscaling"
		}
		ok := a.MeasuredPods == 4 && a.CurrentRPS >= 340 && a.CurrentRPS <= 360 && a.CurrentAverageRPS >= 85 &&
			a.CurrentAverageRPS <= 90 && a.DesiredReplicas == 4 && a.CurrentReplicas == 4 && a.TargetRPSPerPod == 100 &&
			a.LastScaleTime != nil
		return ok, statusString(a)
	})
	s := getSite(t, ns, "web")
	if replicasOf(s) != 4 {
		t.Fatalf("replicas moved to %d under steady load", replicasOf(s))
	}
	assertCondition(t, s, v1alpha1.ConditionScalingActive, metav1.ConditionTrue, "ValidMetricFound")
	assertCondition(t, s, v1alpha1.ConditionAbleToScale, metav1.ConditionTrue, "")
	eventually(t, 10*time.Second, "a Rescaled event 1 → 4", func() (bool, string) {
		msgs := rescaleEvents(t, ns, "web")
		for _, m := range msgs {
			if strings.Contains(m, "Rescaled 1 → 4") && strings.Contains(m, "above target") {
				return true, ""
			}
		}
		return false, strings.Join(msgs, " | ")
	})

	// Load drops to 50 req/s: the recommendation falls to 1, but nothing scales down before the 30 s
	// scale-down window has passed since the drop (it may step down as the rates fall through the window).
	dropped := clk.Now() // read before the drop: the clock may step in between
	load.set(ns+"/web", 50)
	var firstDown time.Time
	eventually(t, 60*time.Second, "spec.replicas to fall to 1", func() (bool, string) {
		r := replicasOf(getSite(t, ns, "web"))
		if r < 4 && firstDown.IsZero() {
			firstDown = clk.Now()
		}
		return r == 1, "replicas " + itoa(r)
	})
	if elapsed := firstDown.Sub(dropped); elapsed < 30*time.Second {
		t.Fatalf("first scale-down %v (fake time) after the load dropped, inside the 30 s stabilization window", elapsed)
	}
	if up := countContaining(rescaleEvents(t, ns, "web"), "above target"); up != 1 {
		t.Fatalf("%d scale-ups, want exactly the one 1 → 4 (no overshoot): %v", up, rescaleEvents(t, ns, "web"))
	}
	eventually(t, 10*time.Second, "lastScaleTime of the scale-down", func() (bool, string) {
		a := getSite(t, ns, "web").Status.Autoscaling
		return a != nil && a.LastScaleTime != nil && !a.LastScaleTime.Time.Before(dropped.Add(30*time.Second)), statusString(a)
	})
	eventually(t, 10*time.Second, "a Rescaled event down to 1", func() (bool, string) {
		msgs := rescaleEvents(t, ns, "web")
		for _, m := range msgs {
			if strings.Contains(m, " → 1: all metrics below target") {
				return true, ""
			}
		}
		return false, strings.Join(msgs, " | ")
	})
	for _, m := range rescaleEvents(t, ns, "web") {
		t.Logf("event: %s", m)
	}
	t.Logf("first scale-down %v (fake) after the load dropped", firstDown.Sub(dropped))
	// The StaticSite controller's conditions survive the autoscaler's status writes (it only sets its own).
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		s := getSite(t, ns, "web")
		meta.SetStatusCondition(&s.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Test", Message: "set by the test"})
		return env.Client.Status().Update(ctx, s)
	}); err != nil {
		t.Fatalf("set Ready: %v", err)
	}
	load.set(ns+"/web", 1000) // makes the autoscaler write status again
	eventually(t, 30*time.Second, "a scale-up with Ready kept", func() (bool, string) {
		s := getSite(t, ns, "web")
		return replicasOf(s) > 1 && meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionReady) &&
			s.Status.Autoscaling != nil && s.Status.Autoscaling.DesiredReplicas > 1, "replicas " + itoa(replicasOf(s))
	})

	// Autoscaling turned off: the autoscaler clears its status and never touches replicas again.
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		s := getSite(t, ns, "web")
		s.Spec.Autoscaling = nil
		s.Spec.Replicas = ptr.To[int32](2)
		return env.Client.Update(ctx, s)
	}); err != nil {
		t.Fatalf("turn autoscaling off: %v", err)
	}
	eventually(t, 10*time.Second, "status.autoscaling and the autoscaler's conditions to be cleared", func() (bool, string) {
		s := getSite(t, ns, "web")
		return s.Status.Autoscaling == nil && meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionAbleToScale) == nil &&
			meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionScalingActive) == nil &&
			meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionReady), "not yet"
	})
	consistently(t, 3*time.Second, func() string {
		if r := replicasOf(getSite(t, ns, "web")); r != 2 {
			return "replicas changed to " + itoa(r) + " with autoscaling off"
		}
		return ""
	})
}

func TestNeverTouchesASiteWithoutAutoscaling(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := newNamespace(t, "autoscale-off")
	if err := env.Client.Create(ctx, newSite(ns, "manual", 2, nil)); err != nil {
		t.Fatalf("create site: %v", err)
	}
	go kubelet(ctx, t, ns, "manual")
	load.set(ns+"/manual", 10000)
	created := getSite(t, ns, "manual")
	consistently(t, 3*time.Second, func() string {
		s := getSite(t, ns, "manual")
		switch {
		case replicasOf(s) != 2:
			return "replicas changed to " + itoa(replicasOf(s))
		case s.Status.Autoscaling != nil:
			return "status.autoscaling was written"
		case len(s.Status.Conditions) != 0:
			return "conditions were written"
		case s.ResourceVersion != created.ResourceVersion:
			return "the StaticSite was written"
		case load.scrapesOf(ns+"/manual") != 0:
			return "its pods were scraped"
		}
		return ""
	})
}

func TestInvalidAutoscalingIsRejectedNamingTheField(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t, "autoscale-invalid")
	cases := []struct {
		name string
		as   v1alpha1.AutoscalingSpec
		want string
	}{
		{"both targets", v1alpha1.AutoscalingSpec{MaxReplicas: 3, TargetRPSPerPod: ptr.To[int64](10), TargetRPSPerCPU: ptr.To[int64](10)},
			"exactly one of spec.autoscaling.targetRPSPerPod and spec.autoscaling.targetRPSPerCPU"},
		{"no target", v1alpha1.AutoscalingSpec{MaxReplicas: 3},
			"exactly one of spec.autoscaling.targetRPSPerPod and spec.autoscaling.targetRPSPerCPU"},
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
}

func assertCondition(t *testing.T, s *v1alpha1.StaticSite, condType string, status metav1.ConditionStatus, reason string) {
	t.Helper()
	c := meta.FindStatusCondition(s.Status.Conditions, condType)
	if c == nil {
		t.Fatalf("condition %s missing (conditions %+v)", condType, s.Status.Conditions)
	}
	if c.Status != status || (reason != "" && c.Reason != reason) {
		t.Fatalf("condition %s = %s/%s (%s), want %s/%s", condType, c.Status, c.Reason, c.Message, status, reason)
	}
}

func consistently(t *testing.T, d time.Duration, check func() string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if msg := check(); msg != "" {
			t.Fatal(msg)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func statusString(a *v1alpha1.AutoscalingStatus) string {
	if a == nil {
		return "<nil>"
	}
	return "rps " + itoa64(a.CurrentRPS) + " avg " + itoa64(a.CurrentAverageRPS) + " measured " + itoa(a.MeasuredPods) +
		" current " + itoa(a.CurrentReplicas) + " desired " + itoa(a.DesiredReplicas)
}

func itoa(n int32) string   { return itoa64(int64(n)) }
func itoa64(n int64) string { return strconv.FormatInt(n, 10) }

func countContaining(msgs []string, sub string) int {
	n := 0
	for _, m := range msgs {
		if strings.Contains(m, sub) {
			n++
		}
	}
	return n
}
