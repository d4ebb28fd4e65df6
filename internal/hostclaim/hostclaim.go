// Package hostclaim decides which StaticSite holds a hostname when several claim it.
//
// The contract:
//
//   - A site claims the hostnames of its spec.hostnames (and, with spec.previews, the wildcard "*.<domain>" its
//     route carries for the previews) while it has a spec.route or a pool, or asks cert-manager
//     for a certificate for them (spec.tls.issuerRef), and the tenancy policy admits it; without any of these the
//     operator neither routes a name to it nor has a certificate issued for one, so it takes nothing from anyone.
//     Hostnames are compared normalised (Normalize): lower case, without a trailing dot.
//   - A site holds the hostnames its status.hostnames lists: the operator's own record of what it accepted for the
//     site (tenants cannot write the status subresource). A held hostname stays held until the holder's next
//     complete pass drops it (the site gave it up, lost its route, or is deleted).
//   - A claim conflicts with any other site that holds the same hostname: the first to claim keeps it, whatever
//     the sites' ages, so an old site that adds a hostname another site already serves does not take it over.
//   - Two claims of which neither is held yet (both made since the last passes) are ordered by the sites'
//     creation time, then namespace/name: the earlier wins, and both reconcilers reach the same answer from the
//     same objects. The same order settles the rare case of two sites that both hold a hostname (each accepted it
//     before it saw the other's claim): the later one gives it up.
//   - Only identical hostnames conflict. A wildcard ("*.example.com") does not conflict with a name under it
//     ("www.example.com"): route controllers (Ingress and Gateway API alike) prefer the exact match, so the
//     specific name reaches its own site and the wildcard takes the rest.
//
// Resolve is pure: the controller gathers the other claimants from its cache (a field index on the normalised
// hostnames), and the answer depends on nothing else.
package hostclaim

import (
	"slices"
	"strings"
	"time"
)

// Normalize is a hostname as claims compare it: lower case, without a trailing dot.
func Normalize(h string) string {
	return strings.ToLower(strings.TrimSuffix(h, "."))
}

// IsWildcard says whether a hostname is a "*." wildcard.
func IsWildcard(h string) bool { return strings.HasPrefix(h, "*.") }

// Claimant is one site as Resolve sees it.
type Claimant struct {
	// Site is the site's namespace/name.
	Site string
	// Created is the site's creationTimestamp.
	Created time.Time
	// Claims are the normalised hostnames the site claims now (empty: it claims none, e.g. no spec.route or a
	// spec the policy refuses).
	Claims []string
	// Holds are the normalised hostnames its status records as accepted.
	Holds []string
}

// before orders claims that neither holds: earlier creation, then namespace/name.
func (c *Claimant) before(o *Claimant) bool {
	if !c.Created.Equal(o.Created) {
		return c.Created.Before(o.Created)
	}
	return c.Site < o.Site
}

// Conflict is a hostname a site claims and does not get.
type Conflict struct {
	// Hostname is the normalised hostname.
	Hostname string
	// Holder is the namespace/name of the site that has it.
	Holder string
	// Pending: the holder has not recorded it yet; it wins because its claim comes first (creation, then name).
	Pending bool
}

// Resolve returns the hostnames self gets (in the order of its claims, each once) and those it does not, each
// with the site that keeps it. others are the other sites that claim or hold any of self's claims (self among them
// is ignored).
func Resolve(self Claimant, others []Claimant) (held []string, conflicts []Conflict) {
	seen := map[string]bool{}
	for _, h := range self.Claims {
		if seen[h] {
			continue
		}
		seen[h] = true
		if c, lost := blocker(&self, h, others); lost {
			conflicts = append(conflicts, c)
			continue
		}
		held = append(held, h)
	}
	return held, conflicts
}

// blocker finds the site that keeps h from self: a holder first (the earliest, when several hold it), else the
// earliest pending claim before self's.
func blocker(self *Claimant, h string, others []Claimant) (Conflict, bool) {
	selfHolds := slices.Contains(self.Holds, h)
	var holder, pending *Claimant
	for i := range others {
		o := &others[i]
		if o.Site == self.Site {
			continue
		}
		switch {
		case slices.Contains(o.Holds, h):
			if selfHolds && self.before(o) {
				continue // both hold it: the earlier keeps it
			}
			if holder == nil || o.before(holder) {
				holder = o
			}
		case !selfHolds && slices.Contains(o.Claims, h) && o.before(self):
			if pending == nil || o.before(pending) {
				pending = o
			}
		}
	}
	switch {
	case holder != nil:
		return Conflict{Hostname: h, Holder: holder.Site}, true
	case pending != nil:
		return Conflict{Hostname: h, Holder: pending.Site, Pending: true}, true
	}
	return Conflict{}, false
}
