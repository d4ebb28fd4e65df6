// The operator's half of the command-line contract with the server: the arguments a site's server container
// starts with. The server's half is images/server/src/config/flags.rs (its flags) and config.rs (how they become a
// Config); internal/contract/serverargs_test.go runs the real server on every case of ServerArgs, so a flag one side
// adds and the other does not know fails there. docs/developing.md follows one flag through both halves.

package staticsite

import (
	"net"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// formatDuration writes a duration the way the server's flags read it: whole seconds as "5s", else "1500ms".
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// ServerArgs are the server's command-line arguments for a site (flags of images/server: --root (/site, or
// /site/current for Git content, with --max-entries and --max-depth when spec.content.git sets them), --listen,
// --admin-listen, --drain-delay, --shutdown-timeout, --max-requests-per-connection, --max-connection-age,
// --h2c=true (when h2c is set),
// --cache-control GLOB=VALUE and --header [GLOB=]NAME:VALUE (both repeatable), --security-headers=false (when
// securityHeaders is false), --cors GLOB=ORIGINS;methods=..;headers=..;max-age=.. (repeatable, see corsArg),
// --spa-fallback, --not-found-page PATH, and the site rules of siteRuleArgs: --redirect 'FROM TO STATUS[!]',
// --clean-urls, --error-page 'STATUS PATH PREFIX', and the TLS flags of tlsArgs, below).
// The compression cache is not an argument but an environment variable: see cachevolume.go.
func ServerArgs(site *v1alpha1.StaticSite) []string {
	s := site.Spec.Server
	root := v1alpha1.SiteRoot
	if site.Spec.Content.Git != nil {
		root = v1alpha1.GitServedRoot // the link the puller flips to each new tree (git.go)
	}
	args := []string{
		"--root", root,
		"--listen", listenAddr(v1alpha1.ServerPort),
		"--admin-listen", listenAddr(v1alpha1.AdminPort),
		"--drain-delay", formatDuration(drainDelayOf(site)),
		"--shutdown-timeout", formatDuration(shutdownTimeout),
	}
	if g := site.Spec.Content.Git; g != nil {
		// The server walks the tree the fetcher wrote under the same caps (flags of the same names), or a tree
		// that spec.content.git.maxEntries/maxDepth admits would be refused at load by the server's defaults.
		args = append(args, gitTreeLimitArgs(g)...)
	}
	if s.MaxRequestsPerConnection != nil {
		args = append(args, "--max-requests-per-connection", strconv.Itoa(int(*s.MaxRequestsPerConnection)))
	}
	if s.MaxConnectionAge != nil {
		args = append(args, "--max-connection-age", formatDuration(s.MaxConnectionAge.Duration))
	}
	// Like --security-headers below: only the value that differs from the server's default is an argument.
	if s.H2C {
		args = append(args, "--h2c=true")
	}
	for _, r := range s.CacheControl {
		args = append(args, "--cache-control", r.Glob+"="+r.Value)
	}
	for _, h := range s.Headers {
		rule := h.Name + ":" + h.Value
		if h.Glob != "" {
			rule = h.Glob + "=" + rule
		}
		args = append(args, "--header", rule)
	}
	// The server sends its security headers unless told otherwise, so only "off" is an argument: a site that does
	// not set the field gets no new argument (no pod template change on operator upgrade, and older pinned
	// server images, which reject unknown flags, keep starting).
	if s.SecurityHeaders != nil && !*s.SecurityHeaders {
		args = append(args, "--security-headers=false")
	}
	for _, c := range s.CORS {
		args = append(args, "--cors", corsArg(c))
	}
	if s.SPAFallback {
		args = append(args, "--spa-fallback")
	}
	if s.NotFoundPage != "" {
		args = append(args, "--not-found-page", s.NotFoundPage)
	}
	args = append(args, siteRuleArgs(s)...)
	args = append(args, tlsArgs(site)...)
	return append(args, s.ExtraArgs...)
}

// corsArg is one --cors value of the server: GLOB=ORIGIN,ORIGIN[;methods=M,M][;headers=H,H][;max-age=SECONDS].
// The CRD keeps '=' out of globs and ',' and ';' out of origins, methods and header names, so the pieces cannot
// run into each other.
func corsArg(c v1alpha1.CORSRule) string {
	var b strings.Builder
	b.WriteString(c.Glob)
	b.WriteString("=")
	b.WriteString(strings.Join(c.AllowOrigins, ","))
	if len(c.AllowMethods) > 0 {
		b.WriteString(";methods=" + strings.Join(c.AllowMethods, ","))
	}
	if len(c.AllowHeaders) > 0 {
		b.WriteString(";headers=" + strings.Join(c.AllowHeaders, ","))
	}
	if c.MaxAge != nil {
		b.WriteString(";max-age=" + strconv.Itoa(int(*c.MaxAge)))
	}
	return b.String()
}

// siteRuleArgs are the server flags of spec.server's site rules: one --redirect 'FROM TO STATUS[!]' per rule
// (the server's `_redirects` line syntax; the CRD admits no whitespace in from or to), --clean-urls, and one
// --error-page 'STATUS PATH PREFIX' per page.
func siteRuleArgs(s v1alpha1.ServerSpec) []string {
	var args []string
	for _, r := range s.Redirects {
		status := r.Status
		if status == 0 {
			status = 301
		}
		rule := r.From + " " + r.To + " " + strconv.Itoa(int(status))
		if r.Force {
			rule += "!"
		}
		args = append(args, "--redirect", rule)
	}
	if s.CleanURLs {
		args = append(args, "--clean-urls")
	}
	for _, p := range s.ErrorPages {
		prefix := p.PathPrefix
		if prefix == "" {
			prefix = "/"
		}
		args = append(args, "--error-page", strconv.Itoa(int(p.Status))+" "+p.Path+" "+prefix)
	}
	return args
}

// tlsArgs are the server flags for spec.tls (the server's TLS contract: --tls-listen, --tls-cert, --tls-key,
// --http2=false (when http2 is false), --https-redirect, --https-redirect-port, --hsts).
func tlsArgs(site *v1alpha1.StaticSite) []string {
	t := site.Spec.TLS
	if t == nil {
		return nil
	}
	args := []string{
		"--tls-listen", listenAddr(v1alpha1.HTTPSPort),
		"--tls-cert", v1alpha1.TLSMountPath + "/" + corev1.TLSCertKey,
		"--tls-key", v1alpha1.TLSMountPath + "/" + corev1.TLSPrivateKeyKey,
	}
	// The server offers h2 unless told otherwise: a site that leaves http2 unset gets no new argument.
	if t.HTTP2 != nil && !*t.HTTP2 {
		args = append(args, "--http2=false")
	}
	if t.HTTPRedirect {
		args = append(args, "--https-redirect")
		// The redirect names the port clients reach the Service's https port on, not the pod's 8443.
		if p := httpsServicePortOf(site); p != v1alpha1.DefaultHTTPSServicePort {
			args = append(args, "--https-redirect-port", strconv.Itoa(int(p)))
		}
	}
	if t.HSTS != nil {
		args = append(args, "--hsts", HSTSValue(t.HSTS))
	}
	return args
}

// listenAddr is the server's address for a port on every address family: "[::]" is a dual-stack socket (the
// server falls back to 0.0.0.0 where the kernel has no IPv6), so IPv4-only, IPv6-only and dual-stack pods all
// answer on their pod IP. net.JoinHostPort adds the brackets an IPv6 host needs.
func listenAddr(port int) string {
	return net.JoinHostPort("::", strconv.Itoa(port))
}
