package sitevalue

import (
	"slices"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/ssosite"
)

// HtpasswdFile is the site value's access.htpasswdFile: relative, so the server reads it beside site.json, where
// the pod's projected volume puts the site-owned copy of the users' Secret (controllers/staticsite/step_access.go).
// The hashes reach the pod in a Secret, never in the ConfigMap.
const HtpasswdFile = "htpasswd"

// Access is the value's access field (images/server/src/guard/).
type Access struct {
	Rules          []AccessRule `json:"rules,omitempty"`
	TrustedProxies []string     `json:"trustedProxies,omitempty"`
	HtpasswdFile   string       `json:"htpasswdFile,omitempty"`
	SSO            *SSO         `json:"sso,omitempty"`
}

// SSO is where to sign in and the session keys (internal/ssosite: the login URL, the keys file beside site.json).
type SSO struct {
	LoginURL string `json:"loginURL"`
	KeysFile string `json:"keysFile"`
}

// SignIn is who of the signed-in users a rule admits.
type SignIn struct {
	Groups       []string `json:"groups,omitempty"`
	EmailDomains []string `json:"emailDomains,omitempty"`
}

// AccessRule is one path prefix's conditions.
type AccessRule struct {
	PathPrefix string     `json:"pathPrefix"`
	Allow      []string   `json:"allow,omitempty"`
	Deny       []string   `json:"deny,omitempty"`
	BasicAuth  *BasicAuth `json:"basicAuth,omitempty"`
	SignIn     *SignIn    `json:"signIn,omitempty"`
}

// BasicAuth asks for a user of the htpasswd file; the realm is left out at the server's default.
type BasicAuth struct {
	Realm string `json:"realm,omitempty"`
}

// access is spec.server.access as the value writes it: nil when it says nothing.
func access(site *v1alpha1.StaticSite) *Access {
	a := site.Spec.Server.Access
	if a == nil || (len(a.Rules) == 0 && len(a.TrustedProxies) == 0) { // proxyProtocol is a flag (desired.ServerArgs)
		return nil
	}
	out := &Access{TrustedProxies: nonEmpty(a.TrustedProxies)}
	if a.HtpasswdSecret != nil && asksPassword(a) {
		out.HtpasswdFile = HtpasswdFile // only when the pods mount it (UsesHtpasswd): the server reads it
	}
	if UsesSSO(site) {
		out.SSO = &SSO{LoginURL: ssosite.LoginURL(site), KeysFile: ssosite.KeysFile}
	}
	for _, r := range a.Rules {
		rule := AccessRule{PathPrefix: r.PathPrefix, Allow: nonEmpty(r.Allow), Deny: nonEmpty(r.Deny)}
		if r.BasicAuth != nil {
			rule.BasicAuth = &BasicAuth{Realm: r.BasicAuth.Realm}
		}
		if r.SignIn != nil {
			rule.SignIn = &SignIn{Groups: nonEmpty(r.SignIn.Groups), EmailDomains: nonEmpty(r.SignIn.EmailDomains)}
		}
		out.Rules = append(out.Rules, rule)
	}
	return out
}

// UsesHtpasswd says whether a site's pods need the htpasswd file beside the site value: some rule asks for a
// password and the spec names the Secret.
func UsesHtpasswd(site *v1alpha1.StaticSite) bool {
	a := site.Spec.Server.Access
	return a != nil && a.HtpasswdSecret != nil && asksPassword(a)
}

func asksPassword(a *v1alpha1.AccessSpec) bool {
	return slices.ContainsFunc(a.Rules, func(r v1alpha1.AccessRule) bool { return r.BasicAuth != nil })
}

// UsesSSO says whether a site's pods need the session keys beside the site value and the login agent beside the
// server: spec.server.access.sso is set and some rule asks for a signed-in user.
func UsesSSO(site *v1alpha1.StaticSite) bool {
	a := site.Spec.Server.Access
	return ssosite.Enabled(site) && slices.ContainsFunc(a.Rules, func(r v1alpha1.AccessRule) bool { return r.SignIn != nil })
}
