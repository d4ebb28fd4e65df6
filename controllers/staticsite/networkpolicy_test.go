package staticsite

import (
	"context"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func policyPort(name string) networkingv1.NetworkPolicyPort {
	return networkingv1.NetworkPolicyPort{Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(intstr.FromString(name))}
}

func namespacePeer(labels map[string]string) networkingv1.NetworkPolicyPeer {
	return networkingv1.NetworkPolicyPeer{NamespaceSelector: &metav1.LabelSelector{MatchLabels: labels}}
}

// Defaults: serving port open to all, admin port to the operator's namespace and the "monitoring" namespace; no
// operator rule when the operator's namespace is unknown.
func TestDesiredNetworkPolicy(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	if desired.NetworkPolicy(site, "ops") != nil {
		t.Error("a NetworkPolicy without spec.networkPolicy")
	}
	site.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{}
	np := typed[networkingv1.NetworkPolicy](t, desired.NetworkPolicy(site, "ops"))
	want := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: sitechild.SelectorLabels(site)},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{Ports: []networkingv1.NetworkPolicyPort{policyPort("http")}},
			{Ports: []networkingv1.NetworkPolicyPort{policyPort("admin")}, From: []networkingv1.NetworkPolicyPeer{
				namespacePeer(map[string]string{"kubernetes.io/metadata.name": "ops"}),
				namespacePeer(map[string]string{"kubernetes.io/metadata.name": "monitoring"})}},
		},
	}
	if !reflect.DeepEqual(np.Spec, want) {
		t.Errorf("spec %+v\nwant %+v", np.Spec, want)
	}
	np = typed[networkingv1.NetworkPolicy](t, desired.NetworkPolicy(site, ""))
	if from := np.Spec.Ingress[1].From; len(from) != 1 || from[0].NamespaceSelector.MatchLabels["kubernetes.io/metadata.name"] != "monitoring" {
		t.Errorf("admin peers without an operator namespace: %+v", from)
	}
}

// The NetworkPolicy against the API server: created with the https port and the user's peers, deleted with the
// field.
func TestNetworkPolicy(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	lb := networkingv1.NetworkPolicyPeer{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8"}}
	site := createSite(t, ns, "fenced", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/f:v1"},
		TLS: &v1alpha1.TLSSpec{SecretName: "fenced-tls"},
		NetworkPolicy: &v1alpha1.NetworkPolicySpec{ServingFrom: []networkingv1.NetworkPolicyPeer{lb},
			MonitoringNamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "observability"}}}})
	np := &networkingv1.NetworkPolicy{}
	testenv.Eventually(t, "NetworkPolicy", func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "fenced"}, np) })
	want := []networkingv1.NetworkPolicyIngressRule{
		{Ports: []networkingv1.NetworkPolicyPort{policyPort("http"), policyPort("https")}, From: []networkingv1.NetworkPolicyPeer{lb}},
		{Ports: []networkingv1.NetworkPolicyPort{policyPort("admin")}, From: []networkingv1.NetworkPolicyPeer{
			namespacePeer(map[string]string{"kubernetes.io/metadata.name": testOperatorNamespace}),
			namespacePeer(map[string]string{"team": "observability"})}},
	}
	if !reflect.DeepEqual(np.Spec.Ingress, want) || !reflect.DeepEqual(np.Spec.PodSelector.MatchLabels, sitechild.SelectorLabels(site)) {
		t.Errorf("ingress %+v\nwant %+v", np.Spec.Ingress, want)
	}
	if !metav1.IsControlledBy(np, site) {
		t.Errorf("owners %v", np.OwnerReferences)
	}
	waitEvent(t, ns, "fenced", "Created NetworkPolicy fenced")

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.NetworkPolicy = nil })
	testenv.Eventually(t, "NetworkPolicy deleted", func() error {
		return testenv.Gone(k8s.Get(ctx, client.ObjectKeyFromObject(np), &networkingv1.NetworkPolicy{}))
	})
	waitEvent(t, ns, "fenced", "Deleted NetworkPolicy fenced: spec.networkPolicy is unset")
}
