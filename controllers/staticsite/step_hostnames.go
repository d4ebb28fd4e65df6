package staticsite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/hostclaim"
)

// hostnameClaims is what the hostname step decided: the hostnames the site holds (status.hostnames), the spec's
// spellings of them, whether it holds its previews' wildcard (together what the route carries: RouteHosts) and
// those another site keeps.
type hostnameClaims struct {
	held         []string
	routed       []v1alpha1.Hostname
	previewsHeld bool
	conflicts    []hostclaim.Conflict
}

// reconcileHostnames decides which of spec.hostnames the site holds (internal/hostclaim): the first site to claim
// a hostname keeps it, a later claimant's route leaves it out. It reads the other sites from the cache only.
func (r *Reconciler) reconcileHostnames(ctx context.Context, st *observation) error {
	site := st.site
	self := r.claimantOf(site)
	st.hostnames = &hostnameClaims{}
	if len(self.Claims) == 0 {
		return nil
	}
	sites, err := r.sitesSharing(ctx, types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, self.Claims)
	if err != nil {
		return fmt.Errorf("list sites sharing hostnames: %w", err)
	}
	others := make([]hostclaim.Claimant, 0, len(sites))
	for i := range sites {
		others = append(others, r.claimantOf(&sites[i]))
	}
	held, conflicts := hostclaim.Resolve(self, others)
	st.hostnames = &hostnameClaims{held: held, conflicts: conflicts, routed: routedHostnames(site.Spec.Hostnames, held),
		previewsHeld: site.Spec.Previews != nil && slices.Contains(held, hostclaim.Normalize(string(desired.PreviewsWildcard(site))))}
	return nil
}

// routedHostnames are the spec's hostnames whose normalised form is held, as written, each once.
func routedHostnames(spec []v1alpha1.Hostname, held []string) []v1alpha1.Hostname {
	var out []v1alpha1.Hostname
	seen := map[string]bool{}
	for _, h := range spec {
		n := hostclaim.Normalize(string(h))
		if slices.Contains(held, n) && !seen[n] {
			seen[n] = true
			out = append(out, h)
		}
	}
	return out
}

// conflictMessage names each hostname the site does not get and the site that keeps it.
func conflictMessage(conflicts []hostclaim.Conflict) string {
	parts := make([]string, 0, len(conflicts))
	for _, c := range conflicts {
		how := "is held by"
		if c.Pending {
			how = "is claimed first by" // its pass has not recorded it yet
		}
		parts = append(parts, fmt.Sprintf("hostname %s %s StaticSite %s", c.Hostname, how, c.Holder))
	}
	return strings.Join(parts, "; ")
}
