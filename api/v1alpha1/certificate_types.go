package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// spec.tls.issuerRef: the operator owns a cert-manager Certificate (cert-manager.io/v1) named like the site, for
// the hostnames the site holds, issued by the referenced Issuer or ClusterIssuer into the Secret <site>-tls, and
// the pods mount that Secret as they mount spec.tls.secretName (the server reloads a renewed certificate without
// a restart). cert-manager is optional: without its CRDs the site reconciles as usual and CertificateReady says
// so. What the operator reads of cert-manager's status, and how it maps onto CertificateReady, is
// internal/certmanager's contract.

// Defaults of an issuer reference, cert-manager's own.
const (
	CertManagerGroup        = "cert-manager.io"
	IssuerKind              = "Issuer"
	ClusterIssuerKind       = "ClusterIssuer"
	CertificateSecretSuffix = "-tls"
)

// IssuerReference names the cert-manager issuer of the site's certificate: an Issuer of the site's namespace, a
// ClusterIssuer, or an external issuer's kind (group other than cert-manager.io).
type IssuerReference struct {
	// name of the issuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
	// kind of the issuer: Issuer (in the site's namespace) or ClusterIssuer, or an external issuer's kind.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	// +kubebuilder:default=Issuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// group of the issuer's API.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +kubebuilder:default="cert-manager.io"
	// +optional
	Group string `json:"group,omitempty"`
}

// KindOrDefault is the reference's kind, Issuer when empty (an object built in code, not defaulted by the API
// server).
func (r IssuerReference) KindOrDefault() string {
	if r.Kind == "" {
		return IssuerKind
	}
	return r.Kind
}

// GroupOrDefault is the reference's group, cert-manager.io when empty.
func (r IssuerReference) GroupOrDefault() string {
	if r.Group == "" {
		return CertManagerGroup
	}
	return r.Group
}

// CertificateStatus is what the operator reports of the site's Certificate (status.certificate).
type CertificateStatus struct {
	// name of the cert-manager Certificate (the site's name).
	Name string `json:"name"`
	// secretName is the Secret the certificate is issued into and the pods mount.
	SecretName string `json:"secretName"`
	// dnsNames the Certificate asks for: the spec.hostnames the site holds.
	// +listType=atomic
	// +optional
	DNSNames []string `json:"dnsNames,omitempty"`
	// notAfter is when the issued certificate expires (cert-manager's status.notAfter); absent until one is issued.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// renewalTime is when cert-manager will renew it (its status.renewalTime).
	// +optional
	RenewalTime *metav1.Time `json:"renewalTime,omitempty"`
	// revision counts the certificates cert-manager has issued for it: 1 for the first, one more per renewal or
	// re-issue.
	// +optional
	Revision *int64 `json:"revision,omitempty"`
}

// CertificateReady reasons (normal-true: True is healthy; it never changes Ready, like TLSReady).
const (
	// True: cert-manager's Certificate is Ready; the message gives its names and notAfter.
	ReasonCertificateIssued = "CertificateIssued"
	// True: the certificate is valid and cert-manager is issuing its successor (a renewal, or a re-issue for a
	// changed spec); the pods keep serving the current one until the Secret changes.
	ReasonCertificateRenewing = "CertificateRenewing"
	// False: cert-manager is issuing the first certificate (or one after the last expired or was removed); new pods
	// wait for the Secret, running pods keep serving.
	ReasonCertificateIssuing = "CertificateIssuing"
	// False: cert-manager says issuance failed (its Issuing condition is False, reason Failed); it retries with a
	// backoff. The message is cert-manager's, with the number of failed attempts and whether the current
	// certificate is still valid (a failing renewal: the pods serve it until it expires).
	ReasonCertificateIssuanceFailed = "CertificateIssuanceFailed"
	// False: cert-manager says the certificate is not ready and is not issuing one (its Ready reason and message
	// follow), e.g. the issuer does not exist or is not ready.
	ReasonCertificateNotReady = "CertificateNotReady"
	// False: cert-manager has not reported on the Certificate yet (no Ready condition): just created, or no
	// cert-manager controller runs although its CRDs are installed.
	ReasonCertificatePending = "CertificatePending"
	// False: the cluster does not serve cert-manager.io/v1 Certificates (cert-manager is not installed). Retried
	// periodically; nothing else of the site is affected (its pods wait for the Secret).
	ReasonCertManagerNotInstalled = "CertManagerNotInstalled"
	// False: the API server refused the Certificate, or a Certificate of that name is not the site's.
	ReasonCertificateRejected = "CertificateRejected"
	// False: the site holds none of its hostnames (another site claimed each first): no Certificate is asked for,
	// since a certificate is a claim on a name. ReasonHostnameConflict's rule, for the certificate.
	ReasonCertificateNoHostname = "NoHostnameHeld"
)
