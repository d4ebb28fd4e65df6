package tenancy

import (
	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// CertificateLimits say which cert-manager issuers a site may name in spec.tls.issuerRef. The operator creates the
// site's Certificate with its own ClusterRole, so the reference is the tenant's way to the platform's issuers: a
// ClusterIssuer serves every namespace that names it (an ACME account's rate limits, a private CA that browsers
// or other services trust). An Issuer of the site's own namespace is always allowed: the tenant made it, or was
// given it, for that namespace. Whatever the issuer, the certificate is only for the hostnames the site holds,
// which the hostname limits bound.
type CertificateLimits struct {
	// ClusterIssuers are the names of the cert-manager ClusterIssuers a site may use; Any: every one. Empty: none
	// (only the namespace's own Issuers).
	ClusterIssuers []string `json:"clusterIssuers"`
	// ExternalIssuers are the issuer kinds of other API groups (external issuers, e.g. a cloud CA's) a site may
	// use, as "<kind>.<group>" (e.g. "AWSPCAClusterIssuer.awspca.cert-manager.io"), every name of that kind; Any:
	// every kind. The policy cannot tell whether such a kind is namespaced, so none is allowed unless listed.
	ExternalIssuers []string `json:"externalIssuers"`
}

// checkIssuer: a namespace's own cert-manager Issuer always; a ClusterIssuer or an external issuer's kind only
// when listed.
func (p Policy) checkIssuer(vs *Violations, ref *v1alpha1.IssuerReference) {
	kind, group := ref.KindOrDefault(), ref.GroupOrDefault()
	switch {
	case group != v1alpha1.CertManagerGroup:
		if k := kind + "." + group; !listed(p.Certificates.ExternalIssuers, k) {
			vs.add("spec.tls.issuerRef", "external issuer kind %s is not allowed (allowed: %s)", k, shown(p.Certificates.ExternalIssuers))
		}
	case kind == v1alpha1.IssuerKind:
	case kind == v1alpha1.ClusterIssuerKind:
		if !listed(p.Certificates.ClusterIssuers, ref.Name) {
			vs.add("spec.tls.issuerRef.name", "ClusterIssuer %q is not allowed (allowed: %s; an Issuer of the site's namespace always is)",
				ref.Name, shown(p.Certificates.ClusterIssuers))
		}
	default:
		vs.add("spec.tls.issuerRef.kind", "cert-manager.io has no issuer kind %q: Issuer or ClusterIssuer", kind)
	}
}
