package pool

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Every shard is rendered, empty ones included, each site in its ShardOf shard with its entry (hosts from its
// Service names, the site value, limits, content); a change to one site rewrites its shard only, and passes that
// change nothing write nothing.
func TestIndexShardsOnlyTheChangedShardIsRewritten(t *testing.T) {
	poolNS, tenant := namespace(t, uniqueName("pool")), namespace(t, uniqueName("tenant"))
	pool := createPool(t, poolNS, []string{tenant}, 4)
	createConfigMap(t, tenant, "pages", map[string]string{"index.html": "hi"}, nil)
	names := []string{"alpha", "bravo", "charlie", "delta", "echo"}
	for _, n := range names {
		configMapSite(t, tenant, n, pool.Name, "pages")
	}
	var index map[string]poolindex.Site
	testenv.Eventually(t, "every site in the index", func() error {
		var err error
		if index, err = indexIDs(t, pool); err != nil {
			return err
		}
		if len(index) != len(names) {
			return fmt.Errorf("index holds %d sites, want %d", len(index), len(names))
		}
		return nil
	})
	alpha := index[poolindex.ID(tenant, "alpha")]
	wantHosts := poolindex.ServiceHosts(tenant, "alpha", DefaultClusterDomain)
	if strings.Join(alpha.Hosts, ",") != strings.Join(sortedCopy(wantHosts), ",") {
		t.Errorf("hosts %v, want the Service names %v", alpha.Hosts, wantHosts)
	}
	if len(alpha.Content.ConfigMaps) != 1 || alpha.Content.ConfigMaps[0].Name != poolindex.MirrorName(pool.Name, alpha.ID, "pages") {
		t.Errorf("content %+v, want the mirror of pages", alpha.Content)
	}
	// The status names the index as the shards now hold it (the sites enter the index a mirror batch at a time,
	// so a status counting every site may still name the index of an earlier batch).
	p := waitPool(t, pool.Name, "sites counted, the index revision the shards'", func(p *v1alpha1.StaticSitePool) error {
		if p.Status.Sites != int32(len(names)) || p.Status.IndexRevision != storedIndexRevision(t, pool) {
			return fmt.Errorf("status %+v, the shards' revision %s", p.Status, storedIndexRevision(t, pool))
		}
		return nil
	})
	before := p.Status.IndexRevision

	versions := func() []string {
		var v []string
		for i := range 4 {
			_, cm, err := shard(t, pool, i)
			testenv.Must(t, err)
			v = append(v, cm.ResourceVersion)
		}
		return v
	}
	v0 := versions()
	// Passes keep running (the served refresh, every second here): none of them writes a shard.
	time.Sleep(2500 * time.Millisecond)
	if v := versions(); strings.Join(v, ",") != strings.Join(v0, ",") {
		t.Fatalf("shards rewritten without a change: %v, then %v", v0, v)
	}

	// One site's rules change: its shard alone is rewritten, with the new value.
	site := &v1alpha1.StaticSite{}
	site.Namespace, site.Name = tenant, "charlie"
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Server.CleanURLs = true })
	id := poolindex.ID(tenant, "charlie")
	changed := poolindex.ShardOf(id, 4)
	want := sitevalue.Render(site).Bytes
	testenv.Eventually(t, "the new value in the index", func() error {
		s, _, err := shard(t, pool, changed)
		if err != nil {
			return err
		}
		for _, e := range s.Sites {
			if e.ID == id && string(e.Value) == string(want) {
				return nil
			}
		}
		return fmt.Errorf("shard %d does not hold %s with value %s", changed, id, want)
	})
	v1 := versions()
	for i := range 4 {
		if (v1[i] != v0[i]) != (i == changed) {
			t.Errorf("shard %d: resourceVersion %s then %s; only shard %d should be rewritten", i, v0[i], v1[i], changed)
		}
	}
	p = waitPool(t, pool.Name, "a new index revision", func(p *v1alpha1.StaticSitePool) error {
		if p.Status.IndexRevision == before {
			return fmt.Errorf("index revision still %s", before)
		}
		return nil
	})
	waitPoolEvent(t, pool.Name, fmt.Sprintf("IndexUpdated index %s: shard(s) %d rewritten", p.Status.IndexRevision, changed))
	if c := meta.FindStatusCondition(p.Status.Conditions, v1alpha1.ConditionStalled); c != nil {
		t.Errorf("Stalled: %+v", *c)
	}
	if p.Status.ObservedGeneration != p.Generation {
		t.Errorf("observedGeneration %d, generation %d", p.Status.ObservedGeneration, p.Generation)
	}
}

func sortedCopy(s []string) []string {
	out := slices.Clone(s)
	slices.Sort(out)
	return out
}
