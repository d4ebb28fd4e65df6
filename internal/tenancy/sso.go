package tenancy

import (
	"fmt"
	"net/url"
	"strings"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// SSOLimits say which identity providers a site's single sign-on may use (spec.server.access.sso.issuerURL). The
// login agent the operator adds to the site's pods fetches the issuer's discovery document and keys and exchanges
// codes with it, from inside the cluster: an unchecked issuer URL would have the operator's agent request any
// address the pod reaches (the cloud's metadata endpoint, another team's internal services) and write what the
// answer's errors say into a log the tenant reads. The issuers are therefore the platform's to list, as Git URLs
// are.
type SSOLimits struct {
	// Issuers are the issuer URLs spec.server.access.sso.issuerURL may be: an entry ending in "/" admits every URL
	// that starts with it (a multi-tenant IdP's tenants, "https://login.microsoftonline.com/"), another entry that
	// URL exactly (a trailing "/" ignored); Any: every URL the CRD admits. Each entry is an absolute http(s) URL
	// (Parse refuses others). Empty: no single sign-on.
	Issuers []string `json:"issuers"`
}

// DefaultSSOIssuers are public identity providers: a platform adds its own (its Dex, Keycloak or Okta tenant).
var DefaultSSOIssuers = []string{"https://accounts.google.com", "https://login.microsoftonline.com/", "https://gitlab.com"}

// validate refuses entries that are not absolute http(s) URLs with a host.
func (l SSOLimits) validate() error {
	for _, e := range l.Issuers {
		if e == Any {
			continue
		}
		u, err := url.Parse(e)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
			return fmt.Errorf("tenancy policy: sso.issuers entry %q is not an http(s) issuer URL (or a prefix of one ending in \"/\")", e)
		}
	}
	return nil
}

// issuerAllowed: an entry ending in "/" is a prefix of the URL, another equals it (one trailing "/" ignored on
// both), or Any.
func (l SSOLimits) issuerAllowed(issuer string) bool {
	for _, e := range l.Issuers {
		switch {
		case e == Any:
			return true
		case strings.HasSuffix(e, "/") && strings.HasPrefix(issuer, e):
			return true
		case strings.TrimSuffix(e, "/") == strings.TrimSuffix(issuer, "/"):
			return true
		}
	}
	return false
}

// checkSSO: the issuer URL is one the platform lists.
func (p Policy) checkSSO(vs *Violations, sso *v1alpha1.SSOSpec) {
	if !p.SSO.issuerAllowed(sso.IssuerURL) {
		vs.add("spec.server.access.sso.issuerURL", "identity provider %q is not an allowed issuer (allowed: %s)", sso.IssuerURL, shown(p.SSO.Issuers))
	}
}
