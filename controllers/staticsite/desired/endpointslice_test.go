package desired

import (
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

func pod(name string, ready bool, ips ...string) corev1.Pod {
	p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pools"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}
	for _, ip := range ips {
		p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
	}
	if len(ips) > 0 {
		p.Status.PodIP = ips[0]
	}
	return p
}

// Only ready pods that are neither terminating nor draining, of the first one's family, sorted; a dual-stack pod
// gives the address of that family. Ready, serving, not terminating.
func TestPoolEndpointsOf(t *testing.T) {
	terminating := held(pod("gone", true, "10.0.0.9"))
	draining := pod("leaving", true, "10.0.0.0")
	draining.Annotations = map[string]string{poolplacement.AnnotationDraining: "2026-12-04T06:00:00Z"}
	eps := PoolEndpointsOf([]corev1.Pod{pod("b", true, "10.0.0.2"), pod("late", false, "10.0.0.3"), terminating, draining,
		pod("dual", true, "10.0.0.1", "fd00::1"), pod("none", true), pod("v6", true, "fd00::2")})
	want := []PoolEndpoint{
		{Address: "10.0.0.1", Pod: "dual", Namespace: "pools", Node: "n1", Ready: true, Serving: true},
		{Address: "10.0.0.2", Pod: "b", Namespace: "pools", Node: "n1", Ready: true, Serving: true},
	}
	if eps.AddressType != discoveryv1.AddressTypeIPv4 || !reflect.DeepEqual(eps.Pods, want) {
		t.Errorf("IPv4 pool: %s %+v", eps.AddressType, eps.Pods)
	}
	eps = PoolEndpointsOf([]corev1.Pod{pod("v6", true, "fd00::2"), pod("dual", true, "10.0.0.1", "fd00::1")})
	if eps.AddressType != discoveryv1.AddressTypeIPv6 || !reflect.DeepEqual(addresses(eps), []string{"fd00::1", "fd00::2"}) {
		t.Errorf("IPv6 pool: %s %v", eps.AddressType, addresses(eps))
	}
	if eps := PoolEndpointsOf(nil); eps.AddressType != discoveryv1.AddressTypeIPv4 || len(eps.Pods) != 0 {
		t.Errorf("no pod: %+v", eps)
	}
}

// With no ready pod to list, the terminating pods that hold their drain and were ready when deleted are listed,
// serving and terminating, not ready (kube-proxy falls back to them); never one released, draining, never ready
// or finished. A ready pod, once there is one, is all the slice lists. The family is the listed pods' own.
func TestPoolEndpointsOfHeldPods(t *testing.T) {
	old := held(pod("old", true, "10.0.0.9"))
	unready := held(pod("unready", true, "10.0.0.8")) // its readiness failed at its SIGTERM
	unready.Status.Conditions[0] = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse,
		LastTransitionTime: metav1.NewTime(unready.DeletionTimestamp.Add(-300 * time.Second))}
	released := held(pod("released", true, "10.0.0.7"))
	released.Annotations = map[string]string{poolplacement.AnnotationDrainReleased: "2026-12-04T06:00:00Z"}
	marked := held(pod("marked", true, "10.0.0.6"))
	marked.Annotations = map[string]string{poolplacement.AnnotationDraining: "2026-12-04T06:00:00Z"}
	neverReady := held(pod("never", false, "10.0.0.5"))
	finished := held(pod("finished", true, "10.0.0.4"))
	finished.Status.Phase = corev1.PodSucceeded
	replacement := pod("new", false, "10.0.0.1") // not ready yet

	eps := PoolEndpointsOf([]corev1.Pod{old, released, marked, neverReady, finished, replacement, unready})
	want := []PoolEndpoint{
		{Address: "10.0.0.8", Pod: "unready", Namespace: "pools", Node: "n1", Serving: true, Terminating: true},
		{Address: "10.0.0.9", Pod: "old", Namespace: "pools", Node: "n1", Serving: true, Terminating: true},
	}
	if eps.AddressType != discoveryv1.AddressTypeIPv4 || !reflect.DeepEqual(eps.Pods, want) {
		t.Errorf("no ready pod: %s %+v, want %+v", eps.AddressType, eps.Pods, want)
	}
	if again := PoolEndpointsOf([]corev1.Pod{unready, replacement, finished, neverReady, marked, released, old}); !reflect.DeepEqual(again, eps) {
		t.Errorf("the same pods in another order: %+v, want %+v", again, eps)
	}

	replacement = pod("new", true, "10.0.0.1")
	eps = PoolEndpointsOf([]corev1.Pod{old, unready, replacement})
	if want := []PoolEndpoint{{Address: "10.0.0.1", Pod: "new", Namespace: "pools", Node: "n1", Ready: true, Serving: true}}; !reflect.DeepEqual(eps.Pods, want) {
		t.Errorf("the replacement ready: %+v, want %+v", eps.Pods, want)
	}

	v6 := held(pod("v6", true, "fd00::9", "10.0.0.9"))
	if eps := PoolEndpointsOf([]corev1.Pod{v6, pod("v4", false, "10.0.0.1")}); eps.AddressType != discoveryv1.AddressTypeIPv6 ||
		!reflect.DeepEqual(addresses(eps), []string{"fd00::9"}) {
		t.Errorf("an IPv6 held pod: %s %v", eps.AddressType, addresses(eps))
	}
}

// held is p deleted with a grace of 320 s and holding its drain, ready until its deletion.
func held(p corev1.Pod) corev1.Pod {
	at := metav1.NewTime(time.Date(2026, 12, 4, 6, 5, 20, 0, time.UTC))
	p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &at, ptr.To[int64](320)
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at.Add(-time.Hour))
	return p
}

func addresses(eps PoolEndpoints) []string {
	var out []string
	for _, e := range eps.Pods {
		out = append(out, e.Address)
	}
	return out
}

// The pool Service is the Service without a selector; the slice names the Service and its port.
func TestPoolServiceAndSlice(t *testing.T) {
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "web", UID: "u"}}
	with, without := Service(site), PoolService(site)
	if len(with.Spec.Selector) == 0 || without.Spec.Selector != nil {
		t.Fatalf("selectors: %v / %v", with.Spec.Selector, without.Spec.Selector)
	}
	with.Spec.Selector = nil
	if !reflect.DeepEqual(with, without) {
		t.Errorf("the pool Service differs by more than its selector:\n%+v\n%+v", with, without)
	}
	s := PoolEndpointSlice(site, "shared", PoolEndpointsOf([]corev1.Pod{pod("a", true, "10.0.0.1")}))
	if *s.Name != "docs-pool" || s.Labels[discoveryv1.LabelServiceName] != "docs" || s.Labels[discoveryv1.LabelManagedBy] != EndpointSliceManagedBy ||
		*s.AddressType != discoveryv1.AddressTypeIPv4 || len(s.Endpoints) != 1 || s.Endpoints[0].Addresses[0] != "10.0.0.1" ||
		*s.Ports[0].Name != v1alpha1.ServerPortName || *s.Ports[0].Port != v1alpha1.ServerPort || *s.Endpoints[0].TargetRef.Namespace != "pools" {
		t.Errorf("slice: %+v", s)
	}
	for _, c := range []struct {
		pod  corev1.Pod
		want [3]bool // ready, serving, terminating
	}{{pod("a", true, "10.0.0.1"), [3]bool{true, true, false}}, {held(pod("a", true, "10.0.0.1")), [3]bool{false, true, true}}} {
		s := PoolEndpointSlice(site, "shared", PoolEndpointsOf([]corev1.Pod{c.pod}))
		if len(s.Endpoints) != 1 {
			t.Fatalf("slice endpoints: %+v", s.Endpoints)
		}
		k := s.Endpoints[0].Conditions
		if got := [3]bool{*k.Ready, *k.Serving, *k.Terminating}; got != c.want {
			t.Errorf("pod %s (terminating: %v): conditions ready, serving, terminating %v, want %v", c.pod.Name, c.pod.DeletionTimestamp != nil, got, c.want)
		}
	}
}
