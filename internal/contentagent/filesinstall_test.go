package contentagent_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// countingProxy serves h and counts what it answers under /bundles/: bytes, and requests for a range.
type countingProxy struct {
	h      http.Handler
	mu     sync.Mutex
	bytes  int64
	ranges int
}

func (c *countingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !strings.HasPrefix(r.URL.Path, "/bundles/") {
		c.h.ServeHTTP(w, r)
		return
	}
	cw := &countingResponse{ResponseWriter: w}
	c.h.ServeHTTP(cw, r)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bytes += cw.n
	if r.Header.Get("Range") != "" {
		c.ranges++
	}
}

func (c *countingProxy) take() (int64, int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, r := c.bytes, c.ranges
	c.bytes, c.ranges = 0, 0
	return n, r
}

type countingResponse struct {
	http.ResponseWriter
	n int64
}

func (c *countingResponse) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.n += int64(n)
	return n, err
}

// docsLikeTree is a site of pages of distinct content, page i being body(i).
func docsLikeTree(pages int, body func(int) string) map[string]gts.File {
	tree := map[string]gts.File{"index.html": gts.Regular("<h1>home</h1>\n"), "latest": gts.Symlink("library")}
	for i := range pages {
		tree[fmt.Sprintf("library/page%03d.html", i)] = gts.Regular(body(i))
	}
	return tree
}

func pageBody(i int) string { return strings.Repeat(fmt.Sprintf("page %d of the docs\n", i), 800) }

func inodeOf(t *testing.T, p string) uint64 {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

// TestPullerLinksWhatItHas: after a one-page push, a pod reads that page and the file list from the fetcher, not
// the bundle; it serves the new commit's tree byte for byte (its bundle's digest), its other files the previous
// tree's (hard links), and keeps the list for the next push.
func TestPullerLinksWhatItHas(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "docs.git", nil)
	c1 := repo.Commit("v1", docsLikeTree(60, pageBody))
	repo.Push("refs/heads/main", c1, false)
	fetcher := startFetcher(t, gitsource.Source{URL: repo.URL, Ref: "main"}, nil, t.TempDir(), "127.0.0.1:0", "127.0.0.1:0", nil)
	if e := fetcher.nextSync(t); e.rev.Commit != c1.String() || e.rev.Files == "" {
		t.Fatalf("first fetch: %+v, want %s with a file list", e.rev, c1)
	}
	proxy := &countingProxy{h: fetcher.f.Handler()}
	front := httptest.NewServer(proxy)
	t.Cleanup(front.Close)
	pod := startPuller(t, front.URL)
	rev1 := pod.waitCommit(t, c1.String())
	if n, _ := proxy.take(); n < rev1.Size {
		t.Fatalf("the first install read %d bytes, want the whole bundle's %d", n, rev1.Size)
	}

	changed := func(i int) string {
		if i == 7 {
			return "page 7, rewritten\n"
		}
		return pageBody(i)
	}
	c2 := repo.Commit("v2", docsLikeTree(60, changed), c1)
	repo.Push("refs/heads/main", c2, false)
	fetcher.ticks <- time.Now()
	e := fetcher.nextSync(t)
	if e.rev.Commit != c2.String() {
		t.Fatalf("fetch %+v, want %s", e.rev, c2)
	}
	pod.waitCommit(t, c2.String())
	n, ranges := proxy.take()
	if ranges != 1 || n > e.rev.Size/10 {
		t.Errorf("the one-page push read %d bytes in %d ranges, want the page in one (the bundle is %d bytes)", n, ranges, e.rev.Size)
	}
	if d, err := gitsource.WriteBundle(io.Discard, pod.p.Store.Served()); err != nil || d != e.rev.Digest {
		t.Errorf("the served tree's bundle digest is %s (%v), want the fetcher's %s", d, err, e.rev.Digest)
	}
	if got := pod.served(t, "library/page007.html"); got != "page 7, rewritten\n" {
		t.Errorf("the changed page serves %q", got)
	}
	old, cur := filepath.Join(pod.dir, c1.String(), "library/page008.html"), filepath.Join(pod.dir, c2.String(), "library/page008.html")
	if inodeOf(t, old) != inodeOf(t, cur) {
		t.Error("an unchanged page was not linked from the previous tree")
	}
	if _, err := os.Stat(pod.p.Store.FileListPath(c2.String())); err != nil {
		t.Errorf("the new tree's file list was not kept: %v", err)
	}
}

// fileListOf returns dir's bundle, its digest, its file list as the fetcher serves it and the list's SHA-256.
func fileListOf(t *testing.T, dir string) (bundle []byte, digest string, list []byte, sum string) {
	t.Helper()
	var buf bytes.Buffer
	digest, fl, err := gitsource.WriteBundleFiles(&buf, dir)
	if err != nil {
		t.Fatal(err)
	}
	if list, err = json.Marshal(fl); err != nil {
		t.Fatal(err)
	}
	s := sha256.Sum256(list)
	return buf.Bytes(), digest, list, hex.EncodeToString(s[:])
}

// TestPullerFallsBackToTheWholeBundle: a file list the pod cannot use (another SHA-256 than published, a file
// whose bytes are not the list's, one with most files missing) costs the shortcut only: the pod installs the
// whole bundle, checked by its digest, and serves the commit's tree.
func TestPullerFallsBackToTheWholeBundle(t *testing.T) {
	treeOf := func(page string) string {
		dir := t.TempDir()
		for name, data := range map[string]string{"index.html": page, "style.css": strings.Repeat("body{}\n", 200)} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		return dir
	}
	hf := &hostileFetcher{}
	publish := func(commit string, bundle []byte, digest string, list []byte, sum string) {
		rev, err := json.Marshal(contentagent.Revision{Digest: digest, Size: int64(len(bundle)), Files: sum, Commit: commit})
		if err != nil {
			t.Fatal(err)
		}
		hf.set(rev, map[string][]byte{digest: bundle, digest + "/files": list})
	}
	front := httptest.NewServer(hf)
	t.Cleanup(front.Close)

	// The first install: every file missing, so the whole bundle.
	b1, d1, l1, s1 := fileListOf(t, treeOf("v1"))
	publish(strings.Repeat("1", 40), b1, d1, l1, s1)
	pod := startPuller(t, front.URL)
	pod.waitCommit(t, strings.Repeat("1", 40))
	if pod.served(t, "index.html") != "v1" {
		t.Fatalf("serves %q, want v1", pod.served(t, "index.html"))
	}
	if _, err := os.Stat(pod.p.Store.FileListPath(strings.Repeat("1", 40))); err != nil {
		t.Fatalf("the list of a tree installed whole was not kept: %v", err)
	}

	b2, d2, l2, s2 := fileListOf(t, treeOf("v2"))
	lying := bytes.Replace(l2, []byte(d2), []byte(d1), 1) // a list of another bundle, published as this one's
	lyingSum := sha256.Sum256(lying)
	// The bytes of index.html in the bundle, altered: the list's range then reads other bytes.
	var fl gitsource.FileList
	if err := json.Unmarshal(l2, &fl); err != nil {
		t.Fatal(err)
	}
	altered := bytes.Clone(b2)
	for _, e := range fl.Entries {
		if e.Name == "index.html" {
			altered[e.Offset] = 'X'
		}
	}
	huge := bytes.Repeat([]byte(" "), 4<<20+1)
	hugeSum := sha256.Sum256(huge)
	cases := []struct {
		name   string
		bundle []byte
		list   []byte
		sum    string
		want   string
		failed bool
	}{
		{"a list with another SHA-256", b2, append(bytes.Clone(l2), ' '), s2, "v2", false},
		{"a list of another bundle", b2, lying, hex.EncodeToString(lyingSum[:]), "v2", false},
		{"no list", b2, nil, s2, "v2", false},
		// The puller's memory is bounded: a list over 4 MiB is not read.
		{"a list over the bound", b2, huge, hex.EncodeToString(hugeSum[:]), "v2", false},
		// The range of index.html is wrong, and so is the whole bundle: the tree before stays.
		{"bytes that are not the list's", altered, l2, s2, "v2", true},
	}
	for i, c := range cases {
		commit := strings.Repeat(fmt.Sprint(i+2), 40)
		bundles := map[string][]byte{d2: c.bundle}
		if c.list != nil {
			bundles[d2+"/files"] = c.list
		}
		rev, _ := json.Marshal(contentagent.Revision{Digest: d2, Size: int64(len(b2)), Files: c.sum, Commit: commit})
		hf.set(rev, bundles)
		if _, err := os.Stat(pod.p.Store.FileListPath(strings.Repeat(fmt.Sprint(i+1), 40))); c.name == "no list" && err == nil {
			t.Errorf("%s: the list of the case before, which was refused, was kept", c.name)
		}
		if c.failed {
			<-pod.backoff.asked
			if cur, _ := pod.p.Store.Current(); cur == commit || pod.served(t, "index.html") != c.want {
				t.Errorf("%s: serves %s %q, want the tree before", c.name, cur, pod.served(t, "index.html"))
			}
			continue
		}
		pod.waitCommit(t, commit)
		if got := pod.served(t, "index.html"); got != c.want {
			t.Errorf("%s: serves %q, want %q", c.name, got, c.want)
		}
	}
}
