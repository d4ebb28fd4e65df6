// Package sitevalue renders a StaticSite's site value: the one JSON document that holds everything deciding what a
// request gets (cache-control, headers, security headers, CORS, SPA fallback, the 404 page, redirects, clean URLs,
// error pages, the https redirect, HSTS, the per-client limits on requests and TLS handshakes, access rules and skew
// protection), apart from the process settings the server's command line keeps. The contract is docs/design/site-value.md; in short:
//
//   - The file is one JSON object, version 1, with the fields in the order of Value below. Only fields that differ
//     from their defaults are written, inside list items too (a redirect's status 301, force false, an error
//     page's prefix "/", a header without glob), so the same spec always renders the same bytes: compact, no
//     trailing newline, no HTML escaping (the server's own canonical rendering of the same value from its flags
//     is serde_json's, which escapes nothing but what JSON needs).
//   - Its revision is "sha256:" and the first 16 hex digits of the SHA-256 of those bytes: the server exports the
//     revision it serves as hyperstatic_site_value_info{revision}, and the operator compares it with Render's.
//   - Render is pure: the StaticSite in, the bytes and the revision out. The field values are the CRD's, which
//     admits only what the server's parsers accept (internal/contract runs the real server's --check --site on
//     renderings of every field).
//
// The operator delivers the value in a ConfigMap the site owns (ConfigMapName, key Key), mounted read-only at
// MountDir; the server starts with --site File and reloads it when the kubelet swaps the mount. The pod template
// never carries the revision, so a rule change rolls no pod: the operator sets AnnotationRevision on the running
// pods instead, which makes the kubelet refresh the mount at once (controllers/staticsite/step_sitevalue.go).
package sitevalue

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"time"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Version is the site value format this package writes.
const Version = 1

// DefaultCacheControl is the server's Cache-Control for files no rule matches: the value's default, never written.
const DefaultCacheControl = "no-cache"

const (
	// Key is the ConfigMap key, and so the file name under MountDir.
	Key = "site.json"
	// MountDir is where the server container mounts the ConfigMap (read-only).
	MountDir = "/etc/hyperstatic/site"
	// File is the server's --site argument.
	File = MountDir + "/" + Key
	// AnnotationRevision on a server pod is the revision the operator last told the pod's kubelet about: a change
	// of the annotations makes the kubelet sync the pod, and so refresh the mounted ConfigMap, at once instead of
	// within its sync period (about a minute).
	AnnotationRevision = "hyperstatic.dev/site-value-revision"
	// RevisionPrefix starts every revision.
	RevisionPrefix = "sha256:"
	// LoadErrorPrefix starts the server's /load-error message when it refused a site value (a bad file, or a page
	// the content lacks), as opposed to content it could not load (images/server/src/control.rs and
	// site_value/mod.rs; internal/contract pins it). The operator reports the former in SiteValueApplied, not as
	// a content failure.
	LoadErrorPrefix = "site value"
)

// ConfigMapName is the name of the ConfigMap holding a site's value: <site>.site-value (a dot: no StaticSite,
// whose name is a DNS-1035 label, can have a child of the same name by accident).
func ConfigMapName(site string) string { return site + ".site-value" }

// SiteRuleFlags are the server flags that build a site value on the command line. The server refuses them
// beside --site, so spec.server.extraArgs may not name them (the CRD's rule, api/v1alpha1; a test holds the two
// lists together).
var SiteRuleFlags = []string{"site", "cache-control", "default-cache-control", "header", "security-headers", "cors", "spa-fallback",
	"not-found-page", "redirect", "clean-urls", "error-page", "https-redirect", "https-redirect-port", "hsts"}

// SiteRuleFlagIn returns the index of the first argument of args that sets a site-rule flag ("--redirect" or
// "--redirect=..."), or -1. The CRD refuses such extraArgs; a site stored before that rule existed may still hold
// them, and the server would refuse to start on them beside --site.
func SiteRuleFlagIn(args []string) int {
	for i, a := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		if strings.HasPrefix(a, "--") && slices.Contains(SiteRuleFlags, name) {
			return i
		}
	}
	return -1
}

// Value is the site value's JSON shape, fields in the file's order. Every field is omitted at its default.
type Value struct {
	Version             int             `json:"version"`
	CacheControl        []CacheControl  `json:"cacheControl,omitempty"`
	DefaultCacheControl string          `json:"defaultCacheControl,omitempty"`
	Headers             []Header        `json:"headers,omitempty"`
	SecurityHeaders     *bool           `json:"securityHeaders,omitempty"` // written only when false
	CORS                []CORS          `json:"cors,omitempty"`
	SPAFallback         bool            `json:"spaFallback,omitempty"`
	NotFoundPage        string          `json:"notFoundPage,omitempty"`
	Redirects           []Redirect      `json:"redirects,omitempty"`
	CleanURLs           bool            `json:"cleanURLs,omitempty"`
	ErrorPages          []ErrorPage     `json:"errorPages,omitempty"`
	HTTPSRedirect       *HTTPSRedirect  `json:"httpsRedirect,omitempty"`
	HSTS                string          `json:"hsts,omitempty"`
	Limits              *Limits         `json:"limits,omitempty"`
	Access              *Access         `json:"access,omitempty"`
	SkewProtection      *SkewProtection `json:"skewProtection,omitempty"`
}

// SkewProtection is the window of skew protection as whole seconds ("3600s"), a duration the server reads.
type SkewProtection struct {
	Window string `json:"window"`
}

// CacheControl is one cacheControl rule.
type CacheControl struct {
	Glob  string `json:"glob"`
	Value string `json:"value"`
}

// Header is one extra response header; no glob means every file.
type Header struct {
	Glob  string `json:"glob,omitempty"`
	Name  string `json:"name"`
	Value string `json:"value"`
}

// CORS is one cors rule.
type CORS struct {
	Glob         string   `json:"glob"`
	AllowOrigins []string `json:"allowOrigins"`
	AllowMethods []string `json:"allowMethods,omitempty"`
	AllowHeaders []string `json:"allowHeaders,omitempty"`
	MaxAge       *int32   `json:"maxAge,omitempty"`
}

// Redirect is one redirect or rewrite; status 301 and force false are the defaults.
type Redirect struct {
	From   string `json:"from"`
	To     string `json:"to"`
	Status int32  `json:"status,omitempty"`
	Force  bool   `json:"force,omitempty"`
}

// ErrorPage is one error page; the prefix "/" is the default.
type ErrorPage struct {
	Status     int32  `json:"status"`
	Path       string `json:"path"`
	PathPrefix string `json:"pathPrefix,omitempty"`
}

// HTTPSRedirect turns the plain listener into a 308 to https; port 443 is the default.
type HTTPSRedirect struct {
	Port int32 `json:"port,omitempty"`
}

// Limits bound what one client may ask of the site.
type Limits struct {
	PerClient           *PerClient           `json:"perClient,omitempty"`
	PerClientHandshakes *PerClientHandshakes `json:"perClientHandshakes,omitempty"`
}

// PerClient is a per-client-address token bucket; periodSeconds 1 and a burst of requests are the defaults.
type PerClient struct {
	Requests      int32 `json:"requests"`
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
	Burst         int32 `json:"burst,omitempty"`
}

// PerClientHandshakes is a per-client-address token bucket on TLS handshakes, with PerClient's defaults.
type PerClientHandshakes struct {
	Handshakes    int32 `json:"handshakes"`
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`
	Burst         int32 `json:"burst,omitempty"`
}

// Rendered is a site value as the operator delivers it.
type Rendered struct {
	// Bytes are the file's canonical bytes.
	Bytes []byte
	// Revision names them (see Revision).
	Revision string
}

// Render returns the site value of a StaticSite: its canonical bytes and revision.
func Render(site *v1alpha1.StaticSite) Rendered {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(Of(site)); err != nil {
		// Strings, ints and bools only: encoding cannot fail.
		panic("sitevalue: " + err.Error())
	}
	b := bytes.TrimSuffix(buf.Bytes(), []byte("\n"))
	return Rendered{Bytes: b, Revision: Revision(b)}
}

// Revision is the name of a site value's bytes: "sha256:" and the first 16 hex digits of their SHA-256.
func Revision(b []byte) string {
	sum := sha256.Sum256(b)
	return RevisionPrefix + hex.EncodeToString(sum[:8])
}

// Of is a StaticSite's site value: spec.server's site rules and spec.tls's httpRedirect and hsts, each only when it
// is not the default.
func Of(site *v1alpha1.StaticSite) Value {
	s := site.Spec.Server
	v := Value{Version: Version, SPAFallback: s.SPAFallback, NotFoundPage: s.NotFoundPage, CleanURLs: s.CleanURLs}
	if s.DefaultCacheControl != DefaultCacheControl {
		v.DefaultCacheControl = s.DefaultCacheControl
	}
	for _, r := range s.CacheControl {
		v.CacheControl = append(v.CacheControl, CacheControl(r))
	}
	for _, h := range s.Headers {
		v.Headers = append(v.Headers, Header(h))
	}
	// The server sends its security headers unless told otherwise: only "off" is written.
	if s.SecurityHeaders != nil && !*s.SecurityHeaders {
		v.SecurityHeaders = s.SecurityHeaders
	}
	for _, c := range s.CORS {
		v.CORS = append(v.CORS, CORS{Glob: c.Glob, AllowOrigins: c.AllowOrigins, AllowMethods: nonEmpty(c.AllowMethods),
			AllowHeaders: nonEmpty(c.AllowHeaders), MaxAge: c.MaxAge})
	}
	for _, r := range s.Redirects {
		out := Redirect{From: r.From, To: r.To, Status: r.Status, Force: r.Force}
		if out.Status == 301 {
			out.Status = 0 // the default: the CRD defaults an unset status to 301, so both spell it the same
		}
		v.Redirects = append(v.Redirects, out)
	}
	for _, p := range s.ErrorPages {
		out := ErrorPage(p)
		if out.PathPrefix == "/" {
			out.PathPrefix = ""
		}
		v.ErrorPages = append(v.ErrorPages, out)
	}
	v.Limits = limits(s.Limits)
	v.Access = access(site)
	if p := s.SkewProtection; p != nil {
		v.SkewProtection = &SkewProtection{Window: strconv.FormatInt(int64(p.Window.Duration/time.Second), 10) + "s"}
	}
	if t := site.Spec.TLS; t != nil {
		if t.HTTPRedirect {
			// The redirect names the port clients reach the Service's https port on, not the pod's 8443.
			r := &HTTPSRedirect{}
			if p := site.Spec.Service.HTTPSPort; p != 0 && p != v1alpha1.DefaultHTTPSServicePort {
				r.Port = p
			}
			v.HTTPSRedirect = r
		}
		if t.HSTS != nil {
			v.HSTS = HSTS(t.HSTS)
		}
	}
	return v
}

// limits is spec.server.limits as the value writes it: nil when it limits nothing, the defaults left out
// (periodSeconds 1, a burst of the count), as the server's canonical rendering leaves them out.
func limits(l *v1alpha1.ClientLimits) *Limits {
	if l == nil || (l.PerClient == nil && l.PerClientHandshakes == nil) {
		return nil
	}
	out := &Limits{}
	if p := l.PerClient; p != nil {
		period, burst := bucketDefaults(p.Requests, p.PeriodSeconds, p.Burst)
		out.PerClient = &PerClient{Requests: p.Requests, PeriodSeconds: period, Burst: burst}
	}
	if h := l.PerClientHandshakes; h != nil {
		period, burst := bucketDefaults(h.Handshakes, h.PeriodSeconds, h.Burst)
		out.PerClientHandshakes = &PerClientHandshakes{Handshakes: h.Handshakes, PeriodSeconds: period, Burst: burst}
	}
	return out
}

// bucketDefaults are a token bucket's periodSeconds and burst as the value writes them: 0 (left out) when they are
// the defaults, 1 and the count.
func bucketDefaults(count, period, burst int32) (int32, int32) {
	if period == 1 {
		period = 0
	}
	if burst == count {
		burst = 0
	}
	return period, burst
}

// HSTS is the Strict-Transport-Security header value of an HSTS policy.
func HSTS(h *v1alpha1.HSTSSpec) string {
	v := "max-age=" + strconv.FormatInt(h.MaxAgeSeconds, 10)
	if h.IncludeSubDomains {
		v += "; includeSubDomains"
	}
	if h.Preload {
		v += "; preload"
	}
	return v
}

// nonEmpty is nil for an empty list, so [] and an absent list render the same (absent).
func nonEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
