package desired

import (
	"strings"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The HTTP versions a site offers, and how the objects in front of its pods learn them. The server speaks
// HTTP/1.1 on both ports; HTTP/2 over TLS (ALPN "h2") unless spec.tls.http2 is false; cleartext HTTP/2 with
// prior knowledge ("h2c") on the plain port when spec.server.h2c is set. A client learns h2 from the TLS
// handshake by itself; h2c it must be told, since nothing in a cleartext connection negotiates it: a Gateway API
// implementation reads the Service port's appProtocol, Traefik's Ingress provider a Service annotation.
const (
	// AppProtocolH2C is the Service port appProtocol (KEP-3726, a Kubernetes-defined value) that tells gateways to
	// speak HTTP/2 with prior knowledge to the port.
	AppProtocolH2C = "kubernetes.io/h2c"
	// TraefikServersSchemeAnnotation is the Service annotation Traefik's Kubernetes Ingress provider reads for the
	// scheme of a backend (pkg/provider/kubernetes/ingress: getProtocol); it ignores appProtocol. Its Gateway API
	// provider reads appProtocol instead.
	TraefikServersSchemeAnnotation = "traefik.ingress.kubernetes.io/service.serversscheme"
)

// ALPN protocol IDs (RFC 7301's registry), the names status.protocols uses.
const (
	protoH2     = "h2"
	protoHTTP11 = "http/1.1"
	protoH2C    = "h2c"
)

// http2OverTLS says the https port offers h2: spec.tls is set and spec.tls.http2 is not false.
func http2OverTLS(site *v1alpha1.StaticSite) bool {
	t := site.Spec.TLS
	return t != nil && (t.HTTP2 == nil || *t.HTTP2)
}

// Protocols is status.protocols: the ALPN IDs of what the site offers, h3 first (spec.http3), then h2 (the one a
// browser picks over TCP), then http/1.1 (both ports), then h2c (the plain port).
func Protocols(site *v1alpha1.StaticSite) string {
	var p []string
	if site.HTTP3On() {
		p = append(p, protoH3) // http3.go: what a browser moves to once Alt-Svc told it
	}
	if http2OverTLS(site) {
		p = append(p, protoH2)
	}
	p = append(p, protoHTTP11)
	if site.Spec.Server.H2C {
		p = append(p, protoH2C)
	}
	return strings.Join(p, ",")
}

// plainAppProtocol is the appProtocol of the Service's http port: kubernetes.io/h2c when the pods accept h2c
// there, so gateways use it (the port still answers HTTP/1.1: a client that does not read appProtocol works).
func plainAppProtocol(site *v1alpha1.StaticSite) string {
	if site.Spec.Server.H2C {
		return AppProtocolH2C
	}
	return "http"
}

// serviceAnnotations are the Service's annotations: spec.service.annotations, and with h2c behind an Ingress
// the annotation that makes Traefik speak h2c to the pods. The user's own value of that annotation wins (the
// plain port answers HTTP/1.1 too, so "http" there is safe). Other ingress controllers have their own
// annotations, set through spec.service.annotations or spec.route.annotations.
func serviceAnnotations(site *v1alpha1.StaticSite) map[string]string {
	out := map[string]string{}
	if site.Spec.Server.H2C && site.Spec.Route != nil && site.Spec.Route.IngressClassName != nil {
		out[TraefikServersSchemeAnnotation] = protoH2C
	}
	for k, v := range site.Spec.Service.Annotations {
		out[k] = v
	}
	if len(out) == 0 {
		return nil
	}
	return out
}
