package v1alpha1

// spec.http3: HTTP/3 (QUIC, RFC 9114) on the UDP twin of the https port. The server (images/server, --http3) answers
// QUIC on the same port number as its TLS listener, and advertises it on its HTTP/1.1 and HTTP/2 answers over TLS
// with `Alt-Svc: h3=":PORT"`, PORT being the one visitors reach (--alt-svc-port), not the pod's. The operator
// passes the flags, adds a UDP container port and a UDP Service port named h3 (the Service's https port number,
// so a LoadBalancer publishes TCP and UDP on one address and port), and admits UDP to it in the site's
// NetworkPolicy. QUIC is TLS 1.3 only, with the site's certificate: spec.http3 needs spec.tls. docs/http3.md says
// what reaches the pods over UDP through which gateway, and the node settings that matter.

const (
	// HTTP3PortName is the UDP port of the server container and of the Service that carries QUIC.
	HTTP3PortName = "h3"
)

// HTTP3Spec turns on HTTP/3 for a site with spec.tls.
type HTTP3Spec struct {
	// enabled serves HTTP/3 on the https port's UDP twin and advertises it with Alt-Svc. Unset is the operator's
	// default, off in this version: it becomes on for TLS sites only once the server's HTTP/3 passes every
	// check of issue 42 (benchmarks, interop, browser, kind), and docs/http3.md says when it does. Set false to
	// keep a site on TCP across that change.
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// advertisedPort is the UDP port visitors reach HTTP/3 on, named in Alt-Svc: a load balancer's port in front
	// of the Service, or a NodePort. Default spec.service.httpsPort (443), the Service's h3 port: right for a
	// LoadBalancer Service straight to the pods.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	AdvertisedPort *int32 `json:"advertisedPort,omitempty"`

	// earlyData accepts QUIC 0-RTT from a visitor coming back: its first requests travel with its first packets,
	// a round trip sooner. Each session ticket is good for one resumption with the pod that issued it, and a request
	// that arrives in early data (which a client may send twice) is answered only for GET and HEAD; any other method
	// gets 425 Too Early (browsers retry it after the handshake). Default off.
	// +optional
	EarlyData *bool `json:"earlyData,omitempty"`
}

// HTTP3On says the site's server serves HTTP/3: spec.tls is set and spec.http3.enabled is true (the default is off
// in this version; HTTP3Spec.Enabled).
func (s *StaticSite) HTTP3On() bool {
	h := s.Spec.HTTP3
	return s.Spec.TLS != nil && h != nil && h.Enabled != nil && *h.Enabled
}
