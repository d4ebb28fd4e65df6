package staticsite

import (
	"context"
	"fmt"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A previews domain is claimed like a hostname (internal/hostclaim): of two sites with previews under one domain,
// the first routes the wildcard "*.<domain>" (and so every preview host under it); the second's route leaves it
// out, RouteApplied=False HostnameConflict naming it and its holder, and its status does not list it. Once the
// holder is gone the second gets it. Without the claim both routes would carry the wildcard and an Ingress
// controller would send one site's preview hosts to either.
func TestPreviewsDomainIsClaimedOnce(t *testing.T) {
	ns := namespace(t)
	domain := "preview." + ns + ".example.com"
	wildcard := "*." + domain
	previewsSite := func(name string) *v1alpha1.StaticSite {
		spec := gitSiteSpec("http://127.0.0.1:1/" + name + ".git")
		spec.Hostnames = []v1alpha1.Hostname{v1alpha1.Hostname(name + "." + ns + ".example.com")}
		spec.Route = &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx")}
		spec.Previews = &v1alpha1.PreviewsSpec{Domain: domain, PullRequests: true}
		return createGitSite(t, ns, name, spec)
	}
	routes := func(name string, want ...string) func(*v1alpha1.StaticSite) error {
		return func(s *v1alpha1.StaticSite) error {
			hosts, err := ingressHosts(ns, name)
			if err != nil {
				return err
			}
			if !slices.Equal(hosts, want) {
				return fmt.Errorf("Ingress %s hosts %q, want %q", name, hosts, want)
			}
			if held := slices.Contains(s.Status.Hostnames, wildcard); held != slices.Contains(want, wildcard) {
				return fmt.Errorf("status.hostnames %q (the wildcard held: %v)", s.Status.Hostnames, held)
			}
			return nil
		}
	}
	first := previewsSite("first")
	waitSite(t, ns, "first", "the first site routes its previews", func(s *v1alpha1.StaticSite) error {
		if err := routeCondition(metav1.ConditionTrue, v1alpha1.ReasonIngressApplied, wildcard)(s); err != nil {
			return err
		}
		return routes("first", "first."+ns+".example.com", wildcard)(s)
	})
	previewsSite("second")
	waitSite(t, ns, "second", "the second site routes its hostname, not the first's previews", func(s *v1alpha1.StaticSite) error {
		msg := "hostname " + wildcard + " is held by StaticSite " + ns + "/first"
		if err := routeCondition(metav1.ConditionFalse, v1alpha1.ReasonHostnameConflict, msg)(s); err != nil {
			return err
		}
		return routes("second", "second."+ns+".example.com")(s)
	})

	testenv.Must(t, k8s.Delete(context.Background(), first))
	waitSite(t, ns, "second", "the second site routes its previews once the first is gone", func(s *v1alpha1.StaticSite) error {
		if err := routeCondition(metav1.ConditionTrue, v1alpha1.ReasonIngressApplied, wildcard)(s); err != nil {
			return err
		}
		return routes("second", "second."+ns+".example.com", wildcard)(s)
	})
}
