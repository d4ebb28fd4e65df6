package pool

import (
	"fmt"
	"testing"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A site is in the index only when poolplacement.Check admits it: a namespace the pool does not list, or a feature
// a pool site cannot have, keeps it out and counts it in status.refusedSites, with a Warning naming it. A site that
// becomes admissible joins the index.
func TestAdmission(t *testing.T) {
	poolNS, admitted, other := namespace(t, uniqueName("pool")), namespace(t, uniqueName("tenant")), namespace(t, uniqueName("other"))
	pool := createPool(t, poolNS, []string{admitted}, 2)
	gitSite(t, admitted, "in", pool.Name)
	gitSite(t, other, "outsider", pool.Name)
	tls := gitSite(t, admitted, "with-tls", pool.Name)
	updateSite(t, tls, func(s *v1alpha1.StaticSite) { s.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "cert"} })

	waitPool(t, pool.Name, "one placed, two refused", func(p *v1alpha1.StaticSitePool) error {
		if p.Status.Sites != 1 || p.Status.RefusedSites != 2 {
			return fmt.Errorf("sites %d, refused %d; want 1 and 2", p.Status.Sites, p.Status.RefusedSites)
		}
		return nil
	})
	index, err := indexIDs(t, pool)
	testenv.Must(t, err)
	if _, ok := index[poolindex.ID(admitted, "in")]; !ok || len(index) != 1 {
		t.Errorf("index holds %v, want only %s", keys(index), poolindex.ID(admitted, "in"))
	}
	waitPoolEvent(t, pool.Name, "SitesRefused 2 sites asked for the pool and were refused")
	waitPoolEvent(t, pool.Name, other+"/outsider (NamespaceNotAdmitted)")
	waitPoolEvent(t, pool.Name, admitted+"/with-tls (FeatureNotPooled)")

	// The site drops TLS: admitted.
	updateSite(t, tls, func(s *v1alpha1.StaticSite) { s.Spec.TLS = nil })
	waitPool(t, pool.Name, "two placed, one refused", func(p *v1alpha1.StaticSitePool) error {
		if p.Status.Sites != 2 || p.Status.RefusedSites != 1 {
			return fmt.Errorf("sites %d, refused %d; want 2 and 1", p.Status.Sites, p.Status.RefusedSites)
		}
		return nil
	})
	testenv.Eventually(t, "with-tls in the index", func() error {
		index, err := indexIDs(t, pool)
		if err != nil {
			return err
		}
		if _, ok := index[poolindex.ID(admitted, "with-tls")]; !ok {
			return fmt.Errorf("index holds %v", keys(index))
		}
		return nil
	})
	waitPoolEvent(t, pool.Name, "SitesAdmitted 2 sites in the pool (was 1)")
}

// The tenancy policy keeps a site out of the index as it keeps it from pods of its own: a pool must not fetch a
// repository the platform forbids.
func TestPolicyKeepsASiteOut(t *testing.T) {
	poolNS, tenant := namespace(t, uniqueName("pool")), namespace(t, uniqueName("tenant"))
	pool := createPool(t, poolNS, []string{tenant}, 2)
	gitSite(t, tenant, "allowed", pool.Name)
	forbidden := gitSite(t, tenant, "forbidden", pool.Name)
	updateSite(t, forbidden, func(s *v1alpha1.StaticSite) { s.Spec.Content.Git.URL = "https://internal.example/x.git" })
	waitPool(t, pool.Name, "one placed, one refused", func(p *v1alpha1.StaticSitePool) error {
		if p.Status.Sites != 1 || p.Status.RefusedSites != 1 {
			return fmt.Errorf("sites %d, refused %d; want 1 and 1", p.Status.Sites, p.Status.RefusedSites)
		}
		return nil
	})
	index, err := indexIDs(t, pool)
	testenv.Must(t, err)
	if _, ok := index[poolindex.ID(tenant, "forbidden")]; ok || len(index) != 1 {
		t.Errorf("index holds %v, want only %s", keys(index), poolindex.ID(tenant, "allowed"))
	}
	waitPoolEvent(t, pool.Name, tenant+"/forbidden ("+v1alpha1.ReasonPolicyViolation+")")
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
