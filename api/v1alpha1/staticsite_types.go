package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// StaticSite condition types. Polarity is documented in docs/staticsite.md: Ready, ContentAvailable, Pinned,
// ContentInMemory, SiteValueApplied (sitevalue_types.go), TLSReady, CertificateReady, RouteApplied and PodMonitorApplied are "normal-true";
// Reconciling and Stalled are "abnormal-true" (kstatus), present only while they hold. TLSReady, CertificateReady,
// RouteApplied and PodMonitorApplied are present only while spec.tls, spec.tls.issuerRef, spec.route and
// spec.monitoring are set.
const (
	// ConditionReady is True when every replica serves the current spec.
	ConditionReady = "Ready"
	// ConditionReconciling is True while the operator or the Deployment is still moving towards the spec.
	ConditionReconciling = "Reconciling"
	// ConditionStalled is True when progress needs someone to act (missing content, rejected object, rollout deadline).
	ConditionStalled = "Stalled"
	// ConditionContentAvailable is True when the content source exists and can be mounted or run.
	ConditionContentAvailable = "ContentAvailable"
	// ConditionPinned is True when every ready pod reports workers pinned to exclusive CPUs.
	ConditionPinned = "Pinned"
	// ConditionContentInMemory is True when a ready pod serves every file of the site from memory; False when part
	// of the site is served from disk (correct, only slower: it never makes Ready False); Unknown while no pod
	// has reported it.
	ConditionContentInMemory = "ContentInMemory"
	// ConditionTLSReady is True when spec.tls.secretName holds a usable certificate and key. False never makes Ready
	// False: running servers keep the certificate they loaded and keep serving.
	ConditionTLSReady = "TLSReady"
	// ConditionRouteApplied is True when the Ingress or HTTPRoute of spec.route exists as specified. It says
	// nothing of whether an ingress controller or Gateway has picked it up (see the object's own status).
	ConditionRouteApplied = "RouteApplied"
	// ConditionPodMonitorApplied is True when the PodMonitor of spec.monitoring exists as specified.
	ConditionPodMonitorApplied = "PodMonitorApplied"
	// ConditionCertificateReady is True when cert-manager has issued the certificate spec.tls.issuerRef asks for
	// (certificate_types.go); present only while spec.tls.issuerRef is set. Like TLSReady, False never makes Ready
	// False.
	ConditionCertificateReady = "CertificateReady"
)

// StaticSiteAbnormalTrueConditions are the StaticSite conditions that are True when something needs attention
// (kstatus' abnormal-true, flux's negative polarity); every other StaticSite condition, the autoscaler's AbleToScale
// and ScalingActive included, is normal-true. Data, not prose: the controller derives event types from it
// (internal/reconcile.Polarity) and the status tests check every derived condition against it.
var StaticSiteAbnormalTrueConditions = []string{ConditionReconciling, ConditionStalled}

// Content source names, as shown in status.contentSource and the Content printer column.
const (
	ContentSourceImage                 = "image"
	ContentSourceConfigMaps            = "configMaps"
	ContentSourceImageVolume           = "imageVolume"
	ContentSourcePersistentVolumeClaim = "persistentVolumeClaim"
	ContentSourceGit                   = "git"
)

// StaticSiteSpec is what a user asks for: a site's content and how to serve it.
// +kubebuilder:validation:XValidation:rule="!has(self.route) || (has(self.hostnames) && size(self.hostnames) > 0)",message="spec.route needs spec.hostnames: the route answers for those names"
// +kubebuilder:validation:XValidation:rule="!has(self.server) || !has(self.server.limits) || !has(self.server.limits.perClientHandshakes) || has(self.tls)",message="spec.server.limits.perClientHandshakes needs spec.tls: the site's server ends no TLS without it"
// +kubebuilder:validation:XValidation:rule="!has(self.tls) || !has(self.tls.issuerRef) || (has(self.hostnames) && size(self.hostnames) > 0)",message="spec.tls.issuerRef needs spec.hostnames: the certificate is issued for those names"
// +kubebuilder:validation:XValidation:rule="!has(self.http3) || has(self.tls)",message="spec.http3 needs spec.tls: HTTP/3 runs over QUIC, which is always TLS 1.3 with the site's certificate"
// +kubebuilder:validation:XValidation:rule="!has(self.route) || !has(self.tls) || !has(self.tls.httpRedirect) || !self.tls.httpRedirect",message="spec.tls.httpRedirect cannot be used with spec.route: the route sends plain HTTP to the site, which would redirect in a loop; let the Ingress controller or Gateway redirect"
// +kubebuilder:validation:XValidation:rule="!has(self.previews) || has(self.content.git)",message="spec.previews needs spec.content.git: previews follow the repository's pull requests and branches"
// +kubebuilder:validation:XValidation:rule="!has(self.previews) || !has(self.placement) || !has(self.placement.mode) || self.placement.mode == 'Dedicated'",message="spec.previews needs spec.placement.mode Dedicated: previews are served by the site's own pods"
// +kubebuilder:validation:XValidation:rule="!has(self.previews) || !has(self.hostnames) || self.hostnames.all(h, !h.startsWith('*'))",message="spec.previews cannot be used with a wildcard in spec.hostnames: with previews the pods choose production or a preview by the exact Host"
// +kubebuilder:validation:XValidation:rule="!has(self.server) || !has(self.server.access) || !has(self.server.access.sso) || (has(self.hostnames) && size(self.hostnames) > 0 && !self.hostnames[0].startsWith('*'))",message="spec.server.access.sso needs spec.hostnames, the first one not a wildcard: the login's callback and its cookie belong to that name"
// +kubebuilder:validation:XValidation:rule="!has(self.previews) || !has(self.server) || !has(self.server.access) || !has(self.server.access.sso)",message="spec.previews cannot be used with spec.server.access.sso: a session cookie belongs to the site's first hostname, and a preview's host has no login of its own"
// +kubebuilder:validation:XValidation:rule="!has(self.previews) || !has(self.server) || !has(self.server.limits) || !has(self.server.limits.perClientHandshakes)",message="spec.previews cannot be used with spec.server.limits.perClientHandshakes: the pods' many-sites mode shares one TLS listener whose handshakes come before the site is known"
type StaticSiteSpec struct {
	// content is where the site's files come from. Exactly one source must be set.
	// +required
	Content ContentSource `json:"content"`

	// previews makes a Git site follow its pull requests and branches besides production, each served under its
	// own hostname <name>--<site>.<domain> (docs/design/deploys.md). Not served by the pods yet: see PreviewsSpec.
	// +optional
	Previews *PreviewsSpec `json:"previews,omitempty"`

	// placement is where the site runs: its own pods (Dedicated, the default) or a shared StaticSitePool (Pool),
	// where it costs no pod of its own. docs/staticsite.md, "Pools", lists what a pool site cannot have.
	// +optional
	Placement *PlacementSpec `json:"placement,omitempty"`

	// replicas is the number of server pods. The scale subresource (kubectl scale, an HPA, KEDA) and the
	// operator's own autoscaler (spec.autoscaling) write this field.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// cpu is the CPU request and limit of every container of a server pod (Guaranteed QoS). A whole number gets
	// exclusive CPUs on nodes with the static CPU manager policy; a fraction stays in the shared pool.
	// +kubebuilder:default="1"
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.cpu must be greater than 0"
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// memory is the memory request and limit of every container of a server pod. When unset it is sized from
	// the content when the operator can know its size (configMaps), else 256Mi; status.memory shows the value used.
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).compareTo(quantity('16Mi')) >= 0",message="spec.memory must be at least 16Mi"
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`

	// server tunes the hyperstatic server.
	// +kubebuilder:default={}
	// +optional
	Server ServerSpec `json:"server,omitempty"`

	// service configures the Service in front of the pods.
	// +kubebuilder:default={}
	// +optional
	Service ServiceSpec `json:"service,omitempty"`

	// podTemplate holds the scheduling overrides users of Deployments expect.
	// +optional
	PodTemplate PodTemplateOverrides `json:"podTemplate,omitempty"`

	// disruption configures the PodDisruptionBudget. Unset: maxUnavailable 1 when replicas > 1, no budget otherwise.
	// +optional
	Disruption *DisruptionSpec `json:"disruption,omitempty"`

	// autoscaling turns on the operator's requests-per-second autoscaler, which writes spec.replicas.
	// +optional
	Autoscaling *AutoscalingSpec `json:"autoscaling,omitempty"`

	// capacity tunes the measurement of what one pod serves (status.capacity). Measurements also run, with the
	// defaults, when spec.autoscaling.targetUtilization or spec.rollout.performanceGate needs them.
	// +optional
	Capacity *CapacitySpec `json:"capacity,omitempty"`

	// rollout configures how a new pod template reaches the pods: spec.rollout.performanceGate measures it on a
	// canary first.
	// +optional
	Rollout *RolloutSpec `json:"rollout,omitempty"`

	// tls makes the server terminate TLS on its https port (8443) with a kubernetes.io/tls Secret's certificate,
	// published on the Service as spec.service.httpsPort.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// http3 serves HTTP/3 on the https port's UDP twin, advertised with Alt-Svc (http3_types.go). Needs spec.tls.
	// +optional
	HTTP3 *HTTP3Spec `json:"http3,omitempty"`

	// hostnames the site answers to publicly; with spec.route they make an Ingress or HTTPRoute, and
	// status.publicURLs.
	// +kubebuilder:validation:MaxItems=16
	// +listType=set
	// +optional
	Hostnames []Hostname `json:"hostnames,omitempty"`

	// route creates an Ingress or a Gateway API HTTPRoute for spec.hostnames to the Service's http port.
	// Removing it deletes the object.
	// +optional
	Route *RouteSpec `json:"route,omitempty"`

	// monitoring creates a Prometheus Operator PodMonitor for the server pods' /metrics.
	// +optional
	Monitoring *MonitoringSpec `json:"monitoring,omitempty"`

	// networkPolicy creates a NetworkPolicy that opens the serving ports and keeps the admin port to the operator
	// and the monitoring namespaces.
	// +optional
	NetworkPolicy *NetworkPolicySpec `json:"networkPolicy,omitempty"`
}

// ContentSource names where a site's files come from. Exactly one field is set.
// +kubebuilder:validation:XValidation:rule="(has(self.image) ? 1 : 0) + (has(self.configMaps) ? 1 : 0) + (has(self.imageVolume) ? 1 : 0) + (has(self.persistentVolumeClaim) ? 1 : 0) + (has(self.git) ? 1 : 0) == 1",message="spec.content must set exactly one of image, configMaps, imageVolume, persistentVolumeClaim, git"
type ContentSource struct {
	// image is a baked image built FROM the server image with the site in /site; the pod runs that image.
	// A change rolls the pods.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// configMaps are projected into /site, each under an optional path prefix; text and binaryData keys both work.
	// Changed values are picked up live by the server, with no restart.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ConfigMaps []ConfigMapContent `json:"configMaps,omitempty"`

	// imageVolume mounts an OCI image or artifact read-only at /site (the "image" volume source; needs a cluster
	// that supports it). A change rolls the pods.
	// +optional
	ImageVolume *ImageVolumeContent `json:"imageVolume,omitempty"`

	// persistentVolumeClaim mounts an existing claim read-only at /site. A claim whose volume one node mounts at a
	// time (ReadWriteOnce, ReadWriteOncePod) allows replicas: 1 only; use ReadOnlyMany or ReadWriteMany to scale.
	// +optional
	PersistentVolumeClaim *PersistentVolumeClaimContent `json:"persistentVolumeClaim,omitempty"`

	// git follows a Git repository's branch, tag or commit: each new commit is fetched once for the site, checked,
	// and swapped in whole on every pod without a restart (docs/staticsite.md, "Content from Git").
	// +optional
	Git *GitContent `json:"git,omitempty"`
}

// ConfigMapContent projects one ConfigMap into the site.
type ConfigMapContent struct {
	// name of a ConfigMap in the StaticSite's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`

	// pathPrefix is the directory, relative to the site root, the ConfigMap's keys appear under (e.g. "assets/css").
	// Adding or removing a key of a prefixed ConfigMap rolls the pods (the projection lists keys); values reload live.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(s, s == '..')",message="spec.content.configMaps[].pathPrefix must be a relative path without '..'"
	// +optional
	PathPrefix string `json:"pathPrefix,omitempty"`
}

// ImageVolumeContent is an OCI image or artifact mounted as the site.
type ImageVolumeContent struct {
	// reference is the image reference, e.g. "registry.example/site:v2" or one with a digest.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=512
	// +required
	Reference string `json:"reference"`
	// pullPolicy for the image volume.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +optional
	PullPolicy corev1.PullPolicy `json:"pullPolicy,omitempty"`
}

// PersistentVolumeClaimContent is an existing claim holding the site.
type PersistentVolumeClaimContent struct {
	// claimName of a PersistentVolumeClaim in the StaticSite's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	ClaimName string `json:"claimName"`
	// subPath inside the volume that holds the site.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('/') && !self.split('/').exists(s, s == '..')",message="spec.content.persistentVolumeClaim.subPath must be a relative path without '..'"
	// +optional
	SubPath string `json:"subPath,omitempty"`
}

// ServerSpec tunes the hyperstatic server. The site rules (cacheControl, headers, securityHeaders, cors, spaFallback,
// notFoundPage, redirects, cleanURLs, errorPages, limits, access, skewProtection) become the site value, which running servers reload; the other
// fields are server flags, and changing them rolls the pods.
type ServerSpec struct {
	// image overrides the server image (default: the operator's --server-image). Ignored for content.image,
	// whose image is the server.
	// +kubebuilder:validation:MaxLength=512
	// +optional
	Image string `json:"image,omitempty"`

	// imagePullPolicy of the server container.
	// +kubebuilder:validation:Enum=Always;Never;IfNotPresent
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// cacheControl rules: the first rule whose glob matches a request path sets its Cache-Control header.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	CacheControl []CacheControlRule `json:"cacheControl,omitempty"`

	// defaultCacheControl is the Cache-Control header of files no cacheControl rule matches. Default: the server's
	// ("no-cache": revalidate every time). It replaces --default-cache-control in extraArgs, which the site value
	// no longer allows.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]*$`
	// +optional
	DefaultCacheControl string `json:"defaultCacheControl,omitempty"`

	// headers are added to every file response, or to those whose path matches the header's glob. They win over
	// the site's own _headers file and over the default security headers of the same name.
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Headers []Header `json:"headers,omitempty"`

	// securityHeaders sends the default security headers on every file response: X-Content-Type-Options: nosniff,
	// Referrer-Policy: strict-origin-when-cross-origin and a Permissions-Policy turning camera, microphone,
	// geolocation, payment and usb off. No Content-Security-Policy (set one in headers). Default: true.
	// +optional
	SecurityHeaders *bool `json:"securityHeaders,omitempty"`

	// cors rules: the first rule whose glob matches a file decides which origins may read it (preflights and
	// Access-Control-Allow-Origin).
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	CORS []CORSRule `json:"cors,omitempty"`

	// spaFallback serves /index.html for missing paths that look like page navigations (no file extension, or
	// Accept preferring text/html), for single-page applications; a missing asset such as /app.js stays 404.
	// +optional
	SPAFallback bool `json:"spaFallback,omitempty"`

	// notFoundPage is the site path served with status 404 when no file matches, e.g. "/404.html".
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.startsWith('/') && !self.split('/').exists(s, s == '..')",message="spec.server.notFoundPage must be an absolute site path without '..'"
	// +optional
	NotFoundPage string `json:"notFoundPage,omitempty"`

	// redirects are redirect and rewrite rules, applied before the site's own `_redirects` file; the first
	// matching rule wins (siterules_types.go).
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	// +optional
	Redirects []Redirect `json:"redirects,omitempty"`

	// cleanURLs serves /about from about.html; /about.html and /about/ redirect (301) to /about.
	// +optional
	CleanURLs bool `json:"cleanURLs,omitempty"`

	// errorPages are site pages served with an error status, per path prefix (longest wins); notFoundPage
	// remains the 404 page where none matches.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ErrorPages []ErrorPage `json:"errorPages,omitempty"`

	// limits bound what one client address may ask of the site: per-client token buckets answered with 429 and
	// Retry-After (limits_types.go, docs/security.md). Part of the site value: a change rolls no pod. Default: none.
	// +optional
	Limits *ClientLimits `json:"limits,omitempty"`

	// access restricts paths to client addresses and to users with a password, and names the trusted proxies whose
	// X-Forwarded-For says the client (access_types.go, docs/security.md). Part of the site value. Default: none.
	// +optional
	Access *AccessSpec `json:"access,omitempty"`

	// skewProtection keeps a deploy's files answering for a window after the next deploy replaced it (a Git site):
	// a request the new deploy has no file for is answered from the previous deploys that have it, newest first,
	// marked X-Hyperstatic-Deploy and Cache-Control: private, so a page loaded before the deploy still gets its old
	// hashed assets. Never a page navigation or an HTML path: a visitor always lands on the current deploy.
	// Part of the site value: a change rolls no pod (deploys_types.go, docs/design/deploys.md). Default: off.
	// +optional
	SkewProtection *SkewProtection `json:"skewProtection,omitempty"`

	// maxRequestsPerConnection closes a keep-alive connection after this many requests, so load spreads to new
	// replicas. Default: the server's (10000).
	// +kubebuilder:validation:Minimum=1
	// +optional
	MaxRequestsPerConnection *int32 `json:"maxRequestsPerConnection,omitempty"`

	// maxConnectionAge closes a keep-alive connection after this long. Default: the server's (60s).
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-')",message="spec.server.maxConnectionAge must not be negative"
	// +optional
	MaxConnectionAge *metav1.Duration `json:"maxConnectionAge,omitempty"`

	// h2c makes the plain http port also accept HTTP/2 with prior knowledge (cleartext HTTP/2, "h2c": a connection
	// that opens with the HTTP/2 client preface), beside HTTP/1.1; never through `Upgrade: h2c`. For a gateway or
	// ingress controller in front of the site: the Service's http port then says `appProtocol: kubernetes.io/h2c`
	// (Gateway API implementations speak h2c to such a backend), and with spec.route.ingressClassName the Service
	// carries Traefik's `traefik.ingress.kubernetes.io/service.serversscheme: h2c`. Browsers never use h2c.
	// Default false.
	// +optional
	H2C bool `json:"h2c,omitempty"`

	// drainDelay is how long a terminating pod keeps serving after failing readiness. The pod's
	// terminationGracePeriodSeconds is this plus a margin. At most 5m: a node drain waits this long per pod.
	// +kubebuilder:default="5s"
	// +kubebuilder:validation:XValidation:rule="!self.startsWith('-') && duration(self) <= duration('5m')",message="spec.server.drainDelay must be between 0s and 5m: a node drain waits this long for every pod"
	// +optional
	DrainDelay *metav1.Duration `json:"drainDelay,omitempty"`

	// extraArgs are appended to the server's arguments; a flag given twice takes its last value, so they override
	// the operator's. Never one that moves what the operator wires up for the pod (refused here, whatever the
	// tenancy policy): --root, --listen, --admin-listen, --tls-listen, --tls-cert, --tls-key, --termination-log,
	// --compress-cache; nor a site-rule flag (--site, --cache-control, --default-cache-control, --header,
	// --security-headers, --cors, --spa-fallback, --not-found-page, --redirect, --clean-urls, --error-page,
	// --https-redirect, --https-redirect-port, --hsts): the site's rules are its site value (the fields above), and
	// the server refuses site-rule flags beside --site. The operator's tenancy policy (docs/security.md) may narrow
	// them further.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.all(a, !a.matches('^--(root|listen|admin-listen|tls-listen|tls-cert|tls-key|termination-log|compress-cache)(=.*)?$'))",message="spec.server.extraArgs must not set --root, --listen, --admin-listen, --tls-listen, --tls-cert, --tls-key, --termination-log or --compress-cache: the operator wires these for the pod"
	// +kubebuilder:validation:XValidation:rule="self.all(a, !a.matches('^--(site|cache-control|default-cache-control|header|security-headers|cors|spa-fallback|not-found-page|redirect|clean-urls|error-page|https-redirect|https-redirect-port|hsts)(=.*)?$'))",message="spec.server.extraArgs must not set a site-rule flag (--site, --cache-control, --default-cache-control, --header, --security-headers, --cors, --spa-fallback, --not-found-page, --redirect, --clean-urls, --error-page, --https-redirect, --https-redirect-port, --hsts): the site's rules are its site value, set them in spec.server and spec.tls"
	// +listType=atomic
	// +optional
	ExtraArgs []string `json:"extraArgs,omitempty"`
}

// CacheControlRule sets Cache-Control for request paths matching a glob.
type CacheControlRule struct {
	// glob over the request path, e.g. "*.css" or "/assets/**".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.contains('=')",message="spec.server.cacheControl[].glob must not contain '='"
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="spec.server.cacheControl[].glob must not be blank"
	// +required
	Glob string `json:"glob"`
	// value of the Cache-Control header, e.g. "public, max-age=31536000, immutable".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[^\x00-\x1f\x7f]*$`
	// +required
	Value string `json:"value"`
}

// Header is an extra response header.
type Header struct {
	// glob limits the header to request paths matching it, e.g. "/fonts/**" or "*.html" (default: every path).
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.contains('=') && !self.contains(':')",message="spec.server.headers[].glob must not contain '=' or ':'"
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="spec.server.headers[].glob must not be blank"
	// +optional
	Glob string `json:"glob,omitempty"`

	// name of the header (an HTTP token). Not one the server sets itself to frame, negotiate or validate a
	// response (the server refuses them too: images/server/src/headers/site_file.rs).
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern="^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"
	// +kubebuilder:validation:XValidation:rule="!(self.lowerAscii() in ['content-length', 'transfer-encoding', 'connection', 'keep-alive', 'upgrade', 'trailer', 'te', 'date', 'content-encoding', 'content-range', 'etag', 'last-modified', 'accept-ranges'])",message="spec.server.headers[].name must not be a header the server sets itself: Content-Length, Transfer-Encoding, Connection, Keep-Alive, Upgrade, Trailer, TE, Date, Content-Encoding, Content-Range, ETag, Last-Modified, Accept-Ranges"
	// +required
	Name string `json:"name"`
	// value of the header (no control characters except tab).
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^[^\x00-\x08\x0a-\x1f\x7f]*$`
	// +required
	Value string `json:"value"`
}

// ServiceSpec configures the Service named like the StaticSite.
// +kubebuilder:validation:XValidation:rule="!has(self.port) || self.port != 9090",message="spec.service.port must not be 9090, the admin port"
// +kubebuilder:validation:XValidation:rule="!has(self.httpsPort) || self.httpsPort != 9090",message="spec.service.httpsPort must not be 9090, the admin port"
// +kubebuilder:validation:XValidation:rule="!has(self.httpsPort) || self.httpsPort != (has(self.port) ? self.port : 80)",message="spec.service.httpsPort must differ from spec.service.port"
type ServiceSpec struct {
	// type of the Service.
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +kubebuilder:default=ClusterIP
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`
	// port the Service exposes the site on over plain HTTP (the pods' http port). With spec.tls it stays: it serves
	// plain HTTP, or the redirect to https with spec.tls.httpRedirect.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +kubebuilder:default=80
	// +optional
	Port int32 `json:"port,omitempty"`
	// httpsPort the Service exposes the pods' https port on, when spec.tls is set. Default 443.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	HTTPSPort int32 `json:"httpsPort,omitempty"`
	// annotations on the Service (e.g. for a cloud load balancer). Keys under hyperstatic.dev/ are refused.
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('hyperstatic.dev/') && !k.matches('^[^/]*[.]hyperstatic[.]dev/'))",message="spec.service.annotations keys under hyperstatic.dev/ (or a subdomain of it) are the operator's own: an annotation must not set them"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// ipFamilyPolicy of the Service. Default PreferDualStack: both families on a dual-stack cluster, the only one
	// on a single-stack cluster. SingleStack gives it the cluster's primary family only.
	// +kubebuilder:validation:Enum=SingleStack;PreferDualStack;RequireDualStack
	// +optional
	IPFamilyPolicy *corev1.IPFamilyPolicy `json:"ipFamilyPolicy,omitempty"`
}

// PodTemplateOverrides are the parts of the pod template a user may set.
type PodTemplateOverrides struct {
	// labels added to the pods (the operator's own labels win on conflict). Keys under hyperstatic.dev/ are refused:
	// the operator selects and keeps apart its pods by them.
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('hyperstatic.dev/') && !k.matches('^[^/]*[.]hyperstatic[.]dev/'))",message="spec.podTemplate.labels keys under hyperstatic.dev/ (or a subdomain of it) are the operator's own: a label must not set them"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// annotations added to the pods. Keys under hyperstatic.dev/ are refused (the operator's own).
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('hyperstatic.dev/') && !k.matches('^[^/]*[.]hyperstatic[.]dev/'))",message="spec.podTemplate.annotations keys under hyperstatic.dev/ (or a subdomain of it) are the operator's own: an annotation must not set them"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// nodeSelector of the pods.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// tolerations of the pods.
	// +listType=atomic
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// affinity of the pods. Without a podAntiAffinity here (and without topologySpreadConstraints) the operator adds
	// its zone spread as the podAntiAffinity.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// topologySpreadConstraints replace the default spread when set: across nodes (maxSkew 1, ScheduleAnyway) and
	// across zones (a preferred podAntiAffinity on topology.kubernetes.io/zone, dropped when this is set).
	// +listType=atomic
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`
	// priorityClassName of the pods.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// imagePullSecrets, serviceAccountName and automountServiceAccountToken of the pods. A change rolls them.
	PodIdentity `json:",inline"`
}

// DisruptionSpec configures the PodDisruptionBudget.
type DisruptionSpec struct {
	// maxUnavailable pods during voluntary disruptions: a number or a percentage ("25%").
	// Never 0 (nor 0%): a budget that allows no disruption blocks every node drain forever.
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? self >= 1 : self.matches('^0*[1-9][0-9]*%$')",message="spec.disruption.maxUnavailable must be a positive integer or a positive percentage: 0 would block node drains forever"
	// +required
	MaxUnavailable intstr.IntOrString `json:"maxUnavailable"`
}

// StaticSiteStatus is rebuilt from the world on every reconcile. The autoscaler owns status.autoscaling and the
// AbleToScale / ScalingActive conditions; the site controller never touches them.
type StaticSiteStatus struct {
	// observedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// conditions: Ready, Reconciling, Stalled, ContentAvailable, Pinned, ContentInMemory, SiteValueApplied, TLSReady,
	// CertificateReady, RouteApplied, PodMonitorApplied (and the autoscaler's own).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// replicas is the number of server pods (the Deployment's status.replicas).
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// readyReplicas is the number of ready server pods.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// updatedReplicas is the number of pods running the current pod template.
	// +optional
	UpdatedReplicas int32 `json:"updatedReplicas,omitempty"`
	// selector is the pods' label selector, for the scale subresource.
	// +optional
	Selector string `json:"selector,omitempty"`

	// url is the site's in-cluster address.
	// +optional
	URL string `json:"url,omitempty"`
	// httpsURL is the site's in-cluster HTTPS address, when spec.tls is set.
	// +optional
	HTTPSURL string `json:"httpsURL,omitempty"`
	// protocols the site offers, as ALPN protocol IDs: h3 on the https port's UDP twin (spec.http3), http/1.1
	// always, h2 on the https port (spec.tls, unless spec.tls.http2 is false), h2c on the plain http port
	// (spec.server.h2c). Derived from those fields: a --http2 or --h2c in spec.server.extraArgs, which would
	// override them, is not read.
	// +optional
	Protocols string `json:"protocols,omitempty"`
	// publicURLs are the addresses of spec.hostnames through spec.route (https:// with spec.tls), once the
	// Ingress or HTTPRoute exists.
	// +listType=atomic
	// +optional
	PublicURLs []string `json:"publicURLs,omitempty"`
	// certificate is the cert-manager Certificate the operator owns for spec.tls.issuerRef: its Secret, the names
	// it is for, and, from cert-manager's own status, until when it is valid and when it renews. The
	// CertificateReady condition says whether it is issued.
	// +optional
	Certificate *CertificateStatus `json:"certificate,omitempty"`
	// hostnames are the spec.hostnames this site holds (lower case, without a trailing dot), and with
	// spec.previews the previews' wildcard "*.<domain>" when it holds that: the operator's record of who claimed a
	// hostname first. Its route carries only these; a hostname another site holds is left out (RouteApplied=False,
	// reason HostnameConflict). Written by the operator only.
	// +listType=atomic
	// +optional
	Hostnames []string `json:"hostnames,omitempty"`
	// contentSource is which content source is in use: image, configMaps, imageVolume, persistentVolumeClaim or git.
	// +optional
	ContentSource string `json:"contentSource,omitempty"`
	// contentRevision identifies the content served: the image reference (with its digest once a pod reports it),
	// a hash of the ConfigMaps' resourceVersions, or for Git the fetcher's commit as REF@sha1:HASH (Flux's form).
	// +optional
	ContentRevision string `json:"contentRevision,omitempty"`
	// deploys is a Git site's history: the deploys its fetcher keeps and every pod can flip back to (spec.content.git.pin), newest fetched first, at most spec.content.git.history.
	// +optional
	Deploys []Deploy `json:"deploys,omitempty"`
	// previews are the site's previews (spec.previews), as its fetcher publishes them, by name.
	// +listType=map
	// +listMapKey=name
	// +optional
	Previews []PreviewStatus `json:"previews,omitempty"`
	// memory is the memory request and limit given to each server container (spec.memory or the sized default).
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
	// content is what one ready server pod reports about the content it serves, read from its admin port in the
	// latest reconcile. It is absent while no pod that runs the current spec could be read (the ContentInMemory
	// condition is then Unknown and says why): never numbers from an earlier pass presented as current.
	// +optional
	Content *ServedContent `json:"content,omitempty"`
	// siteValue is the site value (rules, headers, cache-control...) rendered from the spec and how many ready pods
	// serve it; the SiteValueApplied condition says why the others do not.
	// +optional
	SiteValue *SiteValueStatus `json:"siteValue,omitempty"`

	// placement is where the site runs now and why (spec.placement); the Placed condition says whether it is
	// served there.
	// +optional
	Placement *PlacementStatus `json:"placement,omitempty"`

	// autoscaling is written by the autoscaler only.
	// +optional
	Autoscaling *AutoscalingStatus `json:"autoscaling,omitempty"`

	// capacity is the last capacity measurement of the site's pods (see spec.capacity).
	// +optional
	Capacity *CapacityStatus `json:"capacity,omitempty"`

	// performanceGate is the gate's decision about the latest candidate template (spec.rollout.performanceGate).
	// +optional
	PerformanceGate *PerformanceGateStatus `json:"performanceGate,omitempty"`
}

// ServedContent is one server pod's account of the site it serves: how big it is, how much of it is held in
// memory and how much is served from disk, and the memory limit under which all of it would be in memory.
type ServedContent struct {
	// pod is the ready pod the numbers were read from.
	Pod string `json:"pod"`
	// files is the number of files served.
	Files int64 `json:"files"`
	// bytes is the total size of the files (identity encoding).
	Bytes int64 `json:"bytes"`
	// memoryBytes is the content held in memory, compressed variants included.
	MemoryBytes int64 `json:"memoryBytes"`
	// diskBytes is the size of the files served from disk because they do not fit the memory budget or are
	// larger than the server's --max-memory-file-size.
	DiskBytes int64 `json:"diskBytes"`
	// memoryLimit is the memory limit the server works under (its container's, unless --memory-limit in
	// spec.server.extraArgs says otherwise); absent when the server sees no limit.
	// +optional
	MemoryLimit *resource.Quantity `json:"memoryLimit,omitempty"`
	// fitMemoryLimit is the smallest memory limit under which every file (up to --max-memory-file-size) with its
	// compressed variants known so far would be held in memory: the spec.memory that would make ContentInMemory
	// True when files over --max-memory-file-size are not the reason.
	FitMemoryLimit resource.Quantity `json:"fitMemoryLimit"`
	// encodingsPending is the number of files whose brotli and gzip variants the server is still making in the
	// background; memoryBytes and fitMemoryLimit grow until it reaches 0.
	EncodingsPending int64 `json:"encodingsPending"`
	// revision is, for a Git site, the commit the fetcher published and how many ready pods serve it (each pod's
	// puller says which commit its server has).
	// +optional
	Revision *ContentRevision `json:"revision,omitempty"`
}

// StaticSite serves a static website from pinned, CPU-guaranteed hyperstatic server pods.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=hss,categories=hyperstatic
// The site's name becomes its Service's name, which must be a DNS-1035 label (a Deployment accepts more).
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (at most 63 lowercase letters, digits and '-', starting with a letter and ending with a letter or digit): it names the site's Service"
// A Git site's name is at most 51 characters: its children add suffixes to it (<name>-git-webhook is the longest).
// +kubebuilder:validation:XValidation:rule="!has(self.spec) || !has(self.spec.content) || !has(self.spec.content.git) || size(self.metadata.name) <= 51",message="metadata.name must be at most 51 characters for a Git site (spec.content.git): it names the Service <name>-git-webhook"
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Replicas",type=integer,JSONPath=`.status.readyReplicas`,description="ready pods"
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.spec.replicas`,priority=1
// +kubebuilder:printcolumn:name="CPU",type=string,JSONPath=`.spec.cpu`
// +kubebuilder:printcolumn:name="Pinned",type=string,JSONPath=`.status.conditions[?(@.type=="Pinned")].status`
// +kubebuilder:printcolumn:name="Placement",type=string,JSONPath=`.status.placement.mode`,description="Dedicated (own pods) or Pool"
// +kubebuilder:printcolumn:name="Pool",type=string,JSONPath=`.status.placement.pool`,priority=1
// +kubebuilder:printcolumn:name="Content",type=string,JSONPath=`.status.contentSource`
// +kubebuilder:printcolumn:name="Commit",type=string,JSONPath=`.status.content.revision.shortCommit`,description="Git sites: the commit the fetcher published"
// +kubebuilder:printcolumn:name="Served",type=string,JSONPath=`.status.content.revision.served`,description="Git sites: ready pods serving that commit / ready pods"
// +kubebuilder:printcolumn:name="Deploy",type=string,JSONPath=`.status.content.revision.deploy`,description="Git sites: the deploy served, (pinned) when spec.content.git.pin or the hyperstatic.dev/pin annotation holds it"
// +kubebuilder:printcolumn:name="Revision",type=string,JSONPath=`.status.contentRevision`,priority=1
// +kubebuilder:printcolumn:name="Site-Value",type=string,JSONPath=`.status.conditions[?(@.type=="SiteValueApplied")].status`,priority=1,description="every ready pod serves the rules, headers and cache-control of the current spec"
// +kubebuilder:printcolumn:name="In-Memory",type=string,JSONPath=`.status.conditions[?(@.type=="ContentInMemory")].status`,priority=1,description="every file served from memory"
// +kubebuilder:printcolumn:name="Memory",type=string,JSONPath=`.status.memory`,priority=1,description="memory limit of each pod"
// +kubebuilder:printcolumn:name="Memory-Fit",type=string,JSONPath=`.status.content.fitMemoryLimit`,priority=1,description="memory limit that would hold every file in memory"
// +kubebuilder:printcolumn:name="RPS",type=integer,JSONPath=`.status.autoscaling.currentRPS`
// +kubebuilder:printcolumn:name="Target-RPS",type=integer,JSONPath=`.status.autoscaling.targetRPSPerPod`,description="per-pod target of the autoscaler"
// +kubebuilder:printcolumn:name="Target-From",type=string,JSONPath=`.status.autoscaling.targetSource`,priority=1,description="where the per-pod target comes from: Capacity, TargetRPSPerPod, TargetRPSPerCPU or Default"
// +kubebuilder:printcolumn:name="Capacity",type=integer,JSONPath=`.status.capacity.rpsPerPod`,priority=1,description="measured requests/s per pod"
// +kubebuilder:printcolumn:name="Gate",type=string,JSONPath=`.status.performanceGate.phase`,priority=1,description="performance gate: Measuring, Passed, Blocked or Overridden"
// +kubebuilder:printcolumn:name="Protocols",type=string,JSONPath=`.status.protocols`,priority=1,description="ALPN IDs of the protocols offered: h3 (spec.http3), h2 (TLS), http/1.1, h2c (plain)"
// +kubebuilder:printcolumn:name="Cert-Expires",type=string,JSONPath=`.status.certificate.notAfter`,priority=1,description="spec.tls.issuerRef: when the issued certificate expires (cert-manager renews it before)"
// +kubebuilder:printcolumn:name="URL",type=string,JSONPath=`.status.url`
// +kubebuilder:printcolumn:name="Public",type=string,JSONPath=`.status.publicURLs[0]`,description="first public URL (spec.hostnames through spec.route)"
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StaticSite struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec StaticSiteSpec `json:"spec"`
	// +optional
	Status StaticSiteStatus `json:"status,omitempty"`
}

// StaticSiteList is a list of StaticSites.
// +kubebuilder:object:root=true
type StaticSiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StaticSite `json:"items"`
}

func init() {
	SchemeBuilder.Register(&StaticSite{}, &StaticSiteList{})
}
