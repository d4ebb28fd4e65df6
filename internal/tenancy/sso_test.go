package tenancy

import (
	"strings"
	"testing"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// An issuer is admitted by an exact entry (one trailing "/" aside) or a prefix entry ending in "/", never by an
// entry it merely starts with; Any admits all; the default admits the public providers only; Parse refuses an entry
// that is not an http(s) URL; a refused site names spec.server.access.sso.issuerURL.
func TestSSOIssuers(t *testing.T) {
	l := SSOLimits{Issuers: []string{"https://dex.example.internal", "https://login.microsoftonline.com/"}}
	for _, tc := range []struct {
		issuer string
		want   bool
	}{
		{"https://dex.example.internal", true},
		{"https://dex.example.internal/", true},
		{"https://dex.example.internal.evil.example", false},
		{"https://dex.example.internal/other-realm", false},
		{"http://dex.example.internal", false},
		{"https://login.microsoftonline.com/tenant-id/v2.0", true},
		{"https://login.microsoftonline.com.evil.example/x", false},
		{"http://169.254.169.254/latest/meta-data", false},
	} {
		if got := l.issuerAllowed(tc.issuer); got != tc.want {
			t.Errorf("%s: allowed %v, want %v", tc.issuer, got, tc.want)
		}
	}
	if !(SSOLimits{Issuers: []string{Any}}).issuerAllowed("http://anything.internal:5556/dex") {
		t.Error("Any refused an issuer")
	}
	if (SSOLimits{}).issuerAllowed("https://accounts.google.com") {
		t.Error("an empty list admitted an issuer")
	}
	if !Default().SSO.issuerAllowed("https://accounts.google.com") || Default().SSO.issuerAllowed("http://dex.team.svc.cluster.local:5556/dex") {
		t.Error("the default policy: the public providers only")
	}
	for _, bad := range []string{"dex.example.internal", "ftp://idp.example/", "https://", "https://idp.example/?x=1"} {
		if _, err := Parse(`{"sso": {"issuers": ["` + bad + `"]}}`); err == nil || !strings.Contains(err.Error(), "sso.issuers") {
			t.Errorf("Parse of issuer entry %q: %v", bad, err)
		}
	}
	site := &v1alpha1.StaticSite{Spec: v1alpha1.StaticSiteSpec{Server: v1alpha1.ServerSpec{Access: &v1alpha1.AccessSpec{
		SSO: &v1alpha1.SSOSpec{IssuerURL: "http://169.254.169.254/latest", ClientID: "c", SecretName: "s"}}}}}
	vs := Default().CheckSite(site)
	if got := fields(vs); got != "spec.server.access.sso.issuerURL" {
		t.Fatalf("violations %v (%s)", got, vs.Error())
	}
	if msg := vs.Error(); !strings.Contains(msg, `identity provider "http://169.254.169.254/latest" is not an allowed issuer`) {
		t.Errorf("message %q", msg)
	}
}
