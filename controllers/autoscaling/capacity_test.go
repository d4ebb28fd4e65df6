package autoscaling

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// measuredAt is when the capacity these tests write was measured.
var measuredAt = metav1.NewTime(time.Date(2026, 11, 27, 20, 1, 2, 0, time.UTC))

// capacityOf is a status.capacity as the StaticSite controller writes it: rps req/s per pod measured against
// template id, current or not.
func capacityOf(rps int64, id string, current bool) *v1alpha1.CapacityStatus {
	return &v1alpha1.CapacityStatus{Current: current, CapacityMeasurement: v1alpha1.CapacityMeasurement{
		RPSPerPod: rps, RequestsPerCPUSecond: rps, MeasuredRPS: rps / 2, P99: "3.2ms", ServerCPU: "0.5",
		Source: v1alpha1.CapacitySourceServerCPU, MeasuredAt: measuredAt,
		MeasuredAgainst: v1alpha1.TemplateIdentity{ID: id}}}
}

// setCapacity writes status.capacity through the status subresource, as the StaticSite controller does: the
// site's generation does not move.
func setCapacity(t *testing.T, ns, name string, c *v1alpha1.CapacityStatus) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := getSite(t, ns, name)
		s.Status.Capacity = c
		return env.Client.Status().Update(context.Background(), s)
	})
	if err != nil {
		t.Fatalf("write status.capacity: %v", err)
	}
}

// utilizationSite is an autoscaled site of one CPU (the default target is then 5000 req/s per pod) that aims at
// 75 % of its measured capacity.
func utilizationSite(ns, name string) *v1alpha1.StaticSite {
	site := newSite(ns, name, 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetUtilization: ptr.To[int32](75)})
	site.Spec.CPU = ptr.To(resource.MustParse("1"))
	return site
}

const (
	msgNoCapacityYet = "targetUtilization 75% not used: no capacity measured yet; default 5000 req/s per CPU × cpu 1"
	msgFromCapacity  = "75% of 2000 req/s per pod measured (ServerCPU, template 1a2b3c4d, 2026-11-27T20:01:02Z)"
	msgNotCurrent    = "targetUtilization 75% not used: the capacity of 2000 req/s per pod was measured for template" +
		" 0ld7e3p1, not the one serving (not current); default 5000 req/s per CPU × cpu 1"
)

// targetUtilization, pass by pass: without a current capacity the default target holds (3000 req/s on one pod of
// one CPU is 60 % of 5000: one pod), and status says why; a capacity measured for another template changes nothing;
// a current one of 2000 req/s per pod makes the target 75 % of it, 1500, and the same 3000 req/s need 2 pods.
// When the capacity stops being current (a new template rolled out), the default is back.
func TestTargetUtilizationFollowsCurrentCapacity(t *testing.T) {
	ns := newNamespace(t, "autoscale-capacity")
	s := newStepper(t, utilizationSite(ns, "web"))
	s.load.setRPS(siteKey(ns, "web"), 3000)
	iv := s.interval

	// 0 s: one sample, no decision; the target and why it is the default are reported at once.
	s.pass()
	wantStatus(t, s.site(), v1alpha1.AutoscalingStatus{CurrentReplicas: 1, DesiredReplicas: 1, TargetRPSPerPod: 5000,
		TargetSource: v1alpha1.TargetFromDefault, TargetMessage: msgNoCapacityYet})

	// 5 s: 3000 req/s on one pod against 5000: ceil(0.6 × 1) = 1, no rescale.
	s.step()
	wantStatus(t, s.site(), v1alpha1.AutoscalingStatus{CurrentRPS: 3000, CurrentAverageRPS: 3000, MeasuredPods: 1,
		CurrentReplicas: 1, DesiredReplicas: 1, TargetRPSPerPod: 5000, TargetSource: v1alpha1.TargetFromDefault,
		TargetMessage: msgNoCapacityYet})

	// 10 s: a capacity measured for another template is not used, and status says so.
	setCapacity(t, ns, "web", capacityOf(2000, "0ld7e3p1", false))
	s.step()
	wantStatus(t, s.site(), v1alpha1.AutoscalingStatus{CurrentRPS: 3000, CurrentAverageRPS: 3000, MeasuredPods: 1,
		CurrentReplicas: 1, DesiredReplicas: 1, TargetRPSPerPod: 5000, TargetSource: v1alpha1.TargetFromDefault,
		TargetMessage: msgNotCurrent})
	if len(s.rescales) != 0 || len(s.events) != 0 {
		t.Fatalf("before a current capacity: rescales %v, events %v", s.rescales, s.events)
	}

	// 15 s: a current capacity of 2000 req/s per pod: target 1500, 3000 / 1500 = 2 pods. The rescale's event
	// comes from the pass, the target's after the status write.
	setCapacity(t, ns, "web", capacityOf(2000, "1a2b3c4d", true))
	capacityAt := s.now() + iv
	s.stepUntil(capacityAt+3*iv, nil)
	if want := []rescale{{capacityAt, 1, 2}}; !slices.Equal(s.rescales, want) {
		t.Fatalf("rescales %v, want %v", s.rescales, want)
	}
	wantEvents(t, s.events,
		"Normal Rescaled Rescaled 1 → 2: requests per second per pod above target; 3000 req/s per pod over 1 measured"+
			" pods (total 3000 req/s), target 1500",
		"Normal TargetChanged target 1500 req/s per pod (Capacity) was 5000 (Default): "+msgFromCapacity)
	wantStatus(t, s.site(), v1alpha1.AutoscalingStatus{CurrentRPS: 3000, CurrentAverageRPS: 1500, MeasuredPods: 2,
		CurrentReplicas: 2, DesiredReplicas: 2, TargetRPSPerPod: 1500, TargetSource: v1alpha1.TargetFromCapacity,
		TargetMessage: msgFromCapacity, LastScaleTime: fakeTime(capacityAt)})

	// A new template serves now: the capacity is kept for reference but no longer current. Back to the default,
	// announced once; the scale-down waits for its window (300 s by default), so the replicas stay.
	setCapacity(t, ns, "web", capacityOf(2000, "0ld7e3p1", false))
	staleAt := s.now() + iv
	s.stepUntil(staleAt+2*iv, nil)
	wantEvents(t, s.eventsSince(staleAt),
		"Normal TargetChanged target 5000 req/s per pod (Default) was 1500 (Capacity): "+msgNotCurrent)
	wantStatus(t, s.site(), v1alpha1.AutoscalingStatus{CurrentRPS: 3000, CurrentAverageRPS: 1500, MeasuredPods: 2,
		CurrentReplicas: 2, DesiredReplicas: 2, TargetRPSPerPod: 5000, TargetSource: v1alpha1.TargetFromDefault,
		TargetMessage: msgNotCurrent, LastScaleTime: fakeTime(capacityAt)})
}

// A restarted operator (a new Reconciler, its memory empty) knows the target from status: a capacity that arrived
// while it was down is announced against what status showed, and an unchanged target is not announced again.
func TestTargetChangeAnnouncedAcrossRestart(t *testing.T) {
	ns := newNamespace(t, "autoscale-capacity-restart")
	s := newStepper(t, utilizationSite(ns, "web"))
	s.pass()
	wantStatus(t, s.site(), v1alpha1.AutoscalingStatus{CurrentReplicas: 1, DesiredReplicas: 1, TargetRPSPerPod: 5000,
		TargetSource: v1alpha1.TargetFromDefault, TargetMessage: msgNoCapacityYet})

	restart := func() { s.r = New(env.Client, s.recorder, s.load, WithClock(s.clock)) }
	restart()
	setCapacity(t, ns, "web", capacityOf(2000, "1a2b3c4d", true))
	s.step()
	wantStatus(t, s.site(), v1alpha1.AutoscalingStatus{CurrentReplicas: 1, DesiredReplicas: 1, TargetRPSPerPod: 1500,
		TargetSource: v1alpha1.TargetFromCapacity, TargetMessage: msgFromCapacity})
	wantEvents(t, s.events, "Normal TargetChanged target 1500 req/s per pod (Capacity) was 5000 (Default): "+msgFromCapacity)

	restart()
	from := s.now() + s.interval
	s.step()
	wantEvents(t, s.eventsSince(from))
}

// In the operator's manager, a status-only write of status.capacity (no new generation) wakes the autoscaler:
// the scrape interval here is an hour, so nothing but the watch can bring the pass that switches the target.
func TestCapacityWriteWakesTheAutoscaler(t *testing.T) {
	ns := newNamespace(t, "autoscale-capacity-watch")
	startAutoscaler(t, newLoadModel(clock.RealClock{}), WithScrapeInterval(time.Hour))
	createSite(t, utilizationSite(ns, "web"))

	target := func(source v1alpha1.AutoscalingTargetSource, rps int64, msg string) func() error {
		return func() error {
			a := getSite(t, ns, "web").Status.Autoscaling
			if a == nil || a.TargetSource != source || a.TargetRPSPerPod != rps || a.TargetMessage != msg {
				return fmt.Errorf("status.autoscaling %s, want target %d (%s: %s)", statusString(a), rps, source, msg)
			}
			return nil
		}
	}
	testenv.Eventually(t, "the default target", target(v1alpha1.TargetFromDefault, 5000, msgNoCapacityYet))
	generation := getSite(t, ns, "web").Generation

	setCapacity(t, ns, "web", capacityOf(2000, "1a2b3c4d", true))
	testenv.Eventually(t, "the target of the capacity", target(v1alpha1.TargetFromCapacity, 1500, msgFromCapacity))
	if g := getSite(t, ns, "web").Generation; g != generation {
		t.Fatalf("generation moved %d → %d: the status write was not status-only", generation, g)
	}
	const want = "target 1500 req/s per pod (Capacity) was 5000 (Default): " + msgFromCapacity
	testenv.Eventually(t, "one TargetChanged event", func() error {
		list := &corev1.EventList{}
		if err := env.Client.List(context.Background(), list, client.InNamespace(ns)); err != nil {
			return err
		}
		var msgs []string
		for _, e := range list.Items {
			if e.InvolvedObject.Name == "web" && e.Reason == EventReasonTargetChanged {
				msgs = append(msgs, e.Message)
			}
		}
		if len(msgs) != 1 || msgs[0] != want {
			return fmt.Errorf("TargetChanged events %q, want [%q]", msgs, want)
		}
		return nil
	})
}
