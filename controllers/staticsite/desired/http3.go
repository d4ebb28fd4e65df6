package desired

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// HTTP/3 (spec.http3, http3_types.go): the server answers QUIC on UDP on its https port's number (--http3) and
// advertises it in Alt-Svc with the port visitors reach (--alt-svc-port). Each desired object gets its part here:
// the flags, a UDP container port, a UDP Service port and a NetworkPolicy port, all named h3 and all absent when
// HTTP/3 is off, so that turning it off removes them through server-side apply like any other field.

// protoH3 is HTTP/3's ALPN ID (RFC 9114), for status.protocols.
const protoH3 = "h3"

// HTTP3AdvertisedPort is the port Alt-Svc names: spec.http3.advertisedPort, else the Service's https port (the
// UDP h3 port has the same number).
func HTTP3AdvertisedPort(site *v1alpha1.StaticSite) int32 {
	if h := site.Spec.HTTP3; h != nil && h.AdvertisedPort != nil {
		return *h.AdvertisedPort
	}
	return HTTPSServicePort(site)
}

// http3Args are the server flags for HTTP/3: --http3 and --alt-svc-port, and --http3-early-data when
// spec.http3.earlyData is true; none when it is off. The advertised port is always passed: the server's own
// default, the pod's port (8443), is never the one visitors reach.
func http3Args(site *v1alpha1.StaticSite) []string {
	if !site.HTTP3On() {
		return nil
	}
	args := []string{"--http3", "--alt-svc-port", strconv.Itoa(int(HTTP3AdvertisedPort(site)))}
	if e := site.Spec.HTTP3.EarlyData; e != nil && *e {
		args = append(args, "--http3-early-data")
	}
	return args
}

// withHTTP3Port adds the server container's UDP port h3 (the https port's number) when HTTP/3 is on.
func withHTTP3Port(site *v1alpha1.StaticSite, c *corev1ac.ContainerApplyConfiguration) {
	if !site.HTTP3On() {
		return
	}
	c.WithPorts(corev1ac.ContainerPort().WithName(v1alpha1.HTTP3PortName).WithContainerPort(v1alpha1.HTTPSPort).
		WithProtocol(corev1.ProtocolUDP))
}

// http3ServicePort is the Service's UDP port h3 when HTTP/3 is on, nil otherwise: the number of the https port, so
// that a LoadBalancer Service publishes TCP and UDP on one address and port (mixed protocols, GA in Kubernetes 1.26)
// and the default Alt-Svc port is right.
func http3ServicePort(site *v1alpha1.StaticSite) *corev1ac.ServicePortApplyConfiguration {
	if !site.HTTP3On() {
		return nil
	}
	return corev1ac.ServicePort().WithName(v1alpha1.HTTP3PortName).WithProtocol(corev1.ProtocolUDP).
		WithPort(HTTPSServicePort(site)).WithTargetPort(intstr.FromString(v1alpha1.HTTP3PortName))
}

// withHTTP3Policy admits UDP to the h3 port from where the serving ports are admitted, when HTTP/3 is on.
func withHTTP3Policy(site *v1alpha1.StaticSite, serving *networkingv1ac.NetworkPolicyIngressRuleApplyConfiguration) {
	if !site.HTTP3On() {
		return
	}
	serving.WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolUDP).
		WithPort(intstr.FromString(v1alpha1.HTTP3PortName)))
}
