package staticsite

import (
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// TLSReady: the operator reads the site's TLS Secret only to say whether it is usable (the pods' side, the mount
// and the https listener, is package desired's tls.go).

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
