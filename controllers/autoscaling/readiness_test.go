package autoscaling

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// Under overload, while the pods of a scale-up become Ready one at a time, the autoscaler keeps scaling up as the
// rate policies allow: every pod's rate window starts when that pod became Ready, so a pod turning Ready does not
// throw away the rates of the pods already serving. A new pod without a rate yet counts as the HPA counts a pod
// without a metric: at 0 while scaling up (and pending pods at 0 too), so it never makes the count overshoot.
//
// 2000 req/s against 100 per pod; the fake kubelet makes one pod Ready per step. Default behavior: scale-up to
// max(current+4, 2×current) per 15 s, no scale-up stabilization.
//
//	 5 s  one pod at 2000 req/s: ceil(20) = 20, limited to max(1+4, 2)                                 → 1 → 5
//	10 s  pod 2 Ready, pods 3-5 Pending; the 1 → 5 of 5 s is inside the 15 s policy period: held at 5
//	15 s  pod 3 Ready: still held by the policy
//	20 s  pod 4 Ready; the 1 → 5 has left the period: max(5+4, 2×5) = 10                             → 5 → 10
//	      (pods 1-3 have rates since 5 s or since they turned Ready; pods 4-5 count at 0: 20 replicas wanted)
//	35 s  pod 7 of 10 Ready; the 5 → 10 of 20 s has left the period: max(10+4, 2×10) = 20            → 10 → 20
//
// Before each pod had its own window, every readiness change restarted all of them: no pass had a rate until the
// ready pods stayed the same for two scrapes, so the autoscaler held at 5 until all 5 were Ready (5 → 10 at 30 s)
// and at 10 until all 10 were (10 → 20 at 60 s).
func TestKeepsScalingUpWhilePodsBecomeReadyOneByOne(t *testing.T) {
	ns := newNamespace(t, "autoscale-rollout")
	s := newStepper(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 20, TargetRPSPerPod: ptr.To[int64](100)}))
	s.kubelet.readyPerConverge = 1
	s.load.setRPS(siteKey(ns, "web"), 2000)

	type readiness struct{ ready, pods int }
	var atRescale []readiness // how many pods were Ready when each rescale was decided
	s.pass()
	s.stepUntil(60*time.Second, func() {
		if len(s.rescales) > len(atRescale) {
			ready, pods := readyPods(t, ns, "web")
			atRescale = append(atRescale, readiness{ready, pods})
		}
	})
	want := []rescale{{5 * time.Second, 1, 5}, {20 * time.Second, 5, 10}, {35 * time.Second, 10, 20}}
	if !slices.Equal(s.rescales, want) {
		t.Fatalf("rescales %v, want %v", s.rescales, want)
	}
	// The pass decides on the pods it found: those the kubelet had before the rescale it made.
	if wantReady := []readiness{{1, 1}, {4, 5}, {7, 10}}; !slices.Equal(atRescale, wantReady) {
		t.Fatalf("ready/pods at each rescale %v, want %v", atRescale, wantReady)
	}
}

// readyPods counts the site's pods, and those serving.
func readyPods(t *testing.T, ns, site string) (ready, pods int) {
	t.Helper()
	list := &corev1.PodList{}
	if err := env.Client.List(context.Background(), list, client.InNamespace(ns),
		client.MatchingLabels{v1alpha1.LabelSite: site}); err != nil {
		t.Fatalf("list pods: %v", err)
	}
	for i := range list.Items {
		if podstate.Serving(&list.Items[i]) {
			ready++
		}
	}
	return ready, len(list.Items)
}

// Near capacity, the pods that were serving before a scale-up must not make it overshoot: their windows reach back
// to when they carried the load alone. Once the new pods have a rate, every pod is measured since the ready pods
// last changed, over the same span; until then the new pods count at 0 and the old ones at what they measured.
//
// 360 req/s against 100 per pod needs 4 pods (3.6).
//
//	 5 s  one pod at 360 req/s: ceil(3.6) = 4                                                          → 1 → 4
//	10 s  pods 2-4 just turned Ready: no rate, at 0; pod 1 measured 360 since the rescale: 360 / 4 = 90,
//	      ratio 0.9 reverses the scale-up: hold
//	15 s  90 req/s on each of the 4 pods since they became 4: ratio 0.9, within tolerance: hold
//
// Had pod 1 kept its window back to the rescale at 15 s, it would read (360 + 90) / 2 = 225, the average
// (225 + 3×90) / 4 = 123.75, and 4 → 5.
func TestNoOvershootWhenNewPodsJoinNearCapacity(t *testing.T) {
	ns := newNamespace(t, "autoscale-capacity")
	s := newStepper(t, newSite(ns, "web", 1, &v1alpha1.AutoscalingSpec{MaxReplicas: 6, TargetRPSPerPod: ptr.To[int64](100)}))
	s.load.setRPS(siteKey(ns, "web"), 360)
	s.pass()
	s.stepUntil(60*time.Second, nil)
	if want := []rescale{{5 * time.Second, 1, 4}}; !slices.Equal(s.rescales, want) {
		t.Fatalf("rescales %v, want %v", s.rescales, want)
	}
	wantStatus(t, s.site(), v1alpha1.AutoscalingStatus{CurrentRPS: 360, CurrentAverageRPS: 90, TargetRPSPerPod: 100, TargetSource: perPod100.source, TargetMessage: perPod100.message,
		MeasuredPods: 4, CurrentReplicas: 4, DesiredReplicas: 4, LastScaleTime: fakeTime(5 * time.Second)})
}
