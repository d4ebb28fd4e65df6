package v1alpha1

import (
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The parts of a StaticSite that put it in front of the public: TLS in the server, a route from hostnames (an
// Ingress or a Gateway API HTTPRoute), a Prometheus Operator PodMonitor and a NetworkPolicy. Each is opt-in: a
// site without them has exactly the children and pod template it had before these fields existed.

// Ports and paths of the server's HTTPS listener, part of the contract with the server image.
const (
	// HTTPSPortName / HTTPSPort: the server's TLS listener inside the pod (--tls-listen).
	HTTPSPortName = "https"
	HTTPSPort     = 8443
	// TLSMountPath is where the site's kubernetes.io/tls Secret is mounted read-only (tls.crt, tls.key). The
	// kubelet updates the files in place when the Secret changes; the server reloads them without a restart.
	TLSMountPath = "/etc/hyperstatic/tls"
	// DefaultHTTPSServicePort is spec.service.httpsPort when it is unset.
	DefaultHTTPSServicePort = 443
)

// TLSSpec makes the server terminate TLS itself, with the certificate of a kubernetes.io/tls Secret: one the user
// fills (secretName), or one cert-manager issues for the site's hostnames (issuerRef, certificate_types.go).
// +kubebuilder:validation:XValidation:rule="has(self.secretName) != has(self.issuerRef)",message="spec.tls must set exactly one of secretName (a kubernetes.io/tls Secret you fill) and issuerRef (the operator asks cert-manager for a certificate, in the Secret <site>-tls)"
type TLSSpec struct {
	// secretName of a kubernetes.io/tls Secret in the site's namespace (tls.crt, tls.key) that you fill, by hand or
	// with a cert-manager Certificate of your own. It is mounted into the pods; a rotation of its content is picked
	// up by the running servers without a restart. Changing the name rolls the pods. Not with issuerRef.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// issuerRef makes the operator own a cert-manager Certificate (named like the site) for the hostnames the site
	// holds, issued by this Issuer or ClusterIssuer into the Secret <site>-tls, which the pods mount. Needs
	// spec.hostnames; the tenancy policy says which ClusterIssuers a namespace may use. The CertificateReady
	// condition and status.certificate say whether it is issued, renewing or failing, and until when it is valid.
	// Not with secretName.
	// +optional
	IssuerRef *IssuerReference `json:"issuerRef,omitempty"`

	// httpRedirect makes the plain HTTP port answer every request with a 308 redirect to the same URL over https
	// (to spec.service.httpsPort). Not with spec.route: the route's backend is the plain port, so the redirect
	// would loop; let the Ingress controller or Gateway redirect instead.
	// +optional
	HTTPRedirect bool `json:"httpRedirect,omitempty"`

	// http2 offers HTTP/2 on the https port: ALPN "h2" (preferred) and "http/1.1", so browsers and other clients
	// that speak it use one multiplexed connection. false offers "http/1.1" only. Default true (the server's
	// default: unset passes no flag).
	// +optional
	HTTP2 *bool `json:"http2,omitempty"`

	// hsts adds a Strict-Transport-Security header to HTTPS responses.
	// +optional
	HSTS *HSTSSpec `json:"hsts,omitempty"`
}

// HSTSSpec is the Strict-Transport-Security policy (RFC 6797).
// +kubebuilder:validation:XValidation:rule="!has(self.preload) || !self.preload || (has(self.includeSubDomains) && self.includeSubDomains && self.maxAgeSeconds >= 31536000)",message="spec.tls.hsts.preload needs includeSubDomains and maxAgeSeconds of at least 31536000 (one year)"
type HSTSSpec struct {
	// maxAgeSeconds is how long browsers remember to use HTTPS only; 0 tells them to forget the policy.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=63072000
	// +required
	MaxAgeSeconds int64 `json:"maxAgeSeconds"`
	// includeSubDomains applies the policy to every subdomain of the host.
	// +optional
	IncludeSubDomains bool `json:"includeSubDomains,omitempty"`
	// preload asks to be included in browsers' preload lists (needs includeSubDomains and a year or more).
	// +optional
	Preload bool `json:"preload,omitempty"`
}

// Hostname is a DNS name a site answers to, optionally with a leading "*." wildcard label.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=253
// +kubebuilder:validation:Pattern=`^(\*\.)?[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
type Hostname string

// RouteSpec says how public traffic for spec.hostnames reaches the site's Service: through an Ingress of a class
// (ingressClassName) or through a Gateway API HTTPRoute attached to Gateways (parentRefs). Exactly one is set.
// +kubebuilder:validation:XValidation:rule="has(self.ingressClassName) != has(self.parentRefs)",message="spec.route must set exactly one of ingressClassName, parentRefs"
type RouteSpec struct {
	// ingressClassName makes the operator create a networking.k8s.io/v1 Ingress of this class, with a TLS
	// section naming spec.tls.secretName when spec.tls is set.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	IngressClassName *string `json:"ingressClassName,omitempty"`

	// parentRefs are the Gateways a gateway.networking.k8s.io/v1 HTTPRoute is attached to. TLS for an HTTPRoute
	// is the Gateway listener's business; spec.tls only decides the scheme of status.publicURLs.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ParentRefs []ParentReference `json:"parentRefs,omitempty"`

	// annotations on the Ingress or HTTPRoute (e.g. cert-manager's cluster-issuer, an ingress controller's
	// options). Keys under hyperstatic.dev/ are refused.
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('hyperstatic.dev/') && !k.matches('^[^/]*[.]hyperstatic[.]dev/'))",message="spec.route.annotations keys under hyperstatic.dev/ (or a subdomain of it) are the operator's own: an annotation must not set them"
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
}

// ParentReference names a Gateway (or another parent of the Gateway API) an HTTPRoute attaches to.
type ParentReference struct {
	// group of the parent; default gateway.networking.k8s.io.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group *string `json:"group,omitempty"`
	// kind of the parent; default Gateway.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Kind *string `json:"kind,omitempty"`
	// namespace of the parent; default the site's namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Namespace *string `json:"namespace,omitempty"`
	// name of the parent.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`
	// sectionName is the listener of the Gateway to attach to; default all that allow it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	SectionName *string `json:"sectionName,omitempty"`
}

// MonitoringSpec makes the operator create a Prometheus Operator PodMonitor that scrapes every server pod's
// admin port (/metrics), when the monitoring.coreos.com CRDs are installed.
type MonitoringSpec struct {
	// labels on the PodMonitor, for the Prometheus' podMonitorSelector (e.g. release: kube-prometheus-stack). Keys
	// under hyperstatic.dev/ are refused: the operator finds its own PodMonitors by them.
	// +kubebuilder:validation:XValidation:rule="self.all(k, !k.startsWith('hyperstatic.dev/') && !k.matches('^[^/]*[.]hyperstatic[.]dev/'))",message="spec.monitoring.labels keys under hyperstatic.dev/ (or a subdomain of it) are the operator's own: a label must not set them"
	// +optional
	Labels map[string]string `json:"labels,omitempty"`
	// interval between scrapes, e.g. "30s"; default Prometheus' global scrape interval.
	// +kubebuilder:validation:Pattern=`^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$`
	// +optional
	Interval string `json:"interval,omitempty"`
}

// NetworkPolicySpec makes the operator create a NetworkPolicy for the site's pods: ingress to the serving ports
// (http, and https with spec.tls) from servingFrom, to the admin port (probes' endpoints, /metrics, /content)
// only from the operator's namespace and from the monitoring namespaces. Egress is not restricted.
type NetworkPolicySpec struct {
	// servingFrom are the peers allowed to reach the serving ports. Empty: every source, in and outside the cluster.
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +optional
	ServingFrom []networkingv1.NetworkPolicyPeer `json:"servingFrom,omitempty"`
	// monitoringNamespaceSelector selects the namespaces whose pods (Prometheus) may scrape the admin port.
	// Default: the namespace named "monitoring" (kubernetes.io/metadata.name: monitoring).
	// +optional
	MonitoringNamespaceSelector *metav1.LabelSelector `json:"monitoringNamespaceSelector,omitempty"`
}

// DefaultMonitoringNamespace is the namespace whose pods may scrape the admin port when
// spec.networkPolicy.monitoringNamespaceSelector is unset.
const DefaultMonitoringNamespace = "monitoring"
