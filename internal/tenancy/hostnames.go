package tenancy

import (
	"fmt"
	"regexp"
	"strings"

	"hyperstatic.dev/hyperstatic/internal/hostclaim"
)

// NamespaceVariable in a hostname pattern stands for the site's namespace.
const NamespaceVariable = "{namespace}"

// patternSyntax: DNS labels, each possibly holding {namespace}, after an optional leading "*." (normalised: lower
// case, no trailing dot). A "*" anywhere else would match nothing the CRD admits, so it is a typo.
var patternSyntax = regexp.MustCompile(`^(\*\.)?([a-z0-9-]|\{namespace\})+(\.([a-z0-9-]|\{namespace\})+)*$`)

// validate refuses a pattern that is neither Any nor a hostname pattern.
func (h HostnameLimits) validate() error {
	for _, p := range h.Patterns {
		if p != Any && !patternSyntax.MatchString(hostclaim.Normalize(p)) {
			return fmt.Errorf("tenancy policy: hostnames.patterns entry %q is not a hostname pattern (a name, or \"*.\" and a suffix, "+
				"with %s for the site's namespace; or \"*\" for any)", p, NamespaceVariable)
		}
	}
	return nil
}

// allowed says whether a site of namespace ns may claim the normalised hostname host.
func (h HostnameLimits) allowed(ns, host string) bool {
	for _, p := range h.Patterns {
		if p == Any {
			return true
		}
		p = hostclaim.Normalize(strings.ReplaceAll(p, NamespaceVariable, ns))
		if suffix, ok := strings.CutPrefix(p, "*"); ok {
			// "*.team.example.com": any name of one or more labels under the suffix, a wildcard such as
			// "*.team.example.com" or "*.a.team.example.com" included (it covers only names the pattern admits).
			if len(host) > len(suffix) && strings.HasSuffix(host, suffix) {
				return true
			}
			continue
		}
		if host == p {
			return true
		}
	}
	return false
}

// checkHostnames: no wildcard unless allowed; each hostname under a pattern, with the site's namespace.
func (p Policy) checkHostnames(vs *Violations, ns string, hosts []string) {
	h := p.Hostnames
	for i, raw := range hosts {
		field := fmt.Sprintf("spec.hostnames[%d]", i)
		host := hostclaim.Normalize(raw)
		if hostclaim.IsWildcard(host) && !h.Wildcards {
			vs.add(field, "wildcard hostname %q is not allowed: claim exact names", raw)
			continue
		}
		if !h.allowed(ns, host) {
			vs.add(field, "hostname %q is not one namespace %s may claim (allowed: %s)", raw, ns, shown(h.Patterns))
		}
	}
}
