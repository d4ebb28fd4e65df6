package pool

import (
	"context"
	"fmt"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A pod told of the index whose /sites still lacks part of it is told again (step_retell.go): pool pod 1 and the
// fetcher do not report site b, pod 2 reports both sites at the entries rendered. Each move of the controller's
// clock by retellAfter tells pod 1 and the fetcher the revision once more, up to maxRetells; after that, and for
// pod 2 all along, nothing is patched. A change of b's entry is a new revision: every pod is told it once, and pod
// 1, which reports b's older entry, is told it again from a count of zero.
func TestIndexToldAgainToPodsThatLackIt(t *testing.T) {
	poolNS, tenant := namespace(t, uniqueName("pool")), namespace(t, uniqueName("tenant"))
	pool := createPool(t, poolNS, []string{tenant}, 2)
	gitSite(t, tenant, "a", pool.Name)
	b := gitSite(t, tenant, "b", pool.Name)
	a, bID := poolindex.ID(tenant, "a"), poolindex.ID(tenant, "b")
	index := waitIndex(t, pool, func(index map[string]poolindex.Site) error {
		if len(index) != 2 {
			return fmt.Errorf("index holds %v", keys(index))
		}
		return nil
	})
	entry := func(index map[string]poolindex.Site, id string) map[string]any {
		return map[string]any{"id": id, "state": "memory", "entryRevision": entryRevision(t, index[id])}
	}
	s1, s2 := newSitesServer(t, poolNS, pool.Name+"-1"), newSitesServer(t, poolNS, pool.Name+"-2")
	f := newSitesServer(t, poolNS, pool.Name+"-fetcher-1")
	s1.answer(entry(index, a))
	s2.answer(entry(index, a), entry(index, bID))
	f.answer(map[string]any{"id": a, "commit": commit, "bundle": bundleA})
	server := getDeployment(t, poolNS, poolplacement.ServerName(pool.Name))
	lagging, current := runPod(t, server, pool.Name+"-1"), runPod(t, server, pool.Name+"-2")
	fetcher := runPod(t, getDeployment(t, poolNS, poolplacement.FetcherName(pool.Name)), pool.Name+"-fetcher-1")

	rev := storedIndexRevision(t, pool)
	wantTold(t, "every pod told of the index", map[*corev1.Pod]string{lagging: rev, current: rev, fetcher: rev})
	currentVersion := current.ResourceVersion
	for n := 1; n <= maxRetells; n++ {
		poolClock.SetTime(poolClock.Now().Add(retellAfter))
		wantTold(t, fmt.Sprintf("re-tell %d", n), map[*corev1.Pod]string{lagging: toldValue(rev, n), current: rev, fetcher: toldValue(rev, n)})
	}
	// At the cap, a pass that began after the clock moved again re-tells nothing: the second read of pod 1 after
	// the move is a pass that began after it, the third one that began after that pass ended.
	poolClock.SetTime(poolClock.Now().Add(retellAfter))
	passes(t, s1, 3)
	checkTold(t, "nothing more at the cap", map[*corev1.Pod]string{lagging: toldValue(rev, maxRetells), current: rev, fetcher: toldValue(rev, maxRetells)})
	if current.ResourceVersion != currentVersion {
		t.Errorf("pod 2, which has the whole index, was written again: resourceVersion %s, then %s", currentVersion, current.ResourceVersion)
	}
	if got := testutil.ToFloat64(indexRetells.WithLabelValues(pool.Name)); got != 2*maxRetells {
		t.Errorf("hyperstatic_pool_index_retells_total %v, want %d", got, 2*maxRetells)
	}

	// b's entry changes (another ref): a new revision. Pod 1 reports b at its older entry, the fetcher now both.
	s1.answer(entry(index, a), entry(index, bID))
	f.answer(map[string]any{"id": a, "commit": commit, "bundle": bundleA}, map[string]any{"id": bID, "commit": commit, "bundle": bundleB})
	updateSite(t, b, func(s *v1alpha1.StaticSite) { s.Spec.Content.Git.Ref = "release" })
	index = waitIndex(t, pool, func(next map[string]poolindex.Site) error {
		if entryRevision(t, next[bID]) == entryRevision(t, index[bID]) {
			return fmt.Errorf("b's entry unchanged: %+v", next[bID])
		}
		return nil
	})
	next := storedIndexRevision(t, pool)
	wantTold(t, "every pod told of the new index", map[*corev1.Pod]string{lagging: next, current: next, fetcher: next})
	s2.answer(entry(index, a), entry(index, bID))
	poolClock.SetTime(poolClock.Now().Add(retellAfter))
	wantTold(t, "pod 1 told the new index again", map[*corev1.Pod]string{lagging: toldValue(next, 1), current: next, fetcher: next})
	passes(t, s1, 3)
	checkTold(t, "pod 2 and the fetcher not told again", map[*corev1.Pod]string{lagging: toldValue(next, 1), current: next, fetcher: next})
	if got := testutil.ToFloat64(indexRetells.WithLabelValues(pool.Name)); got != 2*maxRetells+1 {
		t.Errorf("hyperstatic_pool_index_retells_total %v, want %d", got, 2*maxRetells+1)
	}
}

// waitIndex reads the pool's index until check passes, and returns it.
func waitIndex(t *testing.T, pool *v1alpha1.StaticSitePool, check func(map[string]poolindex.Site) error) map[string]poolindex.Site {
	t.Helper()
	var index map[string]poolindex.Site
	testenv.Eventually(t, "the index", func() error {
		var err error
		if index, err = indexIDs(t, pool); err != nil {
			return err
		}
		return check(index)
	})
	return index
}

// wantTold waits until each pod's annotationIndexRevision is the value given (each pod read back into its
// pointer).
func wantTold(t *testing.T, what string, want map[*corev1.Pod]string) {
	t.Helper()
	testenv.Eventually(t, what, func() error { return toldAre(want) })
}

// checkTold is wantTold without the wait: each pod's annotation is the value given now.
func checkTold(t *testing.T, what string, want map[*corev1.Pod]string) {
	t.Helper()
	if err := toldAre(want); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func toldAre(want map[*corev1.Pod]string) error {
	for p, v := range want {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if got := p.Annotations[annotationIndexRevision]; got != v {
			return fmt.Errorf("pod %s told %q, want %q", p.Name, got, v)
		}
	}
	return nil
}
