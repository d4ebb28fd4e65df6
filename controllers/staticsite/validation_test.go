package staticsite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// expectRefused creates a site with spec and expects the API server to refuse it as Invalid, naming want.
func expectRefused(t *testing.T, ns string, spec v1alpha1.StaticSiteSpec, want string) {
	t.Helper()
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: spec}
	err := k8s.Create(context.Background(), site)
	if err == nil {
		_ = k8s.Delete(context.Background(), site)
		t.Fatalf("accepted; want refusal mentioning %q", want)
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want an Invalid error mentioning %q", err, want)
	}
}

func TestInvalidSitesAreRefused(t *testing.T) {
	ns := namespace(t)
	img := v1alpha1.ContentSource{Image: "example/site:v1"}
	for _, tc := range []struct {
		name string
		spec v1alpha1.StaticSiteSpec
		want string
	}{
		{"no content", v1alpha1.StaticSiteSpec{}, "spec.content must set exactly one of image, configMaps, imageVolume, persistentVolumeClaim"},
		{"two sources", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "a", ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "b"}}}}, "spec.content must set exactly one"},
		{"zero cpu", v1alpha1.StaticSiteSpec{Content: img, CPU: ptr.To(resource.MustParse("0"))}, "spec.cpu must be greater than 0"},
		{"tiny memory", v1alpha1.StaticSiteSpec{Content: img, Memory: ptr.To(resource.MustParse("8Mi"))}, "spec.memory must be at least 16Mi"},
		{"negative replicas", v1alpha1.StaticSiteSpec{Content: img, Replicas: ptr.To[int32](-1)}, "spec.replicas"},
		{"port too high", v1alpha1.StaticSiteSpec{Content: img, Service: v1alpha1.ServiceSpec{Port: 70000}}, "spec.service.port"},
		{"admin port", v1alpha1.StaticSiteSpec{Content: img, Service: v1alpha1.ServiceSpec{Port: 9090}}, "spec.service.port must not be 9090"},
		{"service type", v1alpha1.StaticSiteSpec{Content: img, Service: v1alpha1.ServiceSpec{Type: "ExternalName"}}, "spec.service.type"},
		{"escaping prefix", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "a", PathPrefix: "x/../../etc"}}}}, "pathPrefix must be a relative path"},
		{"bad ConfigMap name", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "Not_A_Name"}}}}, "spec.content.configMaps[0].name"},
		{"relative 404 page", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{NotFoundPage: "404.html"}}, "spec.server.notFoundPage must be an absolute site path"},
		{"header injection", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Name: "X-A", Value: "a\r\nSet-Cookie: x"}}}}, "spec.server.headers[0].value"},
		{"control character in header", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Name: "X-A", Value: "a\x01b"}}}}, "spec.server.headers[0].value"},
		{"cache-control line break", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CacheControl: []v1alpha1.CacheControlRule{{Glob: "*.css", Value: "public\nX: y"}}}}, "spec.server.cacheControl[0].value"},
		{"cache-control glob with =", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CacheControl: []v1alpha1.CacheControlRule{{Glob: "a=b", Value: "public"}}}}, "spec.server.cacheControl[].glob must not contain '='"},
		{"blank cache-control glob", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CacheControl: []v1alpha1.CacheControlRule{{Glob: "  ", Value: "public"}}}}, "spec.server.cacheControl[].glob must not be blank"},
		{"negative connection age", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{MaxConnectionAge: &metav1.Duration{Duration: -5 * time.Second}}}, "spec.server.maxConnectionAge must not be negative"},
		{"bad header name", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Name: "Bad Header", Value: "v"}}}}, "spec.server.headers[0].name"},
		{"server-owned header", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Name: "X-A", Value: "v"}, {Name: "content-LENGTH", Value: "3"}}}}, "spec.server.headers[1].name"},
		{"server-owned header ETag", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Glob: "*.js", Name: "ETag", Value: "x"}}}}, "must not be a header the server sets itself"},
		{"header glob with ':'", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Glob: "/a:b/**", Name: "X-A", Value: "v"}}}}, "spec.server.headers[].glob must not contain '=' or ':'"},
		{"cors origin with a path", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/fonts/**", AllowOrigins: []string{"https://a.example/fonts"}}}}}, "spec.server.cors[].allowOrigins must hold origins like https://example.com[:port]"},
		{"cors origin without a scheme", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/fonts/**", AllowOrigins: []string{"a.example"}}}}}, "spec.server.cors[].allowOrigins must hold origins"},
		{"cors * with others", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/fonts/**", AllowOrigins: []string{"*", "https://a.example"}}}}}, `spec.server.cors[].allowOrigins: "*" must be the only entry`},
		{"cors without origins", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/fonts/**"}}}}, "spec.server.cors[0].allowOrigins"},
		{"cors glob with =", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "a=b", AllowOrigins: []string{"*"}}}}}, "spec.server.cors[].glob must not contain '='"},
		{"cors bad method", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/a", AllowOrigins: []string{"*"}, AllowMethods: []string{"GET,PUT"}}}}}, "spec.server.cors[0].allowMethods[0]"},
		{"cors max age too long", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/a", AllowOrigins: []string{"*"}, MaxAge: ptr.To[int32](86401)}}}}, "spec.server.cors[0].maxAge"},
		{"bad budget", v1alpha1.StaticSiteSpec{Content: img, Disruption: &v1alpha1.DisruptionSpec{MaxUnavailable: intstr.FromString("half")}}, "spec.disruption.maxUnavailable must be"},
		{"redirect status", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "/b", Status: 303}}}}, "spec.server.redirects[0].status: Unsupported value: 303"},
		{"relative redirect from", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "old", To: "/b"}}}}, "spec.server.redirects[0].from"},
		{"splat mid-path", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a/*/b", To: "/b"}}}}, "spec.server.redirects[0].from"},
		{"redirect from with ..", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a/../b", To: "/b"}}}}, "spec.server.redirects[].from must not hold '.' or '..' segments"},
		{"nine placeholders", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/:a/x/:b/:c/:d/:e/:f/:g/:h/:i", To: "/b"}}}}, "spec.server.redirects[].from must have at most 8 placeholders"},
		{"redirect to with a space", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "/b c"}}}}, "spec.server.redirects[0].to"},
		{"redirect to another host's path", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "//evil.example/"}}}}, "spec.server.redirects[0].to"},
		{"rewrite to a URL", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "https://example.com/", Status: 200}}}}, "spec.server.redirects[].to of a 200 rewrite must be a site path"},
		{"rewrite out of the site", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a/*", To: "/../etc/passwd", Status: 200}}}}, "spec.server.redirects[].to of a 200 rewrite must be a site path"},
		{"too many redirects", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: manyRedirects(v1alpha1.MaxRedirects + 1)}}, "spec.server.redirects: Too many"},
		{"error page status", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ErrorPages: []v1alpha1.ErrorPage{{Status: 500, Path: "/500.html"}}}}, "spec.server.errorPages[0].status: Unsupported value: 500"},
		{"relative error page", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ErrorPages: []v1alpha1.ErrorPage{{Status: 404, Path: "404.html"}}}}, "spec.server.errorPages[0].path"},
		{"error page prefix", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ErrorPages: []v1alpha1.ErrorPage{{Status: 404, Path: "/404.html", PathPrefix: "docs/"}}}}, "spec.server.errorPages[0].pathPrefix"},
		{"per-client limit without requests", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{PerClient: &v1alpha1.PerClientLimit{Burst: 5}}}}, "spec.server.limits.perClient.requests: Invalid value: 0"},
		{"per-client period past a day", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{PerClient: &v1alpha1.PerClientLimit{Requests: 1, PeriodSeconds: v1alpha1.MaxPerClientPeriodSeconds + 1}}}}, "spec.server.limits.perClient.periodSeconds"},
		{"per-client burst too large", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{PerClient: &v1alpha1.PerClientLimit{Requests: 1, Burst: v1alpha1.MaxPerClientRequests + 1}}}}, "spec.server.limits.perClient.burst"},
		{"handshake limit without TLS", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{Handshakes: 5}}}}, "spec.server.limits.perClientHandshakes needs spec.tls"},
		{"handshake limit without handshakes", v1alpha1.StaticSiteSpec{Content: img, TLS: &v1alpha1.TLSSpec{SecretName: "t"}, Server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{Burst: 5}}}}, "spec.server.limits.perClientHandshakes.handshakes: Invalid value: 0"},
		{"handshake period past a day", v1alpha1.StaticSiteSpec{Content: img, TLS: &v1alpha1.TLSSpec{SecretName: "t"}, Server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{Handshakes: 1, PeriodSeconds: v1alpha1.MaxPerClientPeriodSeconds + 1}}}}, "spec.server.limits.perClientHandshakes.periodSeconds"},
		{"handshake burst too large", v1alpha1.StaticSiteSpec{Content: img, TLS: &v1alpha1.TLSSpec{SecretName: "t"}, Server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{Handshakes: 1, Burst: v1alpha1.MaxPerClientRequests + 1}}}}, "spec.server.limits.perClientHandshakes.burst"},
		{"skew window past 7 days", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{SkewProtection: &v1alpha1.SkewProtection{Window: metav1.Duration{Duration: 169 * time.Hour}}}}, "spec.server.skewProtection.window must be between 1s and 168h (7 days)"},
		{"skew window of zero", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{SkewProtection: &v1alpha1.SkewProtection{}}}, "spec.server.skewProtection.window must be between 1s and 168h (7 days)"},
		{"budget of 0 blocks drains", v1alpha1.StaticSiteSpec{Content: img, Disruption: &v1alpha1.DisruptionSpec{MaxUnavailable: intstr.FromInt32(0)}}, "spec.disruption.maxUnavailable must be a positive integer"},
		{"budget of 0% blocks drains", v1alpha1.StaticSiteSpec{Content: img, Disruption: &v1alpha1.DisruptionSpec{MaxUnavailable: intstr.FromString("00%")}}, "spec.disruption.maxUnavailable must be a positive integer"},
		{"endless drain delay", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{DrainDelay: &metav1.Duration{Duration: 6 * time.Minute}}}, "spec.server.drainDelay must be between 0s and 5m"},
		{"negative drain delay", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{DrainDelay: &metav1.Duration{Duration: -time.Second}}}, "spec.server.drainDelay must be between 0s and 5m"},
		{"extraArgs moves the root", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--root", "/var/run/secrets/kubernetes.io/serviceaccount"}}}, "spec.server.extraArgs must not set --root"},
		{"extraArgs moves the root with =", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--access-log", "--root=/etc"}}}, "spec.server.extraArgs must not set --root"},
		{"extraArgs moves a listener", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--admin-listen=0.0.0.0:80"}}}, "spec.server.extraArgs must not set"},
		{"extraArgs reads another key", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--tls-key", "/etc/x"}}}, "spec.server.extraArgs must not set"},
		{"extraArgs moves the termination log", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--termination-log=/site/x"}}}, "spec.server.extraArgs must not set"},
		{"extraArgs moves the cache", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--compress-cache", "/site"}}}, "spec.server.extraArgs must not set"},
		// The server refuses site-rule flags beside --site: such extraArgs would stop every new pod.
		{"extraArgs sets a redirect", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--access-log", "--redirect", "/a /b 301"}}}, "spec.server.extraArgs must not set a site-rule flag"},
		{"extraArgs sets hsts", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--hsts=max-age=1"}}}, "spec.server.extraArgs must not set a site-rule flag"},
		{"extraArgs names another site value", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--site", "/tmp/x.json"}}}, "spec.server.extraArgs must not set a site-rule flag"},
		{"extraArgs sets the default cache-control", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--default-cache-control=no-store"}}}, "spec.server.extraArgs must not set a site-rule flag"},
		{"empty image volume", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ImageVolume: &v1alpha1.ImageVolumeContent{}}}, "spec.content.imageVolume.reference"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectRefused(t, ns, tc.spec, tc.want) })
	}
}

func manyRedirects(n int) []v1alpha1.Redirect {
	rs := make([]v1alpha1.Redirect, n)
	for i := range rs {
		rs[i] = v1alpha1.Redirect{From: fmt.Sprintf("/old/%d", i), To: fmt.Sprintf("/new/%d", i)}
	}
	return rs
}

// A handshake limit at the ends of its ranges is accepted on a site with spec.tls (the CEL rule needs it).
func TestHandshakeLimitIsAcceptedWithTLS(t *testing.T) {
	ns := namespace(t)
	site := createSite(t, ns, "handshakes", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:1"},
		TLS: &v1alpha1.TLSSpec{SecretName: "handshakes-tls"},
		Server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{
			Handshakes: v1alpha1.MaxPerClientRequests, PeriodSeconds: v1alpha1.MaxPerClientPeriodSeconds, Burst: 1}}}})
	got := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(site), got))
	if h := got.Spec.Server.Limits.PerClientHandshakes; h == nil || h.Handshakes != v1alpha1.MaxPerClientRequests || h.Burst != 1 {
		t.Errorf("perClientHandshakes stored as %+v", h)
	}
}

// Site rules the server accepts are accepted by the API server too, with status defaulted to 301.
func TestSiteRulesAreAccepted(t *testing.T) {
	ns := namespace(t)
	site := createSite(t, ns, "rules", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:1"}, Server: v1alpha1.ServerSpec{
		Redirects: append(manyRedirects(v1alpha1.MaxRedirects-5),
			v1alpha1.Redirect{From: "/blog/*", To: "/news/:splat", Status: 302},
			v1alpha1.Redirect{From: "/:year/:slug/", To: "https://example.com:8443/p/:slug?y=:year", Status: 308, Force: true},
			v1alpha1.Redirect{From: "/app/*", To: "/app/index.html", Status: 200},
			v1alpha1.Redirect{From: "/", To: "/home", Status: 307},
			v1alpha1.Redirect{From: "/café/a:b", To: "/x"},
		),
		CleanURLs:  true,
		ErrorPages: []v1alpha1.ErrorPage{{Status: 404, Path: "/docs/404.html", PathPrefix: "/docs/"}, {Status: 405, Path: "/405.html"}},
		Limits: &v1alpha1.ClientLimits{PerClient: &v1alpha1.PerClientLimit{Requests: v1alpha1.MaxPerClientRequests,
			PeriodSeconds: v1alpha1.MaxPerClientPeriodSeconds, Burst: v1alpha1.MaxPerClientRequests}},
		SkewProtection: &v1alpha1.SkewProtection{Window: metav1.Duration{Duration: 168 * time.Hour}},
	}})
	got := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(site), got))
	if s := got.Spec.Server.Redirects[0].Status; s != 301 {
		t.Errorf("redirects[0].status defaulted to %d, want 301", s)
	}
}

// A name the API server accepts for a custom resource (a DNS subdomain) but not for the site's Service is refused
// up front, naming the field, instead of leaving a site whose Service can never be created.
func TestSiteNamesThatCannotNameAServiceAreRefused(t *testing.T) {
	ns := namespace(t)
	img := v1alpha1.ContentSource{Image: "example/site:1"}
	for _, name := range []string{"1site", "my.site", strings.Repeat("a", 64)} {
		site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.StaticSiteSpec{Content: img}}
		err := k8s.Create(context.Background(), site)
		if err == nil {
			_ = k8s.Delete(context.Background(), site)
			t.Errorf("name %q accepted; want a refusal naming metadata.name", name)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.name must be a DNS-1035 label") {
			t.Errorf("name %q: error %q, want an Invalid error naming metadata.name", name, err)
		}
	}
	ok := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site-1"}, Spec: v1alpha1.StaticSiteSpec{Content: img}}
	testenv.Must(t, k8s.Create(context.Background(), ok))
}
