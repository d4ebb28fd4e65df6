package contentagent_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// contents is what a commit of the test holds, by path: the file's bytes, or "-> target" for a link.
func contents(files map[string]gts.File) map[string]string {
	out := map[string]string{}
	for k, f := range files {
		if f.Mode == gts.Symlink("").Mode {
			out[k] = "-> " + f.Data
		} else {
			out[k] = f.Data
		}
	}
	return out
}

func sameTree(t *testing.T, what string, got, want map[string]string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d files %v, want %d %v", what, len(got), keys(got), len(want), keys(want))
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s is %q, want %q", what, k, got[k], v)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestPoolFetcherAndPullers runs a pool end to end on a real API server (envtest: the ConfigMap site's mirror is
// read and watched through it), the real test Git server (two public repositories) and the real server's --check:
// one pool fetcher, two pool pullers (two pool pods), then a new commit, a mirror's update, a commit failing the
// check and a site leaving the index.
func TestPoolFetcherAndPullers(t *testing.T) {
	env, err := testenv.Start()
	testenv.Must(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	ctx := context.Background()
	const ns = "pool-ns"
	testenv.Must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	mirror := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared.c-0123456789abcdef"},
		Data:       map[string]string{"index.html": "<h1>landing v1</h1>\n", "_redirects": "/old /new 301\n"},
		BinaryData: map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G', 0, 1, 2, 0xff}},
	}
	testenv.Must(t, env.Client.Create(ctx, mirror))
	kube, err := contentagent.NewConfigMapReader(env.Config)
	testenv.Must(t, err)
	meta, err := metadata.NewForConfig(env.Config)
	testenv.Must(t, err)

	srv, base := gts.Start(t, "", "", "")
	repoA := srv.NewRepo(t, base, "docs.git", nil)
	repoB := srv.NewRepo(t, base, "blog.git", nil)
	filesA := map[string]gts.File{
		"README.md": gts.Regular("not served\n"), "site/index.html": gts.Regular("docs v1\n"),
		"site/guide/start.html": gts.Regular("start\n"), "site/latest": gts.Symlink("guide"),
	}
	filesB := map[string]gts.File{"index.html": gts.Regular("blog\n"), "posts/1.html": gts.Regular("one\n")}
	a1 := repoA.Commit("a1", filesA)
	repoA.Push("refs/heads/main", a1, false)
	repoB.Push("refs/heads/main", repoB.Commit("b1", filesB), false)

	index := t.TempDir()
	docs, blog := poolGitSite("team-a.docs", repoA.URL, "site"), poolGitSite("team-b.blog", repoB.URL, "")
	landing := poolConfigMapSite("team-c.landing", poolindex.ConfigMapContent{Name: mirror.Name, PathPrefix: "www"})
	writeIndex(t, index, []poolindex.Site{docs, blog}, []poolindex.Site{landing})

	fetcher := startPoolFetcher(t, index, func(p *contentagent.PoolFetcher) {
		p.Namespace, p.Kube, p.Metadata = ns, kube, meta
		p.CheckServer = serverbin.Require(t)
	})
	pods := []*poolPod{startPoolPuller(t, index, fetcher.url), startPoolPuller(t, index, fetcher.url)}
	landingFiles := map[string]string{"www/index.html": "<h1>landing v1</h1>\n", "www/_redirects": "/old /new 301\n",
		"www/logo.png": string([]byte{0x89, 'P', 'N', 'G', 0, 1, 2, 0xff})}

	bundles := map[string]string{}
	t.Run("every site's tree reaches both pods byte-exact, each signalled", func(t *testing.T) {
		for _, id := range []string{docs.ID, blog.ID, landing.ID} {
			e := fetcher.fetched(t, id, func(e contentagent.PoolSite) bool { return e.Bundle != "" })
			if e.Error != "" || e.Size == 0 || e.Commit == "" {
				t.Errorf("fetcher's %s: %+v", id, e)
			}
			bundles[id] = e.Bundle
			for _, pod := range pods {
				pod.installed(t, id, e.Bundle)
				if !pod.takeReady(id) {
					t.Errorf("no .ready/%s after its first install", id)
				}
			}
		}
		if e, _ := siteOf(fetcher.fetcher.Sites(), docs.ID); e.Commit != a1.String() {
			t.Errorf("docs commit %s, want %s", e.Commit, a1)
		}
		for i, pod := range pods {
			sameTree(t, fmt.Sprintf("pod %d docs", i), pod.tree(t, docs.ID), under(contents(filesA), "site"))
			sameTree(t, fmt.Sprintf("pod %d blog", i), pod.tree(t, blog.ID), contents(filesB))
			sameTree(t, fmt.Sprintf("pod %d landing", i), pod.tree(t, landing.ID), landingFiles)
		}
		eventually(t, func() string { return "pod not ready" }, func() bool {
			code, _ := get(t, pods[0].url+"/healthz")
			return code == http.StatusOK
		})
		// /sites lists every site sorted by id, on the fetcher and on a pod.
		for _, url := range []string{fetcher.url, pods[0].url} {
			code, body := get(t, url+"/sites")
			at := []int{strings.Index(body, docs.ID), strings.Index(body, blog.ID), strings.Index(body, landing.ID)}
			if code != http.StatusOK || at[0] < 0 || !slices.IsSorted(at) {
				t.Errorf("GET %s/sites: %d %s", url, code, body)
			}
		}
	})

	t.Run("a new commit: a new bundle, a flip on both pods and a signal", func(t *testing.T) {
		filesA["site/index.html"] = gts.Regular("docs v2\n")
		a2 := repoA.Commit("a2", filesA, a1)
		repoA.Push("refs/heads/main", a2, false)
		fetcher.fetcher.Trigger(docs.ID)
		e := fetcher.fetched(t, docs.ID, func(e contentagent.PoolSite) bool { return e.Commit == a2.String() })
		if e.Bundle == bundles[docs.ID] {
			t.Fatalf("same bundle for a new tree: %+v", e)
		}
		for i, pod := range pods {
			pod.installed(t, docs.ID, e.Bundle)
			sameTree(t, fmt.Sprintf("pod %d docs v2", i), pod.tree(t, docs.ID), under(contents(filesA), "site"))
			eventually(t, func() string { return ".ready/" + docs.ID + " after the flip" }, func() bool { return pod.takeReady(docs.ID) })
			// The previous tree is kept until the flip is done (it is the only older one).
			if trees := pod.trees(t, docs.ID); len(trees) != 2 || !slices.Contains(trees, e.Bundle[:16]) {
				t.Errorf("pod %d trees %v, want the new one and the previous", i, trees)
			}
		}
		bundles[docs.ID] = e.Bundle
	})

	t.Run("a mirror's update is seen by the watch and reaches the pods", func(t *testing.T) {
		mirror.Data["index.html"] = "<h1>landing v2</h1>\n"
		testenv.Must(t, env.Client.Update(ctx, mirror))
		e := fetcher.fetched(t, landing.ID, func(e contentagent.PoolSite) bool { return e.Bundle != bundles[landing.ID] })
		landingFiles["www/index.html"] = "<h1>landing v2</h1>\n"
		for _, pod := range pods {
			pod.installed(t, landing.ID, e.Bundle)
			sameTree(t, "landing v2", pod.tree(t, landing.ID), landingFiles)
		}
		bundles[landing.ID] = e.Bundle
	})

	t.Run("a commit failing the check keeps the last good bundle and reports why", func(t *testing.T) {
		prev, _ := siteOf(fetcher.fetcher.Sites(), docs.ID)
		bad := map[string]gts.File{"site/index.html": gts.Regular("broken\n"), "site/_redirects": gts.Regular("/only-from\n")}
		a3 := repoA.Commit("a3", bad)
		repoA.Push("refs/heads/main", a3, true)
		fetcher.fetcher.Trigger(docs.ID)
		e := fetcher.fetched(t, docs.ID, func(e contentagent.PoolSite) bool { return e.Error != "" })
		if !strings.HasPrefix(e.Error, "InvalidContent: ") || !strings.Contains(e.Error, "_redirects") ||
			e.Bundle != prev.Bundle || e.Commit != prev.Commit {
			t.Errorf("after a bad commit: %+v, want InvalidContent with %+v kept", e, prev)
		}
		code, body := get(t, fetcher.url+"/sites/"+docs.ID+"/revision")
		if code != http.StatusOK || !strings.Contains(body, prev.Bundle) || !strings.Contains(body, "InvalidContent") {
			t.Errorf("revision: %d %s", code, body)
		}
		for _, pod := range pods {
			if got := pod.tree(t, docs.ID)["index.html"]; got != "docs v2\n" {
				t.Errorf("a pod serves %q, want the last good docs v2", got)
			}
		}
	})

	t.Run("a site leaving the index loses its trees, bundles and signal", func(t *testing.T) {
		writeIndex(t, index, []poolindex.Site{docs}, []poolindex.Site{landing})
		eventually(t, func() string { return "blog still in the fetcher's /sites" }, func() bool {
			_, ok := siteOf(fetcher.fetcher.Sites(), blog.ID)
			return !ok
		})
		eventually(t, func() string { return "blog's fetcher directory still there" }, func() bool {
			_, err := os.Stat(filepath.Join(fetcher.fetcher.Dir, blog.ID))
			return os.IsNotExist(err)
		})
		if code, _ := get(t, fetcher.url+"/bundles/"+bundles[blog.ID]); code != http.StatusNotFound {
			t.Errorf("the departed site's bundle: %d, want 404", code)
		}
		if code, _ := get(t, fetcher.url+"/bundles/"+bundles[docs.ID]); code != http.StatusOK {
			t.Errorf("a present site's bundle: %d, want 200", code)
		}
		for _, pod := range pods {
			eventually(t, func() string { return "blog's tree still on a pod" }, func() bool {
				_, err := os.Stat(filepath.Join(pod.dir, blog.ID))
				return os.IsNotExist(err)
			})
			// The signal follows the removal.
			eventually(t, func() string { return "no .ready/" + blog.ID + " after its removal" }, func() bool { return pod.takeReady(blog.ID) })
			if _, ok := siteOf(pod.p.Sites(), blog.ID); ok {
				t.Errorf("the pod still lists %s", blog.ID)
			}
			if _, err := os.Stat(filepath.Join(pod.dir, docs.ID, "current")); err != nil {
				t.Errorf("another site's tree went too: %v", err)
			}
		}
	})
}

// TestPoolPullerReadiness: a pool pod's readiness (the puller's /healthz, its sidecar's readiness probe) waits
// for every site of the index when the pod starts, and then holds: a site added to the index later, whose tree
// is not here yet, must not take a serving pod out of every pool site's slice (e2e scenario 20 saw a pool of two
// pods unready for minutes while one new site's first fetch went on). The pod's index names a site the fetcher
// does not know (never fetched, no failure to report): its tree never comes, so each answer below is final.
func TestPoolPullerReadiness(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	repo.Push("refs/heads/main", repo.Commit("v1", map[string]gts.File{"index.html": gts.Regular("v1\n")}), false)
	site := poolGitSite("a.site", repo.URL, "")
	pending := poolGitSite("a.pending", repo.URL, "")
	fetcher := startPoolFetcher(t, writtenIndex(t, site))
	bundle := fetcher.fetched(t, site.ID, func(e contentagent.PoolSite) bool { return e.Bundle != "" }).Bundle

	podIndex := writtenIndex(t, site)
	pod := startPoolPuller(t, podIndex, fetcher.url)
	eventually(t, func() string { return "the pod with every tree not ready" }, func() bool {
		code, _ := get(t, pod.url+"/healthz")
		return code == http.StatusOK
	})
	writeIndex(t, podIndex, []poolindex.Site{site, pending})
	eventually(t, func() string { return "the pod has not read the index with the new site" }, func() bool {
		_, ok := pod.p.Index.Sites()[pending.ID]
		return ok
	})
	if code, body := get(t, pod.url+"/healthz"); code != http.StatusOK {
		t.Errorf("a ready pod whose index gained a site without a tree: /healthz %d %q, want 200", code, body)
	}

	// A pod starting with that index has a tree still to get: not ready.
	fresh := startPoolPuller(t, writtenIndex(t, site, pending), fetcher.url)
	fresh.installed(t, site.ID, bundle)
	if code, _ := get(t, fresh.url+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("a new pod without the tree of a site of its index: /healthz %d, want 503", code)
	}
}

// writtenIndex is a new index directory holding sites in one shard.
func writtenIndex(t testing.TB, sites ...poolindex.Site) string {
	t.Helper()
	dir := t.TempDir()
	writeIndex(t, dir, sites)
	return dir
}

// Limits: a tree past the site's maxFiles or maxBytes is refused by the fetcher (TooLarge, nothing published), and
// a pod whose index gives a site lower limits than the bundle needs refuses it too, reporting the failure (its
// /healthz still turns ready: every site has a tree or a reported failure).
func TestPoolLimits(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "big.git", nil)
	files := map[string]gts.File{}
	for i := range 5 {
		files[fmt.Sprintf("p%d.html", i)] = gts.Regular(strings.Repeat("x", 1000))
	}
	repo.Push("refs/heads/main", repo.Commit("five", files), false)

	manyFiles := poolGitSite("a.files", repo.URL, "")
	manyFiles.Limits.MaxFiles = 3
	manyBytes := poolGitSite("a.bytes", repo.URL, "")
	manyBytes.Limits.MaxBytes = 4000
	fits := poolGitSite("a.fits", repo.URL, "")
	fetchIndex := t.TempDir()
	writeIndex(t, fetchIndex, []poolindex.Site{manyFiles, manyBytes, fits})
	fetcher := startPoolFetcher(t, fetchIndex)

	for id, want := range map[string]string{manyFiles.ID: "limit of 3 entries", manyBytes.ID: "size limit of 4000 bytes"} {
		e := fetcher.fetched(t, id, func(e contentagent.PoolSite) bool { return e.Error != "" })
		if !strings.HasPrefix(e.Error, "TooLarge: ") || !strings.Contains(e.Error, want) || e.Bundle != "" {
			t.Errorf("%s: %+v, want TooLarge (%s) and no bundle", id, e, want)
		}
	}
	fetcher.fetched(t, fits.ID, func(e contentagent.PoolSite) bool { return e.Bundle != "" })
	// The metrics count sites by state, per pool: no series names a site.
	_, page := get(t, fetcher.url+"/metrics")
	if metric(page, `hyperstatic_pool_sites{state="served"}`) != "1" || metric(page, `hyperstatic_pool_sites{state="failing"}`) != "2" ||
		metric(page, `hyperstatic_pool_fetch_total{kind="git",result="TooLarge"}`) != "2" || strings.Contains(page, "a.fits") {
		t.Errorf("metrics:\n%s", page)
	}

	// The pod's index says a.fits may hold 2 files: the bundle the fetcher made under 1000 is refused there.
	podIndex := t.TempDir()
	strict := fits
	strict.Limits.MaxFiles = 2
	writeIndex(t, podIndex, []poolindex.Site{manyFiles, manyBytes, strict})
	pod := startPoolPuller(t, podIndex, fetcher.url)
	eventually(t, func() string { return fmt.Sprintf("pod sites %+v", pod.p.Sites()) }, func() bool {
		e, _ := siteOf(pod.p.Sites(), fits.ID)
		return strings.HasPrefix(e.Error, "TooLarge: ")
	})
	if _, err := os.Lstat(filepath.Join(pod.dir, fits.ID, "current")); !os.IsNotExist(err) {
		t.Errorf("a refused bundle was installed (%v)", err)
	}
	if e, _ := siteOf(pod.p.Sites(), manyFiles.ID); !strings.Contains(e.Error, "fetcher: TooLarge") {
		t.Errorf("the fetcher's failure is not reported by the pod: %+v", e)
	}
	eventually(t, func() string { return "pod not ready with every site failed" }, func() bool {
		code, _ := get(t, pod.url+"/healthz")
		return code == http.StatusOK
	})
}

// GET /sites?wait=<etag> holds while nothing changes and answers at a change with a new ETag; GET
// /sites/<id>/revision?wait=<bundle> likewise for one site.
func TestPoolSitesLongPoll(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	c1 := repo.Commit("v1", map[string]gts.File{"index.html": gts.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)
	site := poolGitSite("a.site", repo.URL, "")
	index := t.TempDir()
	writeIndex(t, index, []poolindex.Site{site})
	fetcher := startPoolFetcher(t, index, func(p *contentagent.PoolFetcher) { p.WaitTimeout = time.Minute })
	first := fetcher.fetched(t, site.ID, func(e contentagent.PoolSite) bool { return e.Bundle != "" })

	resp, err := http.Get(fetcher.url + "/sites")
	testenv.Must(t, err)
	_ = resp.Body.Close()
	etag := strings.Trim(resp.Header.Get("ETag"), `"`)
	if etag == "" {
		t.Fatal("no ETag on /sites")
	}

	// With nothing changing, the poll is still held when the client gives up.
	const patience = 1500 * time.Millisecond
	impatient := &http.Client{Timeout: patience}
	if resp, err := impatient.Get(fetcher.url + "/sites?wait=" + etag); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("with nothing changed, /sites?wait= answered within %v: %s", patience, resp.Status)
	}

	type answer struct{ etag, body string }
	answers := make(chan answer, 2)
	longPoll := func(url string) {
		r, err := http.Get(url)
		if err != nil {
			answers <- answer{body: err.Error()}
			return
		}
		defer r.Body.Close()
		answers <- answer{strings.Trim(r.Header.Get("ETag"), `"`), readAll(r)}
	}
	go longPoll(fetcher.url + "/sites?wait=" + etag)
	go longPoll(fetcher.url + "/sites/" + site.ID + "/revision?wait=" + first.Bundle)
	time.Sleep(200 * time.Millisecond) // let both arrive first (a change before they arrive answers them too)
	c2 := repo.Commit("v2", map[string]gts.File{"index.html": gts.Regular("v2\n")}, c1)
	repo.Push("refs/heads/main", c2, false)
	fetcher.fetcher.Trigger(site.ID)
	for range 2 {
		select {
		case a := <-answers:
			if !strings.Contains(a.body, c2.String()) {
				t.Errorf("long poll answered %q (ETag %s), want the new commit %s", a.body, a.etag, c2)
			}
		case <-time.After(30 * time.Second): // well under the fetcher's hold of a minute
			t.Fatal("a long poll did not answer the change")
		}
	}
	if code, _ := get(t, fetcher.url+"/sites/no.such/revision"); code != http.StatusNotFound {
		t.Errorf("unknown site: %d, want 404", code)
	}
}

func readAll(r *http.Response) string {
	var b strings.Builder
	buf := make([]byte, 32<<10)
	for {
		n, err := r.Body.Read(buf)
		b.Write(buf[:n])
		if err != nil {
			return b.String()
		}
	}
}
