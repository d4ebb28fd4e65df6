package desired

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// TLS in the server: the site's kubernetes.io/tls Secret (TLSSecretName: spec.tls.secretName, or the one the
// site's Certificate fills with spec.tls.issuerRef, certificate.go) is mounted read-only at v1alpha1.TLSMountPath
// and the server terminates TLS on its https port. The pod template names the Secret only, never a hash of its content:
// when cert-manager rotates the certificate the kubelet updates the mounted files and the running servers reload
// them, with no new pods. The operator reads the Secret only to say in TLSReady whether it is usable.

// tlsVolumeName is the pod volume holding the Secret.
const tlsVolumeName = "tls"

// HTTPSServicePort is the Service's https port with spec.tls: spec.service.httpsPort, 443 when unset.
func HTTPSServicePort(site *v1alpha1.StaticSite) int32 {
	if site.Spec.Service.HTTPSPort == 0 {
		return v1alpha1.DefaultHTTPSServicePort
	}
	return site.Spec.Service.HTTPSPort
}

// withTLSListener adds the https port and the Secret's mount to the server container, for spec.tls.
func withTLSListener(site *v1alpha1.StaticSite, c *corev1ac.ContainerApplyConfiguration) {
	if site.Spec.TLS == nil {
		return
	}
	c.WithPorts(corev1ac.ContainerPort().WithName(v1alpha1.HTTPSPortName).WithContainerPort(v1alpha1.HTTPSPort).WithProtocol(corev1.ProtocolTCP))
	c.WithVolumeMounts(corev1ac.VolumeMount().WithName(tlsVolumeName).WithMountPath(v1alpha1.TLSMountPath).WithReadOnly(true))
}

// tlsVolume is the Secret's volume, or nil without spec.tls. It is not optional: a pod whose Secret is missing
// waits for it (the kubelet retries the mount) rather than starting a server without its certificate; pods
// already running keep serving.
func tlsVolume(site *v1alpha1.StaticSite) *corev1ac.VolumeApplyConfiguration {
	if site.Spec.TLS == nil {
		return nil
	}
	// Only the certificate and the key, never the whole Secret: a Secret may hold more than the server needs.
	return corev1ac.Volume().WithName(tlsVolumeName).WithSecret(corev1ac.SecretVolumeSource().WithSecretName(TLSSecretName(site)).
		WithItems(corev1ac.KeyToPath().WithKey(corev1.TLSCertKey).WithPath(corev1.TLSCertKey),
			corev1ac.KeyToPath().WithKey(corev1.TLSPrivateKeyKey).WithPath(corev1.TLSPrivateKeyKey)))
}
