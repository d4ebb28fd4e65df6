package autoscaling

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// What the autoscaler writes, and what it leaves alone: the StaticSite controller's conditions survive its status
// writes; turning autoscaling off removes its status and stops its passes; a site without autoscaling is never
// scraped or written.

func TestStatusWritesKeepReadyAndTurningOffClearsThem(t *testing.T) {
	ns := newNamespace(t, "autoscale-status")
	s := newStepper(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))
	web := siteKey(ns, "web")
	s.load.setRPS(web, 50)
	s.pass()
	s.step() // 5 s: the first rate; status.autoscaling and both conditions are written

	// The StaticSite controller sets Ready between two passes, as it would.
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		site := s.site()
		meta.SetStatusCondition(&site.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionReady,
			Status: metav1.ConditionTrue, Reason: "Test", Message: "set by the test"})
		return env.Client.Status().Update(context.Background(), site)
	}); err != nil {
		t.Fatalf("set Ready: %v", err)
	}

	// 10 s: 5 s at 50 and 5 s at 1000 req/s average 525: ceil(5.25) = 6, limited to max(1+4, 2×1) = 5 by the
	// default scale-up policy. The pass rewrites status.autoscaling and both conditions.
	s.load.setRPS(web, 1000)
	s.step()
	if want := []rescale{{10 * time.Second, 1, 5}}; !slices.Equal(s.rescales, want) {
		t.Fatalf("rescales %v, want %v", s.rescales, want)
	}
	wantEvents(t, s.events, "Normal Rescaled Rescaled 1 → 5: requests per second per pod above target; 525 req/s per pod"+
		" over 1 measured pods (total 525 req/s), target 100 (limited: ScaleUpLimit)")
	site := s.site()
	wantStatus(t, site, v1alpha1.AutoscalingStatus{CurrentRPS: 525, CurrentAverageRPS: 525, TargetRPSPerPod: 100, TargetSource: perPod100.source, TargetMessage: perPod100.message,
		MeasuredPods: 1, CurrentReplicas: 1, DesiredReplicas: 5, LastScaleTime: fakeTime(10 * time.Second)})
	assertCondition(t, site, v1alpha1.ConditionAbleToScale, metav1.ConditionTrue, v1alpha1.ReasonSucceededRescale)
	assertCondition(t, site, v1alpha1.ConditionScalingActive, metav1.ConditionTrue, v1alpha1.ReasonValidMetricFound)
	assertCondition(t, site, v1alpha1.ConditionReady, metav1.ConditionTrue, "Test")

	// Autoscaling turned off: the next pass clears status.autoscaling and the two conditions (Ready stays), and
	// asks for no further pass; spec.replicas is the user's from now on.
	if err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		site := s.site()
		site.Spec.Autoscaling = nil
		site.Spec.Replicas = ptr.To[int32](2)
		return env.Client.Update(context.Background(), site)
	}); err != nil {
		t.Fatalf("turn autoscaling off: %v", err)
	}
	s.advance()
	if res := s.pass(); res != (ctrl.Result{}) {
		t.Fatalf("pass with autoscaling off asked for %+v, want no requeue", res)
	}
	site = s.site()
	if site.Status.Autoscaling != nil {
		t.Fatalf("status.autoscaling kept with autoscaling off: %s", statusString(site.Status.Autoscaling))
	}
	for _, c := range []string{v1alpha1.ConditionAbleToScale, v1alpha1.ConditionScalingActive} {
		if meta.FindStatusCondition(site.Status.Conditions, c) != nil {
			t.Fatalf("%s kept with autoscaling off", c)
		}
	}
	assertCondition(t, site, v1alpha1.ConditionReady, metav1.ConditionTrue, "Test")

	// Even under load and with the clock moving, nothing more happens (the manager would not even call it).
	untouched(t, s, 3)
}

func TestNeverTouchesASiteWithoutAutoscaling(t *testing.T) {
	ns := newNamespace(t, "autoscale-off")
	s := newStepper(t, newSite(ns, "manual", 2, nil))
	s.load.setRPS(siteKey(ns, "manual"), 10000)
	untouched(t, s, 4)
	if len(s.site().Status.Conditions) != 0 || len(s.events) != 0 {
		t.Fatalf("conditions %+v or events %v written", s.site().Status.Conditions, s.events)
	}
}

// untouched advances the clock and runs passes over a site without autoscaling, checking that none of them wrote
// it, scraped its pods or asked for another pass.
func untouched(t *testing.T, s *stepper, passes int) {
	t.Helper()
	before := s.site()
	scrapes := s.load.scrapesOf(siteKey(s.key.Namespace, s.key.Name))
	for range passes {
		s.advance()
		if res := s.pass(); res != (ctrl.Result{}) {
			t.Fatalf("at %v: pass asked for %+v, want no requeue", s.now(), res)
		}
		site := s.site()
		switch {
		case replicasOf(site) != replicasOf(before):
			t.Fatalf("at %v: replicas changed %d → %d", s.now(), replicasOf(before), replicasOf(site))
		case site.ResourceVersion != before.ResourceVersion:
			t.Fatalf("at %v: the StaticSite was written: %+v", s.now(), site.Status)
		case site.Status.Autoscaling != nil:
			t.Fatalf("at %v: status.autoscaling written", s.now())
		case s.load.scrapesOf(siteKey(s.key.Namespace, s.key.Name)) != scrapes:
			t.Fatalf("at %v: its pods were scraped", s.now())
		}
	}
}
