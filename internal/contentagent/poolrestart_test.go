package contentagent_test

import (
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

// A restarted pool fetcher serves the bundles of its last run at once, without fetching (its polls are spread
// over the interval), removes what a departed site left, and fetches at once a site whose source changed while it
// was down. A restarted puller keeps its trees and downloads nothing it has.
func TestPoolRestarts(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	repo.Push("refs/heads/main", repo.Commit("v1", map[string]gts.File{"index.html": gts.Regular("v1\n"), "sub/a.html": gts.Regular("a\n")}), false)
	kept, moved := poolGitSite("ns.kept", repo.URL, ""), poolGitSite("ns.moved", repo.URL, "")
	index := t.TempDir()
	writeIndex(t, index, []poolindex.Site{kept, moved})
	dir := t.TempDir()
	first := startPoolFetcher(t, index, func(p *contentagent.PoolFetcher) { p.Dir = dir })
	keptBundle := first.fetched(t, kept.ID, func(e contentagent.PoolSite) bool { return e.Bundle != "" }).Bundle
	first.fetched(t, moved.ID, func(e contentagent.PoolSite) bool { return e.Bundle != "" })
	pod := startPoolPuller(t, index, first.url)
	pod.installed(t, kept.ID, keptBundle)
	if !pod.takeReady(kept.ID) {
		t.Fatal("no signal of the first install")
	}
	first.stop()
	pod.stop()

	if err := os.MkdirAll(filepath.Join(dir, "ns.departed", "bundles"), 0o755); err != nil {
		t.Fatal(err)
	}
	moved.Content.Git.Path = "sub" // changed while the fetcher was down
	writeIndex(t, index, []poolindex.Site{kept, moved})
	var attempts atomic.Int32
	var keptAttempted atomic.Bool
	second := startPoolFetcher(t, index, func(p *contentagent.PoolFetcher) {
		p.Dir = dir
		p.OnAttempt = func(e contentagent.PoolSite) {
			attempts.Add(1)
			if e.ID == kept.ID {
				keptAttempted.Store(true)
			}
		}
	})
	e := second.fetched(t, kept.ID, func(e contentagent.PoolSite) bool { return e.Bundle != "" })
	if e.Bundle != keptBundle {
		t.Errorf("restarted fetcher serves %+v, want the bundle of its last run %s", e, keptBundle)
	}
	second.fetched(t, moved.ID, func(e contentagent.PoolSite) bool { return attempts.Load() > 0 && e.Error == "" })
	if tree := second.fetcher.Sites(); len(tree.Sites) != 2 {
		t.Errorf("sites %+v", tree)
	}
	movedBundle, _ := siteOf(second.fetcher.Sites(), moved.ID)
	eventually(t, func() string { return "the departed site's directory is still there" }, func() bool {
		_, err := os.Stat(filepath.Join(dir, "ns.departed"))
		return os.IsNotExist(err)
	})
	time.Sleep(100 * time.Millisecond) // five of the test's ticks: a due poll would have run
	if keptAttempted.Load() {
		t.Error("the restarted fetcher fetched an unchanged site at once; its first poll should wait")
	}

	again := startPoolPullerIn(t, index, second.url, pod.dir)
	again.installed(t, moved.ID, movedBundle.Bundle)
	if got := again.tree(t, moved.ID); len(got) != 1 || got["a.html"] != "a\n" {
		t.Errorf("moved site's tree after its path changed: %v", got)
	}
	again.installed(t, kept.ID, keptBundle)
	if again.takeReady(kept.ID) {
		t.Error("the restarted puller signalled a site whose tree it already had")
	}
}
