package staticsite

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// TLS in the server: the site's kubernetes.io/tls Secret is mounted read-only at v1alpha1.TLSMountPath and the
// server terminates TLS on its https port. The pod template names the Secret only, never a hash of its content:
// when cert-manager rotates the certificate the kubelet updates the mounted files and the running servers reload
// them, with no new pods. The operator reads the Secret only to say in TLSReady whether it is usable.

// tlsVolumeName is the pod volume holding the Secret.
const tlsVolumeName = "tls"

// DefaultTLSRecheck is how often a site with spec.tls reads its Secret again when TLSRecheck is not set. The
// operator does not watch Secrets (see reconcileTLS), so this bounds how stale TLSReady can be after a rotation.
const DefaultTLSRecheck = time.Minute

func httpsServicePortOf(site *v1alpha1.StaticSite) int32 {
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
	return corev1ac.Volume().WithName(tlsVolumeName).WithSecret(corev1ac.SecretVolumeSource().WithSecretName(site.Spec.TLS.SecretName).
		WithItems(corev1ac.KeyToPath().WithKey(corev1.TLSCertKey).WithPath(corev1.TLSCertKey),
			corev1ac.KeyToPath().WithKey(corev1.TLSPrivateKeyKey).WithPath(corev1.TLSPrivateKeyKey)))
}

// certVerdict is the judgement of a TLS Secret.
type certVerdict struct {
	ok              bool
	reason, message string
	notAfter        time.Time
}

// checkCertificate judges a TLS Secret the way the server will load it: a PEM certificate chain in tls.crt and a
// private key in tls.key that matches the first certificate, valid at now. Go's crypto/tls parses the pair (the
// same checks as tls.LoadX509KeyPair: PEM, key type, key matching the leaf's public key).
func checkCertificate(s *corev1.Secret, now time.Time) certVerdict {
	crt, key := s.Data[corev1.TLSCertKey], s.Data[corev1.TLSPrivateKeyKey]
	var missing []string
	if len(crt) == 0 {
		missing = append(missing, corev1.TLSCertKey)
	}
	if len(key) == 0 {
		missing = append(missing, corev1.TLSPrivateKeyKey)
	}
	if len(missing) > 0 {
		return certVerdict{reason: v1alpha1.ReasonSecretInvalid,
			message: fmt.Sprintf("Secret %q (type %s) has no %s: a kubernetes.io/tls Secret holds tls.crt and tls.key", s.Name, s.Type, strings.Join(missing, " and "))}
	}
	pair, err := tls.X509KeyPair(crt, key)
	if err != nil {
		return certVerdict{reason: v1alpha1.ReasonInvalidCertificate, message: fmt.Sprintf("Secret %q: %v", s.Name, err)}
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return certVerdict{reason: v1alpha1.ReasonInvalidCertificate, message: fmt.Sprintf("Secret %q: parse the certificate: %v", s.Name, err)}
	}
	names := strings.Join(leaf.DNSNames, ", ")
	if names == "" {
		names = "no DNS names, subject " + leaf.Subject.String()
	}
	switch {
	case now.After(leaf.NotAfter):
		return certVerdict{reason: v1alpha1.ReasonInvalidCertificate,
			message: fmt.Sprintf("Secret %q: the certificate (%s) expired at %s", s.Name, names, leaf.NotAfter.UTC().Format(time.RFC3339))}
	case now.Before(leaf.NotBefore):
		return certVerdict{reason: v1alpha1.ReasonInvalidCertificate,
			message: fmt.Sprintf("Secret %q: the certificate (%s) is not valid before %s", s.Name, names, leaf.NotBefore.UTC().Format(time.RFC3339))}
	}
	return certVerdict{ok: true, reason: v1alpha1.ReasonCertificateValid, notAfter: leaf.NotAfter,
		message: fmt.Sprintf("certificate for %s from Secret %q, valid until %s", names, s.Name, leaf.NotAfter.UTC().Format(time.RFC3339))}
}
