package staticsite

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// DesiredService is the Service in front of a site's pods: spec.service.port to the pods' http port, and the admin
// port (metrics, health, content listing) for the benchmark controller and metrics scrapers.
func DesiredService(site *v1alpha1.StaticSite) *corev1ac.ServiceApplyConfiguration {
	typ := site.Spec.Service.Type
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP
	}
	svc := corev1ac.Service(site.Name, site.Namespace).
		WithLabels(objectLabels(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(typ).
			WithSelector(selectorLabels(site)).
			WithPorts(
				corev1ac.ServicePort().WithName(v1alpha1.ServerPortName).WithProtocol(corev1.ProtocolTCP).
					WithAppProtocol("http").WithPort(servicePortOf(site)).
					WithTargetPort(intstr.FromString(v1alpha1.ServerPortName)),
				corev1ac.ServicePort().WithName(v1alpha1.AdminPortName).WithProtocol(corev1.ProtocolTCP).
					WithAppProtocol("http").WithPort(v1alpha1.AdminPort).
					WithTargetPort(intstr.FromString(v1alpha1.AdminPortName))))
	if len(site.Spec.Service.Annotations) > 0 {
		svc.WithAnnotations(maps.Clone(site.Spec.Service.Annotations))
	}
	return svc
}
