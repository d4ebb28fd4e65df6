package pool

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// The release rule: a held pod waits while a slice lists it ready (not rewritten since its deletion) or lists it
// with no other ready endpoint (a one-pod pool's replacement not ready yet: the proxies fall back to it); it goes
// once every slice that lists it lists it not ready beside a ready pod, or none lists it.
func TestReleasable(t *testing.T) {
	held := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "pools", Name: "old"}}
	ep := func(ns, name string, ready *bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{"10.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ready},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name}}
	}
	slice := func(eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{Endpoints: eps}
	}
	heldNotReady, heldReady, heldUnknown := ep("pools", "old", ptr.To(false)), ep("pools", "old", ptr.To(true)), ep("pools", "old", nil)
	other, otherUnknown, otherNotReady := ep("pools", "new", ptr.To(true)), ep("pools", "new", nil), ep("pools", "new", ptr.To(false))
	sameNameElsewhere := ep("other", "old", ptr.To(false))
	cases := []struct {
		name    string
		slices  []discoveryv1.EndpointSlice
		ok      bool
		listing int
	}{
		{"no slice", nil, true, 0},
		{"no slice lists it", []discoveryv1.EndpointSlice{slice(other), slice()}, true, 0},
		{"listed ready", []discoveryv1.EndpointSlice{slice(heldReady, other)}, false, 1},
		{"listed, ready unset (ready)", []discoveryv1.EndpointSlice{slice(heldUnknown, other)}, false, 1},
		{"listed not ready, alone", []discoveryv1.EndpointSlice{slice(heldNotReady)}, false, 1},
		{"listed not ready beside another not ready", []discoveryv1.EndpointSlice{slice(heldNotReady, otherNotReady)}, false, 1},
		{"listed not ready beside a ready pod", []discoveryv1.EndpointSlice{slice(heldNotReady, other), slice(other)}, true, 1},
		{"beside a pod whose ready is unset", []discoveryv1.EndpointSlice{slice(otherUnknown, heldNotReady)}, true, 1},
		{"one slice still falls back to it", []discoveryv1.EndpointSlice{slice(heldNotReady, other), slice(heldNotReady)}, false, 2},
		{"one slice not rewritten", []discoveryv1.EndpointSlice{slice(heldNotReady, other), slice(heldReady, other)}, false, 2},
		{"a pod of that name in another namespace", []discoveryv1.EndpointSlice{slice(sameNameElsewhere)}, true, 0},
	}
	for _, tc := range cases {
		ok, listing := releasable(held, tc.slices)
		if ok != tc.ok || listing != tc.listing {
			t.Errorf("%s: releasable = %v (%d slices list it), want %v (%d)", tc.name, ok, listing, tc.ok, tc.listing)
		}
	}
}

// The event says which way the pod was released.
func TestReleaseEvents(t *testing.T) {
	got := fmt.Sprint(releaseEvents([]releasedPod{{name: "a", after: 41_230_000_000}, {name: "b", after: 12_000_000_000, listing: 3}}))
	want := fmt.Sprint([]pendingEvent{
		{corev1.EventTypeNormal, EventPodReleased, "pod a left every site's EndpointSlice 41.2s after its deletion: drain released, it stops accepting 5s later"},
		{corev1.EventTypeNormal, EventPodReleased, "pod b is ready in no site's EndpointSlice 12s after its deletion (3 list it not ready beside a ready pod): drain released, it stops accepting 5s later"},
	})
	if got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
}
