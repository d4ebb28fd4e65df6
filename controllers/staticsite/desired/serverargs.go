// The operator's half of the command-line contract with the server: the arguments a site's server container
// starts with, its process settings. The server's half is images/server/src/config/flags.rs (its flags) and
// config.rs (how they become a Config); internal/contract/serverargs_test.go runs the real server on every case of
// ServerArgs, so a flag one side adds and the other does not know fails there. The site's rules are not flags but
// the site value (internal/sitevalue); docs/developing.md follows one of its fields through both halves.

package desired

import (
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// ServerArgs are the server's command-line arguments for a site: the process settings only (flags of
// images/server: --root (/site, or /site/current for Git content; --sites /site instead of --root and --site for a
// site with previews, with --max-entries and --max-depth when
// spec.content.git sets them), --listen, --admin-listen, --drain-delay, --shutdown-timeout,
// --max-requests-per-connection, --max-connection-age, --h2c=true (when h2c is set), --proxy-protocol=true (when
// access.proxyProtocol is set), the TLS listener of tlsArgs, below, --http3 and --alt-svc-port with spec.http3
// (http3.go)) and --site, the site value's file. Everything that decides what a request gets (cache-control,
// headers, CORS, redirects, error pages, the https redirect, HSTS...) is in the site value (internal/sitevalue),
// delivered in a ConfigMap the pods mount: it changes under running pods, never the pod template
// (step_sitevalue.go).
// The compression cache is not an argument but an environment variable: see cachevolume.go.
func ServerArgs(site *v1alpha1.StaticSite) []string {
	s := site.Spec.Server
	root := v1alpha1.SiteRoot
	if site.Spec.Content.Git != nil {
		root = v1alpha1.GitServedRoot // the link the puller flips to each new tree (gitcontent)
	}
	args := []string{"--root", root}
	if site.Spec.Previews != nil {
		// The pool server's many-sites mode over the directory the puller lays out: production and each preview
		// chosen by Host, every one with the site value (gitcontent/previews.go). --root and --site are the index's;
		// the htpasswd and keys files the value names are where the puller copies them.
		args = []string{"--sites", v1alpha1.SiteRoot, "--sites-access-dir", v1alpha1.SitesAccessDir}
	}
	args = append(args,
		"--listen", listenAddr(v1alpha1.ServerPort),
		"--admin-listen", listenAddr(v1alpha1.AdminPort),
		"--drain-delay", sitechild.FormatDuration(drainDelayOf(site)),
		"--shutdown-timeout", sitechild.FormatDuration(shutdownTimeout),
	)
	if g := site.Spec.Content.Git; g != nil {
		// The server walks the tree the fetcher wrote under the same caps (flags of the same names), or a tree
		// that spec.content.git.maxEntries/maxDepth admits would be refused at load by the server's defaults.
		args = append(args, gitcontent.TreeLimitArgs(g)...)
	}
	if s.MaxRequestsPerConnection != nil {
		args = append(args, "--max-requests-per-connection", strconv.Itoa(int(*s.MaxRequestsPerConnection)))
	}
	if s.MaxConnectionAge != nil {
		args = append(args, "--max-connection-age", sitechild.FormatDuration(s.MaxConnectionAge.Duration))
	}
	// Only the value that differs from the server's default is an argument.
	if s.H2C {
		args = append(args, "--h2c=true")
	}
	if s.Access != nil && s.Access.ProxyProtocol {
		args = append(args, "--proxy-protocol=true")
	}
	args = append(args, tlsArgs(site)...)
	args = append(args, http3Args(site)...) // http3.go
	if site.Spec.Previews == nil {
		args = append(args, "--site", sitevalue.File)
	}
	return append(args, s.ExtraArgs...)
}

// tlsArgs are the server's TLS listener flags for spec.tls (--tls-listen, --tls-cert, --tls-key, and
// --http2=false when http2 is false). The https redirect and HSTS are the site value's.
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
	return args
}

// listenAddr is the server's address for a port on every address family: "[::]" is a dual-stack socket (the
// server falls back to 0.0.0.0 where the kernel has no IPv6), so IPv4-only, IPv6-only and dual-stack pods all
// answer on their pod IP. net.JoinHostPort adds the brackets an IPv6 host needs.
func listenAddr(port int) string {
	return net.JoinHostPort("::", strconv.Itoa(port))
}
