package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// Access rules (docs/security.md, "Access rules"): who may see which paths of a site, in the site value (access,
// docs/design/site-value.md), so a change applies without a restart. The checks are the server's
// (images/server/src/guard/): a block the API server admits is one the server loads.

// DefaultHtpasswdKey is the key of spec.server.access.htpasswdSecret read when none is named.
const DefaultHtpasswdKey = "htpasswd"

// AccessSpec restricts paths of the site to client addresses and to users with a password.
// +kubebuilder:validation:XValidation:rule="!has(self.rules) || !self.rules.exists(r, has(r.basicAuth)) || has(self.htpasswdSecret)",message="spec.server.access.htpasswdSecret is required when a rule sets basicAuth"
// +kubebuilder:validation:XValidation:rule="!has(self.rules) || !self.rules.exists(r, has(r.signIn)) || has(self.sso)",message="spec.server.access.sso is required when a rule sets signIn"
type AccessSpec struct {
	// rules restrict path prefixes: the longest prefix that covers a request's path (the path itself and everything
	// under it, segment by segment) decides alone. A client in a deny block gets 403; else, when allow is not
	// empty, a client in none of its blocks gets 403; then, under basicAuth, a request without a user and password
	// of htpasswdSecret gets 401. Every answer under a rule carries Cache-Control: private.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:XValidation:rule="self.all(a, self.exists_one(b, b.pathPrefix == a.pathPrefix))",message="spec.server.access.rules[].pathPrefix must be unique"
	// +listType=atomic
	// +optional
	Rules []AccessRule `json:"rules,omitempty"`

	// trustedProxies are the CIDR blocks of the proxies in front of the site (a load balancer, an ingress
	// controller): from a peer in one of them, the client is the right-most X-Forwarded-For entry that is not
	// itself in one. The rules, the per-client limits and the access log all use that client. From any other peer
	// the header is ignored. Default: none (the header is never read).
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c) ? cidr(c).masked() == cidr(c) : isIP(c))",message="spec.server.access.trustedProxies[] must be IP addresses or CIDR blocks without host bits (e.g. 10.0.0.0/8)"
	// +listType=atomic
	// +optional
	TrustedProxies []string `json:"trustedProxies,omitempty"`

	// htpasswdSecret names a Secret of the site's namespace holding an htpasswd file of bcrypt hashes
	// (htpasswd -B); any other kind of line refuses the Secret (see the AccessApplied condition) and the last
	// good users keep serving. The operator copies a good file into a Secret the site owns, which the pods mount
	// beside the site value: the hashes never sit in a ConfigMap.
	// +optional
	HtpasswdSecret *SecretKeyRef `json:"htpasswdSecret,omitempty"`

	// proxyProtocol makes every connection to the pods' plain and HTTPS ports start with a PROXY protocol v2 header
	// from a load balancer (send-proxy-v2), whose source address is then the client: for the rules, the per-client
	// limits and the access log. A connection without a valid header is closed. Only where nothing but that load
	// balancer reaches the pods (spec.networkPolicy): any client that can connect could claim any address. A process
	// setting (the server's --proxy-protocol), not part of the site value: changing it rolls the pods. Default: off.
	// +optional
	ProxyProtocol bool `json:"proxyProtocol,omitempty"`

	// sso signs users in at the organisation's identity provider (OpenID Connect) for the rules with signIn
	// (docs/design/sso.md): a login agent runs beside the server in every pod, the server itself checks only the
	// signed session cookie it issues. The login's callback and cookie belong to the first of spec.hostnames.
	// +optional
	SSO *SSOSpec `json:"sso,omitempty"`
}

// Keys of the Secret of spec.server.access.sso.
const (
	// SSOClientSecretKey holds the client secret the IdP gave the site's client.
	SSOClientSecretKey = "client-secret"
	// SSOSessionKeysKey holds one or two lines of standard base64, 32 to 64 random bytes each: the first signs new
	// session cookies, both are accepted (rotation: put the new key first, drop the old one once its cookies have
	// expired).
	SSOSessionKeysKey = "session-keys"
)

// SSOSpec is a site's OpenID Connect client.
type SSOSpec struct {
	// issuerURL is the IdP's issuer (https://dex.example.com): its /.well-known/openid-configuration says the rest.
	// +kubebuilder:validation:MaxLength=512
	// +kubebuilder:validation:Pattern=`^https?://[!$-~]+$`
	// +required
	IssuerURL string `json:"issuerURL"`

	// clientID is the site's client at the IdP, registered with the redirect URI
	// https://<first hostname>/.hyperstatic/sso/callback (with spec.route), or on the sso port without one.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=256
	// +kubebuilder:validation:Pattern=`^[!-~]+$`
	// +required
	ClientID string `json:"clientID"`

	// secretName names a Secret of the site's namespace with the keys client-secret and session-keys (one or two
	// lines of base64, 32 to 64 random bytes each: head -c 32 /dev/urandom | base64). The pods mount it; the
	// operator reads it to say whether it is usable (AccessApplied), never copies it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	SecretName string `json:"secretName"`

	// groupsClaim is the ID token claim holding the user's groups (default "groups").
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[!-~]+$`
	// +optional
	GroupsClaim string `json:"groupsClaim,omitempty"`

	// sessionTTL is how long a session cookie is good for (default 8h, 5m to 7d): the server keeps no session list,
	// so a stolen cookie or a user disabled at the IdP keeps access until then.
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('5m') && duration(self) <= duration('168h')",message="spec.server.access.sso.sessionTTL must be between 5m and 168h"
	// +optional
	SessionTTL *metav1.Duration `json:"sessionTTL,omitempty"`
}

// SecretKeyRef names one key of a Secret in the same namespace.
type SecretKeyRef struct {
	// name of the Secret.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Name string `json:"name"`

	// key of the Secret holding the htpasswd file (default "htpasswd").
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	Key string `json:"key,omitempty"`
}

// AccessRule is one path prefix's conditions.
// +kubebuilder:validation:XValidation:rule="!has(self.basicAuth) || !has(self.signIn)",message="spec.server.access.rules[] asks for basicAuth or signIn, not both"
type AccessRule struct {
	// pathPrefix is a site path ("/docs/" or "/docs": the same paths); "/" covers the whole site.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^/[^\x00-\x1f\x7f]*$`
	// +kubebuilder:validation:XValidation:rule="!self.contains('//') && !self.split('/').exists(s, s == '.' || s == '..')",message="spec.server.access.rules[].pathPrefix must be a site path starting with / without empty, '.' or '..' segments"
	// +required
	PathPrefix string `json:"pathPrefix"`

	// allow lists the CIDR blocks (or addresses) that may see the paths; empty: every address not denied.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c) ? cidr(c).masked() == cidr(c) : isIP(c))",message="spec.server.access.rules[].allow[] must be IP addresses or CIDR blocks without host bits (e.g. 10.0.0.0/8)"
	// +listType=atomic
	// +optional
	Allow []string `json:"allow,omitempty"`

	// deny lists the CIDR blocks (or addresses) refused, even inside an allow block: deny wins.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=64
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c) ? cidr(c).masked() == cidr(c) : isIP(c))",message="spec.server.access.rules[].deny[] must be IP addresses or CIDR blocks without host bits (e.g. 10.0.0.0/8)"
	// +listType=atomic
	// +optional
	Deny []string `json:"deny,omitempty"`

	// basicAuth asks for a user and password of spec.server.access.htpasswdSecret (HTTP Basic authentication;
	// use it over HTTPS only: the password crosses the network in every request).
	// +optional
	BasicAuth *BasicAuth `json:"basicAuth,omitempty"`

	// signIn asks for a user signed in through spec.server.access.sso, in one of groups or with an e-mail address
	// of one of emailDomains (both empty: any signed-in user). Without a good session a page load is sent to the
	// login (302), anything else gets 401; a signed-in user the rule does not admit gets 403.
	// +optional
	SignIn *SignIn `json:"signIn,omitempty"`
}

// SignIn is who of the signed-in users a rule admits: a user in any of groups, or with a verified e-mail address
// in any of emailDomains.
type SignIn struct {
	// groups as the IdP names them in the groups claim.
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=256
	// +listType=atomic
	// +optional
	Groups []string `json:"groups,omitempty"`

	// emailDomains are domains of users' e-mail addresses (example.com: not its subdomains).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z0-9]([-A-Za-z0-9.]*[A-Za-z0-9])?$`
	// +listType=atomic
	// +optional
	EmailDomains []string `json:"emailDomains,omitempty"`
}

// BasicAuth is a rule's HTTP Basic authentication.
type BasicAuth struct {
	// realm is shown by browsers in their password prompt (default "Restricted").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[^"\\\x00-\x1f\x7f]+$`
	// +optional
	Realm string `json:"realm,omitempty"`
}
