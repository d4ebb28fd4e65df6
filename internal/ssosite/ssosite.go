// Package ssosite is how a StaticSite's single sign-on (spec.server.access.sso, docs/design/sso.md) is wired, the
// one place every part of the operator takes it from, so the server's site value, the login agent's flags, the
// Service, the route and the pod volume agree:
//
//   - The agent (content-agent sso) runs as a container of every server pod, listening on v1alpha1.SSOPort, its
//     endpoints under Prefix. The site's Service publishes that port as v1alpha1.SSOPortName.
//   - Its users reach it on the site's first hostname (spec.hostnames[0]; the CRD requires one for sso, not a
//     wildcard). With spec.route, through the route: a rule for Prefix + "/" to the sso port beside the
//     catch-all, so the login is a path of the site (LoginURL is a site path). Without a route (a Service, a
//     LoadBalancer), on the sso port of that hostname: LoginURL is absolute, and the agent serves TLS on it with
//     the site's certificate when spec.tls is set (cookies ignore ports, RFC 6265 §8.5, so the cookie it sets
//     there is sent to the site's own port).
//   - The scheme is https with spec.tls, else http (the cookie then travels in clear: docs/design/sso.md).
//   - The Secret spec.server.access.sso.secretName holds v1alpha1.SSOClientSecretKey and SSOSessionKeysKey. The
//     server reads the session keys as KeysFile beside its site value (the projected site-value volume); the
//     agent mounts both keys at AgentSecretDir. Neither is ever copied.
//   - The cookie carries only the groups some rule names (KeepGroups), so a user in hundreds of IdP groups still
//     fits in one cookie when the rules name groups.
package ssosite

import (
	"slices"
	"strconv"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

const (
	// Prefix is the path of the agent's login, callback and logout endpoints, on the site's host.
	Prefix = "/.hyperstatic/sso"
	// KeysFile is the site value's access.sso.keysFile: relative, so the server reads it beside site.json.
	KeysFile = v1alpha1.SSOSessionKeysKey
	// AgentSecretDir is where the agent container mounts the Secret's two keys.
	AgentSecretDir = "/etc/hyperstatic/sso"
	// ContainerName is the agent's container in the server pod.
	ContainerName = "sso"
)

// Enabled says whether site signs users in: spec.server.access.sso is set.
func Enabled(site *v1alpha1.StaticSite) bool {
	a := site.Spec.Server.Access
	return a != nil && a.SSO != nil
}

// Routed says whether users reach the agent through the site's route (a path of the site) rather than on the sso
// port of the Service.
func Routed(site *v1alpha1.StaticSite) bool { return site.Spec.Route != nil }

func scheme(site *v1alpha1.StaticSite) string {
	if site.Spec.TLS != nil {
		return "https"
	}
	return "http"
}

func host(site *v1alpha1.StaticSite) string {
	if len(site.Spec.Hostnames) == 0 {
		return "" // the CRD refuses sso without a hostname
	}
	return string(site.Spec.Hostnames[0])
}

// SiteURL is the site's origin as users reach it, where the agent sends them back after the login: through the
// route the default port of the scheme; on the Service, its http or https port, written out unless the default.
func SiteURL(site *v1alpha1.StaticSite) string {
	u := scheme(site) + "://" + host(site)
	if Routed(site) {
		return u
	}
	port, deflt := site.Spec.Service.Port, int32(80)
	if site.Spec.TLS != nil {
		port, deflt = site.Spec.Service.HTTPSPort, v1alpha1.DefaultHTTPSServicePort
	}
	if port != 0 && port != deflt {
		u += ":" + strconv.Itoa(int(port))
	}
	return u
}

// agentBase is the origin and prefix of the agent's endpoints as users reach them.
func agentBase(site *v1alpha1.StaticSite) string {
	if Routed(site) {
		return SiteURL(site) + Prefix
	}
	return scheme(site) + "://" + host(site) + ":" + strconv.Itoa(v1alpha1.SSOPort) + Prefix
}

// LoginURL is the site value's access.sso.loginURL: a path of the site through a route, else absolute on the sso
// port.
func LoginURL(site *v1alpha1.StaticSite) string {
	if Routed(site) {
		return Prefix + "/login"
	}
	return agentBase(site) + "/login"
}

// CallbackURL is the redirect URI the IdP sends users back to, which the site's owner registers with the client.
func CallbackURL(site *v1alpha1.StaticSite) string { return agentBase(site) + "/callback" }

// AgentTLS says whether the agent serves TLS itself: on the Service's sso port with spec.tls (through a route the
// route's gateway ends TLS and the agent speaks plain HTTP, like the server's http port).
func AgentTLS(site *v1alpha1.StaticSite) bool { return !Routed(site) && site.Spec.TLS != nil }

// KeepGroups are the groups some signIn rule names, sorted: the only ones the agent puts in the cookie. Empty when
// no rule names a group, and then the agent keeps them all (its --keep-groups default).
func KeepGroups(site *v1alpha1.StaticSite) []string {
	var groups []string
	if a := site.Spec.Server.Access; a != nil {
		for _, r := range a.Rules {
			if r.SignIn != nil {
				groups = append(groups, r.SignIn.Groups...)
			}
		}
	}
	slices.Sort(groups)
	return slices.Compact(groups)
}
