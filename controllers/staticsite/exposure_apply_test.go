package staticsite

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The exposure children, like the others: the fields the operator owns, read back from a real API server (with
// the real Gateway API and Prometheus Operator CRDs), equal the desired objects, so a second apply sends nothing.
func TestExposureApplyIsSkippedWhenUnchanged(t *testing.T) {
	ctx := context.Background()
	for _, crd := range []func() (string, error){testenv.HTTPRouteCRD, testenv.PodMonitorCRD} {
		path, err := crd()
		testenv.Must(t, err)
		env.InstallCRD(t, path)
		t.Cleanup(func() { env.UninstallCRD(t, path) })
	}
	ns := namespace(t)
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "noop", UID: "0000-noop"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/noop:v1"},
			Service: v1alpha1.ServiceSpec{Port: 8080, HTTPSPort: 8443},
			TLS: &v1alpha1.TLSSpec{SecretName: "noop-tls", HTTPRedirect: true,
				HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 63072000, IncludeSubDomains: true, Preload: true}},
			HTTP3:     &v1alpha1.HTTP3Spec{Enabled: ptr.To(true), AdvertisedPort: ptr.To[int32](443)}, // UDP ports beside the TCP ones
			Hostnames: []v1alpha1.Hostname{"b.example.com", "*.a.example.com"},
			Route: &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx"), Annotations: map[string]string{"x": "y"},
				ParentRefs: []v1alpha1.ParentReference{{Name: "gw", Namespace: ptr.To("infra"), SectionName: ptr.To("https")}, {Name: "other"}}},
			Monitoring:    &v1alpha1.MonitoringSpec{Labels: map[string]string{"release": "prom"}, Interval: "30s"},
			NetworkPolicy: &v1alpha1.NetworkPolicySpec{ServingFrom: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/8", Except: []string{"10.1.0.0/16"}}}}},
		}}
	content := desired.ImageContent(v1alpha1.ContentSourceImage, site.Spec.Content.Image, "")
	key := client.ObjectKey{Namespace: ns, Name: "noop"}
	applyTwice(t, site, key, []applyCase{
		{"Deployment", func() client.Object { return &appsv1.Deployment{} }, func() any {
			return desired.Deployment(site, testServerImage, content, desired.MemoryFor(site, content))
		}, extractDeployment},
		{"Service", func() client.Object { return &corev1.Service{} }, func() any { return desired.Service(site) }, extractService},
		{"Ingress", func() client.Object { return &networkingv1.Ingress{} }, func() any { return desired.Ingress(site, site.Spec.Hostnames) }, extractIngress},
		{"HTTPRoute", func() client.Object { return &gatewayv1.HTTPRoute{} }, func() any { return desired.HTTPRoute(site, site.Spec.Hostnames) }, extractHTTPRoute},
		{"NetworkPolicy", func() client.Object { return &networkingv1.NetworkPolicy{} }, func() any { return desired.NetworkPolicy(site, "ops") }, extractNetworkPolicy},
	})

	r := &Reconciler{Client: k8s, Recorder: record.NewFakeRecorder(10)}
	var results []applyResult
	for range 2 {
		res, _, err := r.applyUnstructured(ctx, site, desired.PodMonitor(site))
		testenv.Must(t, err)
		results = append(results, res)
	}
	if results[0] != applyCreated || results[1] != applyUnchanged {
		live, err := getPodMonitor(ns, "noop")
		testenv.Must(t, err)
		owned, _ := extractUnstructured(live)
		t.Errorf("PodMonitor: results %v, want [Created Unchanged]\nowned:   %s\ndesired: %s", results, jsonOf(owned), jsonOf(desired.PodMonitor(site).Object))
	}
}
