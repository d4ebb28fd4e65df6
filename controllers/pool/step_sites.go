package pool

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// ReasonHostConflict refuses a site one of whose hosts another site of the pool (first by id) already has: the
// operator's hostname claims prevent it, but a claim can move between two passes.
const ReasonHostConflict = "HostnameConflict"

// reconcileSites lists the sites that ask for the pool or still run in it (the field index indexPool) and admits each with
// poolplacement.Check, the same decision the site controller makes; an admitted site's entry is
// poolplacement.Entry. The result is sorted by id, so the index does not depend on the cache's order.
func (r *Reconciler) reconcileSites(ctx context.Context, o *observation) error {
	sites := &v1alpha1.StaticSiteList{}
	if err := r.List(ctx, sites, client.MatchingFields{indexPool: o.pool.Name}); err != nil {
		return fmt.Errorf("list the sites of the pool: %w", err)
	}
	slices.SortFunc(sites.Items, func(a, b v1alpha1.StaticSite) int {
		return strings.Compare(poolindex.ID(a.Namespace, a.Name), poolindex.ID(b.Namespace, b.Name))
	})
	hosts := map[string]string{}
	for i := range sites.Items {
		site := &sites.Items[i]
		if !site.DeletionTimestamp.IsZero() {
			continue
		}
		// The tenancy policy first, as the site controller checks it before anything: a pool must not serve what
		// the platform forbids a tenant (a Git URL outside its allowed prefixes, a hostname it may not claim).
		// A site moving out that breaks it leaves the pool at once.
		if vs := r.policy().CheckSite(site); len(vs) > 0 {
			if poolplacement.Wants(site) == o.pool.Name {
				o.refused = append(o.refused, refusedSite{namespace: site.Namespace, name: site.Name,
					refusal: &poolplacement.Refusal{Reason: v1alpha1.ReasonPolicyViolation, Field: "spec", Message: vs.Error()}})
			}
			continue
		}
		// A site that asks for the pool, or that moves out of it and still runs here until its own pods serve
		// (its status says so): the site controller switches its Service only then.
		if refusal := poolplacement.Keeps(o.pool, site); refusal != nil {
			if poolplacement.Wants(site) != o.pool.Name {
				continue // moving out and no longer admissible: not counted as refused by this pool
			}
			o.refused = append(o.refused, refusedSite{namespace: site.Namespace, name: site.Name, refusal: refusal})
			continue
		}
		// Entry reads the content from the spec: a site moving out keeps its Git or ConfigMap content (Keeps).
		entry := poolplacement.Entry(o.pool, site, o.tun.clusterDomain)
		if refusal := claimHosts(hosts, entry); refusal != nil {
			o.refused = append(o.refused, refusedSite{namespace: site.Namespace, name: site.Name, refusal: refusal})
			continue
		}
		o.admitted = append(o.admitted, admittedSite{site: site, entry: entry})
	}
	return nil
}

// claimHosts records entry's hosts as its own, or refuses it when another site already has one of them.
func claimHosts(hosts map[string]string, entry poolindex.Site) *poolplacement.Refusal {
	for _, h := range entry.Hosts {
		if other, ok := hosts[h]; ok {
			return &poolplacement.Refusal{Reason: ReasonHostConflict, Field: "spec.hostnames",
				Message: fmt.Sprintf("host %q is also a host of %s in the pool", h, other)}
		}
	}
	for _, h := range entry.Hosts {
		hosts[h] = entry.ID
	}
	return nil
}
