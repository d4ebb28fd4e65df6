package desired

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/ssosite"
)

func ssoTestSite(mutate func(*v1alpha1.StaticSite)) *v1alpha1.StaticSite {
	s := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "web"}}
	s.Spec.Content.ConfigMaps = []v1alpha1.ConfigMapContent{{Name: "pages"}}
	s.Spec.Hostnames = []v1alpha1.Hostname{"docs.example.com", "www.example.com"}
	s.Spec.Server.Access = &v1alpha1.AccessSpec{
		SSO: &v1alpha1.SSOSpec{IssuerURL: "https://dex.example.com", ClientID: "docs", SecretName: "docs-sso"},
		Rules: []v1alpha1.AccessRule{
			{PathPrefix: "/team/", SignIn: &v1alpha1.SignIn{Groups: []string{"ops", "eng"}}},
			{PathPrefix: "/eng/", SignIn: &v1alpha1.SignIn{Groups: []string{"eng"}}},
		},
	}
	if mutate != nil {
		mutate(s)
	}
	return s
}

// Through a route the agent is a path of the site in plain HTTP behind the gateway; on the Service it is the sso
// port of the first hostname, serving TLS with the site's certificate when the site has one. The agent's flags,
// the login URL in the value and the Service port say the same.
func TestSSOWiring(t *testing.T) {
	routed := ssoTestSite(func(s *v1alpha1.StaticSite) {
		s.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "docs-tls"}
		s.Spec.Route = &v1alpha1.RouteSpec{ParentRefs: []v1alpha1.ParentReference{{Name: "gw"}}}
	})
	direct := ssoTestSite(func(s *v1alpha1.StaticSite) {
		s.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "docs-tls"}
		s.Spec.Service.HTTPSPort = 8443
	})
	plain := ssoTestSite(nil)
	for _, c := range []struct {
		name                   string
		site                   *v1alpha1.StaticSite
		login, siteURL, scheme string
		tls                    bool
	}{
		{"routed", routed, "/.hyperstatic/sso/login", "https://docs.example.com", "http", false},
		{"service with TLS", direct, "https://docs.example.com:8444/.hyperstatic/sso/login", "https://docs.example.com:8443", "https", true},
		{"plain service", plain, "http://docs.example.com:8444/.hyperstatic/sso/login", "http://docs.example.com", "http", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := ssosite.LoginURL(c.site); got != c.login {
				t.Errorf("login URL %q, want %q", got, c.login)
			}
			args := SSOArgs(c.site)
			callback := c.siteURL + "/.hyperstatic/sso/callback" // through the route, on the site's origin
			if !strings.HasPrefix(c.login, "/") {
				callback = strings.TrimSuffix(c.login, "login") + "callback" // on the agent's port
			}
			want := []string{"--site-url=" + c.siteURL, "--callback-url=" + callback, "--keep-groups=eng,ops", "--listen=:8444"}
			for _, w := range want {
				if !slices.Contains(args, w) {
					t.Errorf("agent args %q lack %q", args, w)
				}
			}
			if hasTLS := slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--tls-cert-file=") }); hasTLS != c.tls {
				t.Errorf("agent TLS %v, want %v: %q", hasTLS, c.tls, args)
			}
			p := ssoServicePort(c.site)
			if p == nil || *p.Port != v1alpha1.SSOPort || *p.AppProtocol != c.scheme {
				t.Errorf("Service port %+v, want %d %s", p, v1alpha1.SSOPort, c.scheme)
			}
			d := Deployment(c.site, "server:1", Content{Source: v1alpha1.ContentSourceConfigMaps, AgentImage: "agent:1"}, resource.MustParse("64Mi"))
			var agent bool
			for _, ct := range d.Spec.Template.Spec.Containers {
				if *ct.Name == ssosite.ContainerName {
					agent = *ct.Image == "agent:1" && *ct.SecurityContext.ReadOnlyRootFilesystem && *ct.SecurityContext.RunAsNonRoot &&
						ct.Resources.Requests.Cpu().Equal(*ct.Resources.Limits.Cpu())
				}
			}
			if !agent {
				t.Errorf("no restricted, Guaranteed agent container of image agent:1: %+v", d.Spec.Template.Spec.Containers)
			}
			var sources []string
			for _, v := range d.Spec.Template.Spec.Volumes {
				if *v.Name == SiteValueVolumeName {
					for _, src := range v.Projected.Sources {
						if src.Secret != nil {
							sources = append(sources, *src.Secret.Name+":"+*src.Secret.Items[0].Key+">"+*src.Secret.Items[0].Path)
						}
					}
				}
			}
			if !slices.Equal(sources, []string{"docs-sso:session-keys>session-keys"}) {
				t.Errorf("site value volume's Secrets %q: want the session keys beside site.json", sources)
			}
		})
	}
	// The pod sets no fsGroup: the Secret's files stay root's, so the non-root agent reads them only if all may.
	if m := *ssoVolume(plain).Secret.DefaultMode; m&0o004 == 0 {
		t.Errorf("the agent's Secret volume has mode %o: the agent, not root and without an fsGroup, cannot read it", m)
	}
	// The route sends the prefix to the agent; the catch-all stays first.
	hr := HTTPRoute(routed, routed.Spec.Hostnames)
	if len(hr.Spec.Rules) != 2 || *hr.Spec.Rules[1].Matches[0].Path.Value != ssosite.Prefix || *hr.Spec.Rules[1].BackendRefs[0].Port != v1alpha1.SSOPort {
		t.Errorf("HTTPRoute rules %+v", hr.Spec.Rules)
	}
	// No signIn rule: no agent, no port, a plain ConfigMap volume.
	off := ssoTestSite(func(s *v1alpha1.StaticSite) { s.Spec.Server.Access.Rules = nil })
	if ssoContainer(off, "agent:1") != nil || ssoServicePort(off) != nil || siteValueVolume(off).ConfigMap == nil {
		t.Error("a site with sso but no signIn rule still gets the agent")
	}
}
