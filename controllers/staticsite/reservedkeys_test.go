package staticsite

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/capacitygate"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Label and annotation keys under hyperstatic.dev/ (and its subdomains) are the operator's: the API server refuses
// them in every label or annotation map of a StaticSite, naming the field. Keys that only look alike pass.
func TestOperatorKeysAreRefusedInEveryMap(t *testing.T) {
	ns := namespace(t)
	img := v1alpha1.ContentSource{Image: "example/site:v1"}
	maps := []struct {
		field string
		spec  func(map[string]string) v1alpha1.StaticSiteSpec
	}{
		{"spec.podTemplate.labels", func(m map[string]string) v1alpha1.StaticSiteSpec {
			return v1alpha1.StaticSiteSpec{Content: img, PodTemplate: v1alpha1.PodTemplateOverrides{Labels: m}}
		}},
		{"spec.podTemplate.annotations", func(m map[string]string) v1alpha1.StaticSiteSpec {
			return v1alpha1.StaticSiteSpec{Content: img, PodTemplate: v1alpha1.PodTemplateOverrides{Annotations: m}}
		}},
		{"spec.service.annotations", func(m map[string]string) v1alpha1.StaticSiteSpec {
			return v1alpha1.StaticSiteSpec{Content: img, Service: v1alpha1.ServiceSpec{Annotations: m}}
		}},
		{"spec.route.annotations", func(m map[string]string) v1alpha1.StaticSiteSpec {
			return v1alpha1.StaticSiteSpec{Content: img, Hostnames: []v1alpha1.Hostname{"a.example.com"},
				Route: &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx"), Annotations: m}}
		}},
		{"spec.monitoring.labels", func(m map[string]string) v1alpha1.StaticSiteSpec {
			return v1alpha1.StaticSiteSpec{Content: img, Monitoring: &v1alpha1.MonitoringSpec{Labels: m}}
		}},
	}
	for _, m := range maps {
		for _, key := range []string{v1alpha1.LabelCapacityRole, v1alpha1.LabelSite, "capacity.hyperstatic.dev/role", "a.b.hyperstatic.dev/x"} {
			t.Run(m.field+"/"+key, func(t *testing.T) {
				expectRefused(t, ns, m.spec(map[string]string{"app": "docs", key: "probe"}), m.field)
			})
		}
		t.Run(m.field+"/look-alikes", func(t *testing.T) {
			site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alike"},
				Spec: m.spec(map[string]string{"hyperstatic.dev.example/x": "1", "nothyperstatic.dev/x": "1", "hyperstatic.dev": "1", "example.com/hyperstatic.dev": "1"})}
			testenv.Must(t, k8s.Create(context.Background(), site))
			testenv.Must(t, k8s.Delete(context.Background(), site))
		})
	}
}

// A tenant's pod in another namespace that carries the measurement label cannot keep a site's probe off any node:
// no required anti-affinity term of the probe selects it (the terms are evaluated as the scheduler does, against
// the real namespaces' labels), while a measurement pod of the probe's own namespace is selected, so the probe
// still never shares a node with one there, and the cross-namespace term is a preference only.
func TestProbeCannotBeBlockedFromAnotherNamespace(t *testing.T) {
	ns := namespace(t)
	hostileNS := namespace(t)
	hostile := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: hostileNS, Name: "blocker", Labels: map[string]string{v1alpha1.LabelCapacityRole: "probe"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example/pause:1",
			SecurityContext: &corev1.SecurityContext{AllowPrivilegeEscalation: ptr.To(false), RunAsNonRoot: ptr.To(true),
				Capabilities:   &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}}}}},
	}
	testenv.Must(t, k8s.Create(context.Background(), hostile))
	capacitySite(t, ns, "unblocked", false)
	probe := measurementPodOf(t, ns, "unblocked", capacitygate.RoleProbe)
	neighbour := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other-probe",
		Labels: map[string]string{v1alpha1.LabelCapacityRole: capacitygate.RoleCanary}}}

	required := probe.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	for i, term := range required {
		if termSelects(t, term, probe.Namespace, hostile) {
			t.Errorf("required anti-affinity term %d %+v selects the pod %s/%s: that tenant keeps the probe Pending", i, term, hostileNS, hostile.Name)
		}
	}
	own := false
	for _, term := range required {
		own = own || termSelects(t, term, probe.Namespace, neighbour)
	}
	if !own {
		t.Errorf("no required term keeps the probe off a measurement pod of its own namespace: %+v", required)
	}
	cross := false
	for _, w := range probe.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
		cross = cross || termSelects(t, w.PodAffinityTerm, probe.Namespace, hostile)
	}
	if !cross {
		t.Errorf("no preferred term keeps the probe apart from measurement pods of other namespaces")
	}
}

// termSelects says whether a pod affinity term of a pod in ownNS selects p, by the API's rules: the term applies
// to the namespaces listed plus those namespaceSelector selects (read from the API server), and to ownNS alone
// when both are empty; within them, to the pods its labelSelector selects.
func termSelects(t *testing.T, term corev1.PodAffinityTerm, ownNS string, p *corev1.Pod) bool {
	t.Helper()
	inScope := false
	switch {
	case len(term.Namespaces) == 0 && term.NamespaceSelector == nil:
		inScope = p.Namespace == ownNS
	default:
		for _, n := range term.Namespaces {
			inScope = inScope || n == p.Namespace
		}
		if term.NamespaceSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
			if err != nil {
				t.Fatal(err)
			}
			nsObj := &corev1.Namespace{}
			testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Name: p.Namespace}, nsObj))
			inScope = inScope || sel.Matches(labels.Set(nsObj.Labels))
		}
	}
	if !inScope || term.LabelSelector == nil {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		t.Fatal(fmt.Errorf("label selector: %w", err))
	}
	return sel.Matches(labels.Set(p.Labels))
}
