package desired

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// A site with previews that holds their wildcard: its route carries one wildcard "*.<domain>" beside its hostnames
// (Ingress rules, HTTPRoute hostnames); the Ingress's TLS section names the hostnames only (the certificate's); no
// preview URL among the public URLs. Without previews, or when another site holds the wildcard, the route is the
// hostnames alone.
func TestRouteCoversThePreviews(t *testing.T) {
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "web"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "https://git.example/x", Ref: "main"}},
			Route: &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx")}, TLS: &v1alpha1.TLSSpec{SecretName: "docs-tls"},
			Previews: &v1alpha1.PreviewsSpec{Domain: "preview.example.com", PullRequests: true}}}
	held := []v1alpha1.Hostname{"docs.example.com"}
	previewsHeld := true
	ingressHosts := func() (rules, tls []string) {
		ing := Ingress(site, RouteHosts(site, held, previewsHeld))
		for _, r := range ing.Spec.Rules {
			rules = append(rules, *r.Host)
		}
		if len(ing.Spec.TLS) == 1 {
			tls = ing.Spec.TLS[0].Hosts
		}
		return rules, tls
	}
	rules, tls := ingressHosts()
	if !slices.Equal(rules, []string{"docs.example.com", "*.preview.example.com"}) || !slices.Equal(tls, []string{"docs.example.com"}) {
		t.Errorf("Ingress rules %q, TLS %q; want the hostname and the previews' wildcard, TLS for the hostname only", rules, tls)
	}
	if urls := PublicURLs(site, held); !slices.Equal(urls, []string{"https://docs.example.com/"}) {
		t.Errorf("public URLs %q", urls)
	}
	site.Spec.Route = &v1alpha1.RouteSpec{ParentRefs: []v1alpha1.ParentReference{{Name: "gw"}}}
	var hr []string
	for _, h := range HTTPRoute(site, RouteHosts(site, held, previewsHeld)).Spec.Hostnames {
		hr = append(hr, string(h))
	}
	if !slices.Equal(hr, []string{"docs.example.com", "*.preview.example.com"}) {
		t.Errorf("HTTPRoute hostnames %q", hr)
	}
	site.Spec.Route = &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx")}
	previewsHeld = false
	if rules, _ := ingressHosts(); !slices.Equal(rules, []string{"docs.example.com"}) {
		t.Errorf("the wildcard held by another site, Ingress rules %q", rules)
	}
	previewsHeld = true
	site.Spec.Previews = nil
	site.Spec.Route = &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx")}
	if rules, _ := ingressHosts(); !slices.Equal(rules, []string{"docs.example.com"}) {
		t.Errorf("without previews, Ingress rules %q", rules)
	}
}
