package desired

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// Service is the Service in front of a site's pods: spec.service.port to the pods' http port, with spec.tls
// spec.service.httpsPort (443) to their https port, and nothing else. The http port's appProtocol says h2c when
// the pods speak it there (protocols.go). The admin port (probes, metrics, content listing) is never published on it: a LoadBalancer or NodePort
// Service would expose it to the public, where one slow client could starve the kubelet's probes. Everything that
// reads the admin port (the kubelet, the operator's scrapes, Prometheus pod discovery) goes to pod IPs.
func Service(site *v1alpha1.StaticSite) *corev1ac.ServiceApplyConfiguration {
	typ := site.Spec.Service.Type
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP
	}
	spec := corev1ac.ServiceSpec().
		WithType(typ).
		WithSelector(sitechild.SelectorLabels(site)).
		WithIPFamilyPolicy(ipFamilyPolicyOf(site)). // placement.go
		WithPorts(
			corev1ac.ServicePort().WithName(v1alpha1.ServerPortName).WithProtocol(corev1.ProtocolTCP).
				WithAppProtocol(plainAppProtocol(site)).WithPort(ServicePort(site)). // protocols.go
				WithTargetPort(intstr.FromString(v1alpha1.ServerPortName)))
	if site.Spec.TLS != nil {
		spec.WithPorts(corev1ac.ServicePort().WithName(v1alpha1.HTTPSPortName).WithProtocol(corev1.ProtocolTCP).
			WithAppProtocol("https").WithPort(HTTPSServicePort(site)).
			WithTargetPort(intstr.FromString(v1alpha1.HTTPSPortName)))
	}
	svc := corev1ac.Service(site.Name, site.Namespace).
		WithLabels(sitechild.ObjectLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithSpec(spec)
	if a := serviceAnnotations(site); a != nil { // protocols.go
		svc.WithAnnotations(a)
	}
	return svc
}
