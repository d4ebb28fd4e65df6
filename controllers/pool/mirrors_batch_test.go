package pool

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A batch takes the rewrites of existing mirrors first, then the new ones, each group in the order given, at most n.
func TestMirrorBatchOrder(t *testing.T) {
	w := func(name string, listed bool) mirrorWrite { return mirrorWrite{name: name, listed: listed} }
	names := func(ws []mirrorWrite) (out []string) {
		for _, x := range ws {
			out = append(out, x.name)
		}
		return out
	}
	writes := []mirrorWrite{w("new-a", false), w("old-b", true), w("new-c", false), w("old-d", true)}
	now, later := batchOf(writes, 3)
	if !slices.Equal(names(now), []string{"old-b", "old-d", "new-a"}) || !slices.Equal(names(later), []string{"new-c"}) {
		t.Errorf("batch %v, later %v", names(now), names(later))
	}
	if now, later := batchOf(writes, 10); len(now) != 4 || later != nil {
		t.Errorf("all fit: %v, later %v", names(now), names(later))
	}
}

// Many new ConfigMap sites, one mirror a pass (the suite's MirrorsPerPass): every site ends in the index with its
// mirrors, and whenever the index is read, each ConfigMap site it names has all its mirrors already (a site waits
// out of the index for its batch, so the fetcher never reads an entry whose content is not in the pool namespace).
func TestMirrorsInBatchesNeverIndexAnUnmirroredSite(t *testing.T) {
	ctx := context.Background()
	poolNS, tenant := namespace(t, uniqueName("pool")), namespace(t, uniqueName("tenant"))
	pool := createPool(t, poolNS, []string{"*"}, 2)
	const sites = 4
	for i := range sites {
		createConfigMap(t, tenant, fmt.Sprintf("pages-%d", i), map[string]string{"index.html": fmt.Sprint(i)}, nil)
		createConfigMap(t, tenant, fmt.Sprintf("assets-%d", i), map[string]string{"a.css": fmt.Sprint(i)}, nil)
		configMapSite(t, tenant, fmt.Sprintf("site-%d", i), pool.Name, fmt.Sprintf("pages-%d", i), fmt.Sprintf("assets-%d", i))
	}
	testenv.Eventually(t, "every site in the index with its mirrors", func() error {
		index, err := indexIDs(t, pool)
		if err != nil {
			return err
		}
		for id := range index {
			var i int
			if _, err := fmt.Sscanf(id, tenant+".site-%d", &i); err != nil {
				return fmt.Errorf("index id %q: %w", id, err)
			}
			for _, cm := range []string{fmt.Sprintf("pages-%d", i), fmt.Sprintf("assets-%d", i)} {
				key := client.ObjectKey{Namespace: poolNS, Name: poolindex.MirrorName(pool.Name, id, cm)}
				if err := k8s.Get(ctx, key, &corev1.ConfigMap{}); err != nil {
					t.Fatalf("the index names %s before its mirror %s exists: %v", id, key.Name, err)
				}
			}
		}
		if len(index) != sites {
			return fmt.Errorf("%d of %d sites in the index", len(index), sites)
		}
		return nil
	})
	waitPool(t, pool.Name, "every site counted", func(p *v1alpha1.StaticSitePool) error {
		if p.Status.Sites != sites {
			return fmt.Errorf("sites %d", p.Status.Sites)
		}
		return nil
	})
}
