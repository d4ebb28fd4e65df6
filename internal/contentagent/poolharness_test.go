package contentagent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

// poolGitSite is a pool site following branch main of url (path: the served directory), polled hourly: the
// tests trigger its fetches themselves.
func poolGitSite(id, url, path string) poolindex.Site {
	return poolindex.Site{
		ID: id, Hosts: []string{id + ".example"}, Value: json.RawMessage(`{"version":1}`),
		Limits:  poolindex.Limits{MaxFiles: 1000, MaxBytes: 16 << 20, RequestsPerSecond: 100},
		Content: poolindex.Content{Git: &poolindex.GitContent{URL: url, Ref: "main", Path: path, Interval: "1h"}},
	}
}

func poolConfigMapSite(id string, mirrors ...poolindex.ConfigMapContent) poolindex.Site {
	s := poolGitSite(id, "", "")
	s.Content = poolindex.Content{ConfigMaps: mirrors}
	return s
}

// writeIndex writes the index the way kubelet updates the projected volume of the shard ConfigMaps (a new
// ..data directory, one rename): shard i holds shards[i].
func writeIndex(t testing.TB, dir string, shards ...[]poolindex.Site) {
	t.Helper()
	files := map[string]string{}
	for i, sites := range shards {
		data, err := poolindex.Render(i, sites)
		if err != nil {
			t.Fatal(err)
		}
		files[fmt.Sprintf("index-%02d.json", i)] = string(data)
	}
	writeSecretVolume(t, dir, files)
}

// pool is a pool fetcher and its pullers on loopback, as the pool's fetcher pod and server pods would run.
type pool struct {
	index   string
	fetcher *contentagent.PoolFetcher
	url     string
	// stop ends the fetcher as a killed process would (listener closed, loop ended).
	stop func()
}

func startPoolFetcher(t testing.TB, index string, configure ...func(*contentagent.PoolFetcher)) *pool {
	t.Helper()
	p := &pool{index: index}
	p.fetcher = &contentagent.PoolFetcher{
		Index:       &contentagent.IndexDir{Dir: index},
		Dir:         t.TempDir(),
		IndexEvery:  20 * time.Millisecond,
		Tick:        20 * time.Millisecond,
		MinInterval: -1,
	}
	for _, c := range configure {
		c(p.fetcher)
	}
	if err := p.fetcher.Init(); err != nil {
		t.Fatal(err)
	}
	srv, addr := serveOn(t, "127.0.0.1:0", p.fetcher.Handler())
	p.url = "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { p.fetcher.Run(ctx); close(done) }()
	p.stop = sync.OnceFunc(func() { _ = srv.Close(); cancel(); <-done })
	t.Cleanup(p.stop)
	return p
}

type poolPod struct {
	p    *contentagent.PoolPuller
	dir  string
	url  string
	stop func()
}

func startPoolPuller(t testing.TB, index, fetcherURL string) *poolPod {
	t.Helper()
	return startPoolPullerIn(t, index, fetcherURL, t.TempDir())
}

// startPoolPullerIn runs a pool puller over dir, which may hold what an earlier one installed (a restarted
// container).
func startPoolPullerIn(t testing.TB, index, fetcherURL, dir string) *poolPod {
	t.Helper()
	pod := &poolPod{dir: dir}
	pod.p = &contentagent.PoolPuller{
		Index:      &contentagent.IndexDir{Dir: index},
		Dir:        pod.dir,
		FetcherURL: fetcherURL,
		IndexEvery: 20 * time.Millisecond,
		MinBackoff: 20 * time.Millisecond,
		MaxBackoff: 200 * time.Millisecond,
	}
	if err := pod.p.Init(); err != nil {
		t.Fatal(err)
	}
	srv, addr := serveOn(t, "127.0.0.1:0", pod.p.Handler())
	pod.url = "http://" + addr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { pod.p.Run(ctx); close(done) }()
	pod.stop = sync.OnceFunc(func() { _ = srv.Close(); cancel(); <-done })
	t.Cleanup(pod.stop)
	return pod
}

// eventually polls cond until it holds, failing with what() once waitLimit passes.
func eventually(t testing.TB, what func() string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// siteOf is site id's entry in sites (ok false when absent).
func siteOf(sites contentagent.PoolSites, id string) (contentagent.PoolSite, bool) {
	for _, s := range sites.Sites {
		if s.ID == id {
			return s, true
		}
	}
	return contentagent.PoolSite{}, false
}

// fetched waits until the fetcher publishes for site id an entry that cond accepts, and returns it.
func (p *pool) fetched(t testing.TB, id string, cond func(contentagent.PoolSite) bool) contentagent.PoolSite {
	t.Helper()
	var e contentagent.PoolSite
	eventually(t, func() string { return fmt.Sprintf("the fetcher's %s: %+v", id, e) }, func() bool {
		var ok bool
		e, ok = siteOf(p.fetcher.Sites(), id)
		return ok && cond(e)
	})
	return e
}

// installed waits until the pod has installed bundle for site id.
func (pod *poolPod) installed(t testing.TB, id, bundle string) {
	t.Helper()
	eventually(t, func() string { return fmt.Sprintf("pod's sites %+v, want %s at %s", pod.p.Sites(), id, bundle) }, func() bool {
		e, ok := siteOf(pod.p.Sites(), id)
		return ok && e.Bundle == bundle
	})
	target, err := os.Readlink(filepath.Join(pod.dir, id, "current"))
	if err != nil || target != bundle[:16] {
		t.Fatalf("%s/current -> %q (%v), want %s", id, target, err, bundle[:16])
	}
}

// tree is every file and link under dir/<id>/current, by slash path: file content, or "-> target" for a link.
func (pod *poolPod) tree(t testing.TB, id string) map[string]string {
	t.Helper()
	return readTree(t, filepath.Join(pod.dir, id, "current"))
}

func readTree(t testing.TB, root string) map[string]string {
	t.Helper()
	root, err := filepath.EvalSymlinks(root)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.Type()&fs.ModeSymlink != 0 {
			target, err := os.Readlink(p)
			out[filepath.ToSlash(rel)] = "-> " + target
			return err
		}
		data, err := os.ReadFile(p)
		out[filepath.ToSlash(rel)] = string(data)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// under is the files of a commit below prefix ("" for all), with the prefix taken off: what the site serves.
func under(files map[string]string, prefix string) map[string]string {
	out := map[string]string{}
	for k, v := range files {
		if prefix == "" {
			out[k] = v
		} else if rest, ok := strings.CutPrefix(k, prefix+"/"); ok {
			out[rest] = v
		}
	}
	return out
}

// trees lists the tree directories of a pod's site (names of 16 hex digits).
func (pod *poolPod) trees(t testing.TB, id string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(pod.dir, id))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() && len(e.Name()) == 16 {
			names = append(names, e.Name())
		}
	}
	return names
}

// takeReady reports whether .ready/<id> exists and removes it, so that the next signal can be seen.
func (pod *poolPod) takeReady(id string) bool {
	err := os.Remove(filepath.Join(pod.dir, contentagent.ReadyDir, id))
	return err == nil
}
