package tenancy

import (
	"strings"
	"testing"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// spec.tls.issuerRef: the namespace's own Issuer always, a ClusterIssuer or an external kind only when listed, each
// refusal naming the field; the default policy lists none, Unrestricted every one.
func TestIssuerLimits(t *testing.T) {
	withIssuer := func(ref v1alpha1.IssuerReference) *v1alpha1.StaticSite {
		return site(v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"},
			Hostnames: []v1alpha1.Hostname{"docs.example.com"}, TLS: &v1alpha1.TLSSpec{IssuerRef: &ref}})
	}
	// The default policy's certificate limits, its image list opened so that only the issuer is judged.
	deflt := Default()
	deflt.Images = []string{Any}
	platform := Unrestricted()
	platform.Certificates = CertificateLimits{ClusterIssuers: []string{"letsencrypt-prod"},
		ExternalIssuers: []string{"AWSPCAClusterIssuer.awspca.cert-manager.io"}}
	for _, tc := range []struct {
		name   string
		policy Policy
		ref    v1alpha1.IssuerReference
		field  string // "" when allowed
		msg    string
	}{
		{"own Issuer, default policy", deflt, v1alpha1.IssuerReference{Name: "team-ca"}, "", ""},
		{"own Issuer, spelled out", deflt, v1alpha1.IssuerReference{Name: "team-ca", Kind: "Issuer", Group: "cert-manager.io"}, "", ""},
		{"ClusterIssuer, default policy", deflt, v1alpha1.IssuerReference{Name: "letsencrypt-prod", Kind: "ClusterIssuer"},
			"spec.tls.issuerRef.name", `ClusterIssuer "letsencrypt-prod" is not allowed (allowed: none`},
		{"listed ClusterIssuer", platform, v1alpha1.IssuerReference{Name: "letsencrypt-prod", Kind: "ClusterIssuer"}, "", ""},
		{"unlisted ClusterIssuer", platform, v1alpha1.IssuerReference{Name: "internal-ca", Kind: "ClusterIssuer"},
			"spec.tls.issuerRef.name", `ClusterIssuer "internal-ca" is not allowed (allowed: letsencrypt-prod;`},
		{"unknown cert-manager kind", platform, v1alpha1.IssuerReference{Name: "x", Kind: "Certificate"},
			"spec.tls.issuerRef.kind", `cert-manager.io has no issuer kind "Certificate"`},
		{"listed external kind", platform, v1alpha1.IssuerReference{Name: "pca", Kind: "AWSPCAClusterIssuer", Group: "awspca.cert-manager.io"}, "", ""},
		{"external kind, default policy", deflt, v1alpha1.IssuerReference{Name: "pca", Kind: "AWSPCAClusterIssuer", Group: "awspca.cert-manager.io"},
			"spec.tls.issuerRef", "external issuer kind AWSPCAClusterIssuer.awspca.cert-manager.io is not allowed"},
		{"any ClusterIssuer, unrestricted", Unrestricted(), v1alpha1.IssuerReference{Name: "internal-ca", Kind: "ClusterIssuer"}, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vs := tc.policy.CheckSite(withIssuer(tc.ref))
			if tc.field == "" {
				if len(vs) != 0 {
					t.Fatalf("refused: %v", vs)
				}
				return
			}
			if len(vs) != 1 || vs[0].Field != tc.field || !strings.Contains(vs[0].Message, tc.msg) {
				t.Fatalf("violations %v, want one on %s containing %q", vs, tc.field, tc.msg)
			}
		})
	}
}
