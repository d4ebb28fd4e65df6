package staticsite

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Defaults the CRD schema also applies. The builders apply them again so they stay correct for objects that never
// went through the API server (unit tests, old objects stored before a default existed).
const (
	defaultReplicas   = 1
	defaultMemory     = "256Mi"
	defaultDrainDelay = 5 * time.Second
	defaultPort       = 80
	// shutdownTimeout is the server's --shutdown-timeout: after the drain delay, the longest it waits for open
	// connections to finish their responses.
	shutdownTimeout = 10 * time.Second
	// terminationMargin is added to the drain delay for terminationGracePeriodSeconds: the shutdown timeout plus
	// time to exit, so the kubelet never kills a server that is still finishing responses.
	terminationMargin = shutdownTimeout + 5*time.Second
	// serverUID is the non-root user and group the server runs as (the conventional "nonroot" id).
	serverUID = 65532
	// containerName is the server container's name.
	containerName = "server"
	// siteVolumeName is the name of the volume holding the site, when the content is not baked into the image.
	siteVolumeName = "site"

	// AnnotationContentHash on the pod template changes when content that needs new pods changes (image sources).
	AnnotationContentHash = "hyperstatic.dev/content-hash"
	// FieldOwner is the server-side apply field manager of every object the controller writes.
	FieldOwner = "hyperstatic-operator"

	labelName     = "app.kubernetes.io/name"
	labelInstance = "app.kubernetes.io/instance"
	appName       = "hyperstatic-server"
)

func replicasOf(site *v1alpha1.StaticSite) int32 {
	if site.Spec.Replicas == nil {
		return defaultReplicas
	}
	return *site.Spec.Replicas
}

func cpuOf(site *v1alpha1.StaticSite) resource.Quantity { return site.CPUOrDefault() }

// wholeCPUs reports whether a CPU quantity is a whole number of CPUs, the condition for exclusive CPUs under the
// kubelet's static CPU manager policy.
func wholeCPUs(q resource.Quantity) bool {
	return q.MilliValue() > 0 && q.MilliValue()%1000 == 0
}

func drainDelayOf(site *v1alpha1.StaticSite) time.Duration {
	if d := site.Spec.Server.DrainDelay; d != nil && d.Duration >= 0 {
		return d.Duration
	}
	return defaultDrainDelay
}

func servicePortOf(site *v1alpha1.StaticSite) int32 {
	if site.Spec.Service.Port == 0 {
		return defaultPort
	}
	return site.Spec.Service.Port
}

// selectorLabels select a site's pods. They never change for a site (a Deployment's selector is immutable).
func selectorLabels(site *v1alpha1.StaticSite) map[string]string {
	return map[string]string{
		v1alpha1.LabelSite: site.Name,
		labelName:          appName,
	}
}

// objectLabels are on every object the controller creates for a site, pods included.
func objectLabels(site *v1alpha1.StaticSite) map[string]string {
	l := selectorLabels(site)
	l[labelInstance] = site.Name
	l[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByValue
	return l
}

// Selector is the label selector of a site's pods, in the string form status.selector (the scale subresource) uses.
func Selector(site *v1alpha1.StaticSite) string {
	return labels.SelectorFromSet(selectorLabels(site)).String()
}

// URL is the site's in-cluster address; the port is omitted when it is 80.
func URL(site *v1alpha1.StaticSite) string {
	host := fmt.Sprintf("http://%s.%s.svc.cluster.local", site.Name, site.Namespace)
	if p := servicePortOf(site); p != 80 {
		return host + ":" + strconv.Itoa(int(p))
	}
	return host
}

// HTTPSURL is the site's in-cluster HTTPS address with spec.tls ("" without); the port is omitted when it is 443.
func HTTPSURL(site *v1alpha1.StaticSite) string {
	if site.Spec.TLS == nil {
		return ""
	}
	host := fmt.Sprintf("https://%s.%s.svc.cluster.local", site.Name, site.Namespace)
	if p := httpsServicePortOf(site); p != v1alpha1.DefaultHTTPSServicePort {
		return host + ":" + strconv.Itoa(int(p))
	}
	return host
}

// formatDuration writes a duration the way the server's flags read it: whole seconds as "5s", else "1500ms".
func formatDuration(d time.Duration) string {
	if d%time.Second == 0 {
		return strconv.FormatInt(int64(d/time.Second), 10) + "s"
	}
	return strconv.FormatInt(d.Milliseconds(), 10) + "ms"
}

// ServerArgs are the server's command-line arguments for a site (flags of images/server: --root, --listen,
// --admin-listen, --drain-delay, --shutdown-timeout, --max-requests-per-connection, --max-connection-age,
// --cache-control GLOB=VALUE and --header [GLOB=]NAME:VALUE (both repeatable), --security-headers=false (when
// securityHeaders is false), --cors GLOB=ORIGINS;methods=..;headers=..;max-age=.. (repeatable, see corsArg),
// --spa-fallback, --not-found-page PATH, and the site rules of siteRuleArgs: --redirect 'FROM TO STATUS[!]',
// --clean-urls, --error-page 'STATUS PATH PREFIX', and the TLS flags of tls.go).
// The compression cache is not an argument but an environment variable: see cachevolume.go.
func ServerArgs(site *v1alpha1.StaticSite) []string {
	s := site.Spec.Server
	args := []string{
		"--root", v1alpha1.SiteRoot,
		"--listen", listenAddr(v1alpha1.ServerPort),
		"--admin-listen", listenAddr(v1alpha1.AdminPort),
		"--drain-delay", formatDuration(drainDelayOf(site)),
		"--shutdown-timeout", formatDuration(shutdownTimeout),
	}
	if s.MaxRequestsPerConnection != nil {
		args = append(args, "--max-requests-per-connection", strconv.Itoa(int(*s.MaxRequestsPerConnection)))
	}
	if s.MaxConnectionAge != nil {
		args = append(args, "--max-connection-age", formatDuration(s.MaxConnectionAge.Duration))
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
