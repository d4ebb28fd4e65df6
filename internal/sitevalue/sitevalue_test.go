package sitevalue

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

func siteOf(server v1alpha1.ServerSpec, tls *v1alpha1.TLSSpec, httpsPort int32) *v1alpha1.StaticSite {
	return &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "web"},
		Spec: v1alpha1.StaticSiteSpec{Server: server, TLS: tls, Service: v1alpha1.ServiceSpec{HTTPSPort: httpsPort}}}
}

// Each field of the spec, alone, renders exactly this (the design doc's names and shapes), and its default renders
// nothing.
func TestRenderEachField(t *testing.T) {
	tls := func(t v1alpha1.TLSSpec) *v1alpha1.TLSSpec { t.SecretName = "s"; return &t }
	for _, c := range []struct {
		name      string
		server    v1alpha1.ServerSpec
		tls       *v1alpha1.TLSSpec
		httpsPort int32
		want      string
	}{
		{name: "defaults", want: `{"version":1}`},
		{name: "process settings are not in it", server: v1alpha1.ServerSpec{H2C: true, MaxRequestsPerConnection: ptr.To[int32](3),
			DrainDelay: &metav1.Duration{}, ExtraArgs: []string{"--workers=2"}, Image: "x"}, want: `{"version":1}`},
		{name: "cacheControl", server: v1alpha1.ServerSpec{CacheControl: []v1alpha1.CacheControlRule{
			{Glob: "/assets/**", Value: "public, max-age=31536000, immutable"}, {Glob: "*.html", Value: "no-cache"}}},
			want: `{"version":1,"cacheControl":[{"glob":"/assets/**","value":"public, max-age=31536000, immutable"},{"glob":"*.html","value":"no-cache"}]}`},
		{name: "defaultCacheControl", server: v1alpha1.ServerSpec{DefaultCacheControl: "public, max-age=60"},
			want: `{"version":1,"defaultCacheControl":"public, max-age=60"}`},
		{name: "defaultCacheControl no-cache is the default", server: v1alpha1.ServerSpec{DefaultCacheControl: "no-cache"}, want: `{"version":1}`},
		{name: "headers with and without glob", server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{
			{Glob: "/**/*.html", Name: "X-Frame-Options", Value: "DENY"}, {Name: "X-Site", Value: "a<b>&c"}}},
			want: `{"version":1,"headers":[{"glob":"/**/*.html","name":"X-Frame-Options","value":"DENY"},{"name":"X-Site","value":"a<b>&c"}]}`},
		{name: "securityHeaders true is the default", server: v1alpha1.ServerSpec{SecurityHeaders: ptr.To(true)}, want: `{"version":1}`},
		{name: "securityHeaders false", server: v1alpha1.ServerSpec{SecurityHeaders: ptr.To(false)}, want: `{"version":1,"securityHeaders":false}`},
		{name: "cors full", server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/fonts/**", AllowOrigins: []string{"*"},
			AllowMethods: []string{"GET"}, AllowHeaders: []string{"X-Token"}, MaxAge: ptr.To[int32](600)}}},
			want: `{"version":1,"cors":[{"glob":"/fonts/**","allowOrigins":["*"],"allowMethods":["GET"],"allowHeaders":["X-Token"],"maxAge":600}]}`},
		{name: "cors minimal, empty lists absent, maxAge 0 kept", server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "*.woff2",
			AllowOrigins: []string{"https://a.example", "https://b.example:8443"}, AllowMethods: []string{}, MaxAge: ptr.To[int32](0)}}},
			want: `{"version":1,"cors":[{"glob":"*.woff2","allowOrigins":["https://a.example","https://b.example:8443"],"maxAge":0}]}`},
		{name: "spaFallback", server: v1alpha1.ServerSpec{SPAFallback: true}, want: `{"version":1,"spaFallback":true}`},
		{name: "notFoundPage", server: v1alpha1.ServerSpec{NotFoundPage: "/404.html"}, want: `{"version":1,"notFoundPage":"/404.html"}`},
		{name: "redirects: 301 and force false are defaults", server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{
			{From: "/old/*", To: "/new/:splat", Status: 301}, {From: "/a", To: "/b"}, {From: "/app/*", To: "/index.html", Status: 200, Force: true},
			{From: "/x", To: "https://example.com/y", Status: 308}}},
			want: `{"version":1,"redirects":[{"from":"/old/*","to":"/new/:splat"},{"from":"/a","to":"/b"},{"from":"/app/*","to":"/index.html","status":200,"force":true},{"from":"/x","to":"https://example.com/y","status":308}]}`},
		{name: "cleanURLs", server: v1alpha1.ServerSpec{CleanURLs: true}, want: `{"version":1,"cleanURLs":true}`},
		{name: "skewProtection in whole seconds", server: v1alpha1.ServerSpec{SkewProtection: &v1alpha1.SkewProtection{Window: metav1.Duration{Duration: 90*time.Minute + 500*time.Millisecond}}},
			want: `{"version":1,"skewProtection":{"window":"5400s"}}`},
		{name: "errorPages: prefix / is the default", server: v1alpha1.ServerSpec{ErrorPages: []v1alpha1.ErrorPage{
			{Status: 404, Path: "/404.html", PathPrefix: "/"}, {Status: 404, Path: "/docs/404.html", PathPrefix: "/docs"}, {Status: 405, Path: "/405.html"}}},
			want: `{"version":1,"errorPages":[{"status":404,"path":"/404.html"},{"status":404,"path":"/docs/404.html","pathPrefix":"/docs"},{"status":405,"path":"/405.html"}]}`},
		{name: "tls without redirect or hsts", tls: tls(v1alpha1.TLSSpec{HTTP2: ptr.To(false)}), want: `{"version":1}`},
		{name: "httpsRedirect to 443", tls: tls(v1alpha1.TLSSpec{HTTPRedirect: true}), want: `{"version":1,"httpsRedirect":{}}`},
		{name: "httpsRedirect to 443 written out", tls: tls(v1alpha1.TLSSpec{HTTPRedirect: true}), httpsPort: 443, want: `{"version":1,"httpsRedirect":{}}`},
		{name: "httpsRedirect to the Service's https port", tls: tls(v1alpha1.TLSSpec{HTTPRedirect: true}), httpsPort: 8443,
			want: `{"version":1,"httpsRedirect":{"port":8443}}`},
		{name: "https port without redirect", tls: tls(v1alpha1.TLSSpec{}), httpsPort: 8443, want: `{"version":1}`},
		{name: "hsts", tls: tls(v1alpha1.TLSSpec{HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 31536000, IncludeSubDomains: true, Preload: true}}),
			want: `{"version":1,"hsts":"max-age=31536000; includeSubDomains; preload"}`},
		{name: "hsts max-age 0", tls: tls(v1alpha1.TLSSpec{HSTS: &v1alpha1.HSTSSpec{}}), want: `{"version":1,"hsts":"max-age=0"}`},
		{name: "limits without perClient limit nothing", server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{}}, want: `{"version":1}`},
		{name: "limits.perClient", server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{PerClient: &v1alpha1.PerClientLimit{
			Requests: 1, PeriodSeconds: 600, Burst: 3}}},
			want: `{"version":1,"limits":{"perClient":{"requests":1,"periodSeconds":600,"burst":3}}}`},
		{name: "limits.perClient: period 1 and a burst of requests are defaults", server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{
			PerClient: &v1alpha1.PerClientLimit{Requests: 50, PeriodSeconds: 1, Burst: 50}}},
			want: `{"version":1,"limits":{"perClient":{"requests":50}}}`},
		{name: "limits.perClientHandshakes", server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{
			PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{Handshakes: 2, PeriodSeconds: 60, Burst: 5}}},
			tls:  tls(v1alpha1.TLSSpec{}),
			want: `{"version":1,"limits":{"perClientHandshakes":{"handshakes":2,"periodSeconds":60,"burst":5}}}`},
		{name: "limits: both buckets, defaults left out", server: v1alpha1.ServerSpec{Limits: &v1alpha1.ClientLimits{
			PerClient:           &v1alpha1.PerClientLimit{Requests: 50, PeriodSeconds: 1, Burst: 50},
			PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{Handshakes: 5, PeriodSeconds: 1, Burst: 5}}},
			tls:  tls(v1alpha1.TLSSpec{}),
			want: `{"version":1,"limits":{"perClient":{"requests":50},"perClientHandshakes":{"handshakes":5}}}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := Render(siteOf(c.server, c.tls, c.httpsPort))
			if string(r.Bytes) != c.want {
				t.Fatalf("rendered\n%s\nwant\n%s", r.Bytes, c.want)
			}
			sum := sha256.Sum256([]byte(c.want))
			if want := "sha256:" + hex.EncodeToString(sum[:])[:16]; r.Revision != want {
				t.Fatalf("revision %s, want %s", r.Revision, want)
			}
		})
	}
}

// Every field at once: the design doc's order, whatever order the spec is written in, and the same bytes on every
// rendering.
func TestRenderEverythingInTheDocumentedOrder(t *testing.T) {
	s := siteOf(v1alpha1.ServerSpec{
		ErrorPages:          []v1alpha1.ErrorPage{{Status: 404, Path: "/404.html"}},
		CleanURLs:           true,
		Redirects:           []v1alpha1.Redirect{{From: "/old/*", To: "/new/:splat", Status: 302}},
		NotFoundPage:        "/404.html",
		SPAFallback:         true,
		CORS:                []v1alpha1.CORSRule{{Glob: "/fonts/**", AllowOrigins: []string{"*"}}},
		SecurityHeaders:     ptr.To(false),
		Headers:             []v1alpha1.Header{{Name: "X-A", Value: "1"}},
		CacheControl:        []v1alpha1.CacheControlRule{{Glob: "/assets/**", Value: "immutable"}},
		DefaultCacheControl: "no-store",
		Limits: &v1alpha1.ClientLimits{PerClient: &v1alpha1.PerClientLimit{Requests: 10, Burst: 20},
			PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{Handshakes: 3}},
		SkewProtection: &v1alpha1.SkewProtection{Window: metav1.Duration{Duration: time.Hour}},
	}, &v1alpha1.TLSSpec{SecretName: "s", HTTPRedirect: true, HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 60}}, 0)
	first := Render(s)
	order := []string{"version", "cacheControl", "defaultCacheControl", "headers", "securityHeaders", "cors", "spaFallback", "notFoundPage", "redirects",
		"cleanURLs", "errorPages", "httpsRedirect", "hsts", "limits", "skewProtection"}
	at := -1
	for _, k := range order {
		i := strings.Index(string(first.Bytes), `"`+k+`":`)
		if i <= at {
			t.Fatalf("%q at %d, not after the previous field (%d): %s", k, i, at, first.Bytes)
		}
		at = i
	}
	for range 100 {
		if again := Render(s.DeepCopy()); string(again.Bytes) != string(first.Bytes) || again.Revision != first.Revision {
			t.Fatalf("a second rendering differs:\n%s\n%s", first.Bytes, again.Bytes)
		}
	}
	var v map[string]any
	if err := json.Unmarshal(first.Bytes, &v); err != nil || len(v) != len(order) {
		t.Fatalf("not one JSON object with %d fields: %v %v", len(order), err, v)
	}
}

// A change of any one rule changes the revision (the operator's only signal that pods must catch up).
func TestRevisionFollowsTheBytes(t *testing.T) {
	a := Render(siteOf(v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "/b"}}}, nil, 0))
	b := Render(siteOf(v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "/c"}}}, nil, 0))
	if a.Revision == b.Revision || !strings.HasPrefix(a.Revision, RevisionPrefix) || len(a.Revision) != len(RevisionPrefix)+16 {
		t.Fatalf("revisions %s and %s", a.Revision, b.Revision)
	}
}

func TestSiteRuleFlagIn(t *testing.T) {
	for _, c := range []struct {
		args []string
		want int
	}{
		{nil, -1},
		{[]string{"--workers", "2", "--access-log"}, -1},
		{[]string{"--header-timeout=5s", "--default-cache-control", "x"}, 1},
		{[]string{"--hsts=max-age=1"}, 0},
		{[]string{"--access-log", "--site", "/x"}, 1},
		{[]string{"-header", "--headers"}, -1}, // not the flag: a short form and another name
	} {
		if got := SiteRuleFlagIn(c.args); got != c.want {
			t.Errorf("SiteRuleFlagIn(%q) = %d, want %d", c.args, got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	if got := ConfigMapName("docs"); got != "docs.site-value" {
		t.Fatalf("ConfigMapName = %s", got)
	}
	if File != "/etc/hyperstatic/site/site.json" {
		t.Fatalf("File = %s", File)
	}
}
