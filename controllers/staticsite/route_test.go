package staticsite

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func routeCondition(status metav1.ConditionStatus, reason, substr string) func(*v1alpha1.StaticSite) error {
	return conditionWith(v1alpha1.ConditionRouteApplied, status, reason, substr)
}

func getIngress(ns, name string) (*networkingv1.Ingress, error) {
	ing := &networkingv1.Ingress{}
	return ing, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, ing)
}

// An Ingress from hostnames: created with the TLS section, kept in sync (hostnames changed, drift corrected),
// deleted with spec.route; status.publicURLs follows.
func TestIngressFromHostnames(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	// Hostnames of the test's namespace: a hostname is held cluster-wide by the first site to claim it.
	www, apex, docs := "www."+ns+".example.com", ns+".example.com", "docs."+ns+".example.com"
	site := createSite(t, ns, "www", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/www:v1"},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname(www), v1alpha1.Hostname(apex)},
		TLS:       &v1alpha1.TLSSpec{SecretName: "www-tls"},
		Route:     &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx"), Annotations: map[string]string{"cert-manager.io/cluster-issuer": "letsencrypt"}}})
	waitSite(t, ns, "www", "RouteApplied and public URLs", func(s *v1alpha1.StaticSite) error {
		if err := routeCondition(metav1.ConditionTrue, v1alpha1.ReasonIngressApplied, "Ingress www routes ["+www+" "+apex+"]")(s); err != nil {
			return err
		}
		if want := []string{"https://" + www + "/", "https://" + apex + "/"}; !reflect.DeepEqual(s.Status.PublicURLs, want) {
			return fmt.Errorf("publicURLs %q, want %q", s.Status.PublicURLs, want)
		}
		return nil
	})
	ing, err := getIngress(ns, "www")
	testenv.Must(t, err)
	prefix := networkingv1.PathTypePrefix
	rule := func(host string) networkingv1.IngressRule {
		return networkingv1.IngressRule{Host: host, IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "www", Port: networkingv1.ServiceBackendPort{Name: "http"}}}}}}}}
	}
	want := networkingv1.IngressSpec{IngressClassName: ptr.To("nginx"),
		TLS:   []networkingv1.IngressTLS{{Hosts: []string{www, apex}, SecretName: "www-tls"}},
		Rules: []networkingv1.IngressRule{rule(www), rule(apex)}}
	if !reflect.DeepEqual(ing.Spec, want) {
		t.Errorf("Ingress spec %+v\nwant %+v", ing.Spec, want)
	}
	if ing.Annotations["cert-manager.io/cluster-issuer"] != "letsencrypt" || !metav1.IsControlledBy(ing, site) || ing.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
		t.Errorf("Ingress metadata %+v", ing.ObjectMeta)
	}
	waitEvent(t, ns, "www", "Normal Created Created Ingress www")

	// Someone edits the backend: put back (the Ingress is watched).
	testenv.Eventually(t, "edit Ingress", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(ing), ing))
		ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name = "evil"
		return k8s.Update(ctx, ing)
	})
	testenv.Eventually(t, "Ingress restored", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(ing), ing))
		if n := ing.Spec.Rules[0].HTTP.Paths[0].Backend.Service.Name; n != "www" {
			return fmt.Errorf("backend %s", n)
		}
		return nil
	})

	// Hostnames change, TLS goes: the Ingress follows (rules and TLS section), and so do the URLs.
	updateSite(t, site, func(s *v1alpha1.StaticSite) {
		s.Spec.Hostnames = []v1alpha1.Hostname{v1alpha1.Hostname(docs)}
		s.Spec.TLS = nil
	})
	testenv.Eventually(t, "Ingress updated", func() error {
		ing, err := getIngress(ns, "www")
		if err != nil {
			return err
		}
		if len(ing.Spec.Rules) != 1 || ing.Spec.Rules[0].Host != docs || len(ing.Spec.TLS) != 0 {
			return fmt.Errorf("spec %+v", ing.Spec)
		}
		return nil
	})
	waitSite(t, ns, "www", "http public URL", func(s *v1alpha1.StaticSite) error {
		if want := []string{"http://" + docs + "/"}; !reflect.DeepEqual(s.Status.PublicURLs, want) {
			return fmt.Errorf("publicURLs %q", s.Status.PublicURLs)
		}
		return nil
	})

	// spec.route removed: the Ingress is deleted, the condition and URLs go.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Route = nil })
	testenv.Eventually(t, "Ingress deleted", func() error {
		_, err := getIngress(ns, "www")
		return testenv.Gone(err)
	})
	waitSite(t, ns, "www", "no RouteApplied", func(s *v1alpha1.StaticSite) error {
		if len(s.Status.PublicURLs) != 0 {
			return fmt.Errorf("publicURLs %q", s.Status.PublicURLs)
		}
		return condition(s, v1alpha1.ConditionRouteApplied, "", "")
	})
	waitEvent(t, ns, "www", "Deleted Ingress www: spec.route names no ingressClassName")
}

// An Ingress of the site's name that is not the site's is never taken over: RouteApplied says so, the object
// stays as it was, and the site still serves (Ready is not the route's business).
func TestForeignIngressIsNeverAdopted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	foreign := &networkingv1.Ingress{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shop"},
		Spec: networkingv1.IngressSpec{DefaultBackend: &networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "theirs",
			Port: networkingv1.ServiceBackendPort{Number: 80}}}}}
	testenv.Must(t, k8s.Create(ctx, foreign))
	createSite(t, ns, "shop", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/shop:v1"},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname("shop." + ns + ".example.com")}, Route: &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx")}})
	waitSite(t, ns, "shop", "RouteApplied False naming the Ingress", routeCondition(metav1.ConditionFalse, v1alpha1.ReasonRouteRejected,
		"Ingress "+ns+"/shop exists and is not owned by this StaticSite"))
	waitEvent(t, ns, "shop", "Warning RouteRejected RouteApplied False: Ingress "+ns+"/shop exists and is not owned")
	s := rollOutAndWaitReady(t, ns, "shop")
	if len(s.Status.PublicURLs) != 0 {
		t.Errorf("public URLs %q through a route that is not the site's", s.Status.PublicURLs)
	}
	ing, err := getIngress(ns, "shop")
	testenv.Must(t, err)
	if len(ing.OwnerReferences) != 0 || len(ing.Spec.Rules) != 0 || ing.Spec.DefaultBackend.Service.Name != "theirs" {
		t.Errorf("foreign Ingress changed: %+v", ing)
	}
	// Removing the route leaves the foreign Ingress alone.
	updateSite(t, s, func(s *v1alpha1.StaticSite) { s.Spec.Route = nil })
	waitSite(t, ns, "shop", "no RouteApplied", func(s *v1alpha1.StaticSite) error { return condition(s, v1alpha1.ConditionRouteApplied, "", "") })
	if _, err := getIngress(ns, "shop"); err != nil {
		t.Errorf("foreign Ingress: %v", err)
	}
}

// An HTTPRoute from parentRefs, against the Gateway API's real CRD: while the CRD is missing RouteApplied says so
// (and nothing else of the site suffers); once installed the route appears without an edit, is kept in sync, and
// goes when the site switches to an Ingress.
func TestHTTPRouteFromParentRefs(t *testing.T) {
	ctx := context.Background()
	crd, err := testenv.HTTPRouteCRD()
	testenv.Must(t, err)
	env.UninstallCRD(t, crd) // absent at first, whatever ran before
	t.Cleanup(func() { env.UninstallCRD(t, crd) })

	ns := namespace(t)
	blog := "blog." + ns + ".example.com"
	site := createSite(t, ns, "blog", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/blog:v1"},
		Service:   v1alpha1.ServiceSpec{Port: 8000},
		Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname(blog)}, TLS: &v1alpha1.TLSSpec{SecretName: "blog-tls"},
		Route: &v1alpha1.RouteSpec{ParentRefs: []v1alpha1.ParentReference{{Name: "public", Namespace: ptr.To("gateways"), SectionName: ptr.To("https")}}}})
	waitSite(t, ns, "blog", "RouteApplied False HTTPRouteCRDMissing", routeCondition(metav1.ConditionFalse, v1alpha1.ReasonHTTPRouteCRDMissing,
		"does not serve gateway.networking.k8s.io/v1 HTTPRoutes"))
	waitEvent(t, ns, "blog", "Warning HTTPRouteCRDMissing")
	rollOutAndWaitReady(t, ns, "blog") // without the CRD

	env.InstallCRD(t, crd)
	waitSite(t, ns, "blog", "RouteApplied True", func(s *v1alpha1.StaticSite) error {
		if err := routeCondition(metav1.ConditionTrue, v1alpha1.ReasonHTTPRouteApplied, "HTTPRoute blog routes ["+blog+"]")(s); err != nil {
			return err
		}
		if want := []string{"https://" + blog + "/"}; !reflect.DeepEqual(s.Status.PublicURLs, want) {
			return fmt.Errorf("publicURLs %q", s.Status.PublicURLs)
		}
		return nil
	})
	waitEvent(t, ns, "blog", "Normal HTTPRouteApplied RouteApplied again")
	hr := &gatewayv1.HTTPRoute{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blog"}, hr))
	if !metav1.IsControlledBy(hr, site) || hr.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
		t.Errorf("HTTPRoute metadata %+v", hr.ObjectMeta)
	}
	if p := hr.Spec.ParentRefs; len(p) != 1 || p[0].Name != "public" || *p[0].Namespace != "gateways" || *p[0].SectionName != "https" {
		t.Errorf("parentRefs %+v", p)
	}
	if !reflect.DeepEqual(hr.Spec.Hostnames, []gatewayv1.Hostname{gatewayv1.Hostname(blog)}) {
		t.Errorf("hostnames %v", hr.Spec.Hostnames)
	}
	// One rule to the Service's port; the API server's defaults (kind Service, weight 1, match "/") are not ours.
	if r := hr.Spec.Rules; len(r) != 1 || len(r[0].BackendRefs) != 1 || r[0].BackendRefs[0].Name != "blog" || *r[0].BackendRefs[0].Port != 8000 ||
		*r[0].BackendRefs[0].Kind != "Service" {
		t.Errorf("rules %+v", r)
	}

	// Drift on the HTTPRoute is corrected through its watch (started when the CRD was found).
	testenv.Eventually(t, "edit HTTPRoute", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(hr), hr))
		hr.Spec.Hostnames = []gatewayv1.Hostname{"evil.example.com"}
		return k8s.Update(ctx, hr)
	})
	testenv.Eventually(t, "HTTPRoute restored", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(hr), hr))
		if !reflect.DeepEqual(hr.Spec.Hostnames, []gatewayv1.Hostname{gatewayv1.Hostname(blog)}) {
			return fmt.Errorf("hostnames %v", hr.Spec.Hostnames)
		}
		return nil
	})

	// Switch to an Ingress: the HTTPRoute goes, the Ingress comes.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Route = &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx")} })
	testenv.Eventually(t, "HTTPRoute deleted", func() error {
		if err := testenv.Gone(k8s.Get(ctx, client.ObjectKeyFromObject(hr), &gatewayv1.HTTPRoute{})); err != nil {
			return err
		}
		_, err := getIngress(ns, "blog")
		return err
	})
	waitSite(t, ns, "blog", "RouteApplied by the Ingress", routeCondition(metav1.ConditionTrue, v1alpha1.ReasonIngressApplied, "Ingress blog"))
}
