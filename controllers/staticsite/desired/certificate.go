package desired

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/certmanager"
)

// spec.tls.issuerRef: a cert-manager Certificate named like the site, for the hostnames the site holds, issued by
// the referenced issuer into the Secret TLSSecretName, which the pods mount (tls.go) and the Ingress names
// (route.go). What is read back from it is internal/certmanager's business.

// TLSSecretName is the kubernetes.io/tls Secret the pods mount: spec.tls.secretName, or <site>-tls, the one the
// site's Certificate fills, with spec.tls.issuerRef. Empty without spec.tls.
func TLSSecretName(site *v1alpha1.StaticSite) string {
	switch t := site.Spec.TLS; {
	case t == nil:
		return ""
	case t.IssuerRef != nil:
		return site.Name + v1alpha1.CertificateSecretSuffix
	}
	return site.Spec.TLS.SecretName
}

// WantsCertificate says the site asks cert-manager for its certificate (spec.tls.issuerRef).
func WantsCertificate(site *v1alpha1.StaticSite) bool {
	return site.Spec.TLS != nil && site.Spec.TLS.IssuerRef != nil
}

// Certificate is the site's Certificate for hostnames (the spec.hostnames the site holds, as written), or nil
// without spec.tls.issuerRef or without a hostname held. The issuer reference is written in full (group and kind
// defaulted), so what the operator owns compares equal to what it asks for.
func Certificate(site *v1alpha1.StaticSite, hostnames []v1alpha1.Hostname) *unstructured.Unstructured {
	if !WantsCertificate(site) || len(hostnames) == 0 {
		return nil
	}
	ref := site.Spec.TLS.IssuerRef
	names := make([]any, 0, len(hostnames))
	for _, h := range hostnames {
		names = append(names, string(h))
	}
	return unstructuredChild(site, certmanager.CertificateGVK, sitechild.ObjectLabels(site), map[string]any{
		"secretName": TLSSecretName(site),
		"dnsNames":   names,
		"issuerRef":  map[string]any{"name": ref.Name, "kind": ref.KindOrDefault(), "group": ref.GroupOrDefault()},
	})
}
