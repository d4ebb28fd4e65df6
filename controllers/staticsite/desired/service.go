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
	return service(site, true)
}

// PoolService is the Service of a site a pool serves: the same Service without a selector, so that its endpoints
// are the pool pods of its EndpointSlice (PoolEndpointSlice) and its ClusterIP, DNS name and routes stay as they
// were. Applied by the same field manager, it removes the selector Service set, and Service puts it back.
func PoolService(site *v1alpha1.StaticSite) *corev1ac.ServiceApplyConfiguration {
	return service(site, false)
}

func service(site *v1alpha1.StaticSite, selectPods bool) *corev1ac.ServiceApplyConfiguration {
	typ := site.Spec.Service.Type
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP
	}
	spec := corev1ac.ServiceSpec().
		WithType(typ).
		WithIPFamilyPolicy(ipFamilyPolicyOf(site)) // placement.go
	if selectPods {
		spec.WithSelector(sitechild.SelectorLabels(site))
	}
	spec.
		WithPorts(
			corev1ac.ServicePort().WithName(v1alpha1.ServerPortName).WithProtocol(corev1.ProtocolTCP).
				WithAppProtocol(plainAppProtocol(site)).WithPort(ServicePort(site)). // protocols.go
				WithTargetPort(intstr.FromString(v1alpha1.ServerPortName)))
	if site.Spec.TLS != nil {
		spec.WithPorts(corev1ac.ServicePort().WithName(v1alpha1.HTTPSPortName).WithProtocol(corev1.ProtocolTCP).
			WithAppProtocol("https").WithPort(HTTPSServicePort(site)).
			WithTargetPort(intstr.FromString(v1alpha1.HTTPSPortName)))
	}
	if p := http3ServicePort(site); p != nil { // http3.go
		spec.WithPorts(p)
	}
	if p := ssoServicePort(site); p != nil { // sso.go
		spec.WithPorts(p)
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
