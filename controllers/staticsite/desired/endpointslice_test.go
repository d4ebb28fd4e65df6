package desired

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
// gives the address of that family.
func TestPoolEndpointsOf(t *testing.T) {
	terminating := pod("gone", true, "10.0.0.9")
	now := metav1.Now()
	terminating.DeletionTimestamp = &now
	draining := pod("leaving", true, "10.0.0.0")
	draining.Annotations = map[string]string{poolplacement.AnnotationDraining: "2026-12-04T06:00:00Z"}
	eps := PoolEndpointsOf([]corev1.Pod{pod("b", true, "10.0.0.2"), pod("late", false, "10.0.0.3"), terminating, draining,
		pod("dual", true, "10.0.0.1", "fd00::1"), pod("none", true), pod("v6", true, "fd00::2")})
	var got []string
	for _, e := range eps.Pods {
		got = append(got, e.Address)
	}
	if eps.AddressType != discoveryv1.AddressTypeIPv4 || !reflect.DeepEqual(got, []string{"10.0.0.1", "10.0.0.2"}) {
		t.Errorf("IPv4 pool: %s %v", eps.AddressType, got)
	}
	eps = PoolEndpointsOf([]corev1.Pod{pod("v6", true, "fd00::2"), pod("dual", true, "10.0.0.1", "fd00::1")})
	got = nil
	for _, e := range eps.Pods {
		got = append(got, e.Address)
	}
	if eps.AddressType != discoveryv1.AddressTypeIPv6 || !reflect.DeepEqual(got, []string{"fd00::1", "fd00::2"}) {
		t.Errorf("IPv6 pool: %s %v", eps.AddressType, got)
	}
	if eps := PoolEndpointsOf(nil); eps.AddressType != discoveryv1.AddressTypeIPv4 || len(eps.Pods) != 0 {
		t.Errorf("no pod: %+v", eps)
	}
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
}
