package contentagent_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/previews"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// TestDeploysFile holds the puller's side of skew protection's contract (deploysfile.go) against the real Git test
// server over real HTTP: each pod's Dir/deploys.json lists the trees it keeps, newest first, with the fetcher's
// times (the replaced deploy ends when the next one was first served, the served one has no end); a rollback by
// pin ends the deploy it replaces; the file is whole (renamed in), readable by another user, and leaves nothing
// behind.
func TestDeploysFile(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(pinToken), 0o600); err != nil {
		t.Fatal(err)
	}
	var parents []plumbing.Hash
	push := func(asset string) string {
		c := repo.Commit(asset, map[string]gts.File{"index.html": gts.Regular(asset + "\n"), "assets/" + asset + ".js": gts.Regular(asset)}, parents...)
		parents = []plumbing.Hash{c}
		repo.Push("refs/heads/main", c, false)
		return c.String()
	}
	c1 := push("app-1")
	fetcher := startFetcher(t, gitsource.Source{URL: repo.URL, Ref: "main"}, nil, t.TempDir(), "127.0.0.1:0", "127.0.0.1:0", nil,
		func(f *contentagent.Fetcher) { f.History, f.PinTokenFile = 3, tokenFile })
	fetcher.nextSync(t)
	pod := startPuller(t, fetcher.url)
	pod.waitCommit(t, c1)

	list := readDeploys(t, pod.dir)
	if len(list) != 1 || list[0].Tree != c1 || list[0].Commit != c1 || list[0].ServedFrom.IsZero() || !list[0].ServedUntil.IsZero() {
		t.Fatalf("after the first deploy: %+v, want v1 served since its publish, no end", list)
	}

	c2 := push("app-2")
	fetcher.ticks <- time.Now()
	fetcher.nextSync(t)
	pod.waitCommit(t, c2)
	rev := revisionOf(t, fetcher.url)
	list = readDeploys(t, pod.dir)
	if len(list) != 2 || list[0].Tree != c2 || list[1].Tree != c1 {
		t.Fatalf("after the second deploy: %+v, want [v2 v1]", list)
	}
	if !list[1].ServedUntil.Equal(rev.Deploys[0].FirstServed) || !list[0].ServedUntil.IsZero() {
		t.Errorf("v1 served until %v, want when v2 was first served (%v); v2 until %v, want none",
			list[1].ServedUntil, rev.Deploys[0].FirstServed, list[0].ServedUntil)
	}
	if _, err := os.Stat(filepath.Join(pod.dir, c1, "assets", "app-1.js")); err != nil {
		t.Errorf("the listed v1 tree is not on disk: %v", err)
	}

	if code, body := postPin(t, fetcher.url, "Bearer "+pinToken, c1); code != 200 {
		t.Fatalf("pin of v1: %d %s", code, body)
	}
	pod.waitCommit(t, c1)
	list = readDeploys(t, pod.dir)
	byTree := map[string]contentagent.TreeDeploy{}
	for _, d := range list {
		byTree[d.Tree] = d
	}
	if d := byTree[c2]; d.ServedUntil.IsZero() || !byTree[c1].ServedUntil.IsZero() {
		t.Errorf("after the rollback to v1: %+v, want v2 ended and v1 served with no end", list)
	}

	info, err := os.Stat(filepath.Join(pod.dir, contentagent.DeploysFile))
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Errorf("deploys.json: %v, mode %v; want 0644 (the server may run as another user)", err, info.Mode())
	}
	entries, _ := os.ReadDir(pod.dir)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".deploys-") {
			t.Errorf("a temporary file is left: %s", e.Name())
		}
	}
}

// TestDeploysFileInSitesLayout holds skew protection's contract for a site with previews (deploysfile.go,
// previewlayout.go; the server's side is images/server/src/skew/attach.rs): the puller laying out --sites DIR
// writes production's deploys.json beside production's current (DIR/content/production.site/), with the
// single-site mode's content, renamed in before each flip (inotify sees each rename of current right after one
// of deploys.json), and none for a preview (one commit). The real server --sites DIR, its site value setting
// a window, then answers a page of the deploy before last its asset with X-Hyperstatic-Deploy on production's
// host, never to a navigation, and never on a preview's host.
func TestDeploysFileInSitesLayout(t *testing.T) {
	bin := serverbin.Require(t)
	check := contentagent.ServerCheck(bin, time.Minute, gitsource.DefaultMaxEntries, gitsource.DefaultMaxDepth)
	rig := startPreviewRig(t, previews.Settings{PullRequests: true}, check)
	// The fetcher's times from now on near the real clock: the server checks the windows against it.
	rig.advance(time.Since(rig.clock()))
	dir := t.TempDir()
	valueFile := filepath.Join(t.TempDir(), "site.json")
	testenv.Must(t, os.WriteFile(valueFile, []byte(`{"version":1,"skewProtection":{"window":"1h"}}`), 0o644))
	layout := &contentagent.SitesLayout{Dir: dir, Hosts: []string{"docs.example.com"}, Site: "docs",
		Domain: "preview.example.com", ValueFile: valueFile,
		Limits: poolindex.Limits{MaxFiles: 1000, MaxBytes: 1 << 20}}
	prodDir := filepath.Join(layout.ContentDir(), contentagent.ProductionID)
	flips := watchFlips(t, prodDir)
	prod, _ := rig.f.Revision()
	pod := startPullerIn(t, rig.url, prodDir, func(p *contentagent.Puller) { p.Sites = layout })
	pod.waitCommit(t, prod.Commit)
	srv := serverbin.Start(t, bin, []string{"--sites", dir, "--listen", "x", "--admin-listen", "y"})

	parent := plumbing.NewHash(prod.Commit)
	deploy := func(asset string) string {
		c := rig.repo.Commit(asset, map[string]gts.File{"site/index.html": gts.Regular(asset + "\n"),
			"site/assets/" + asset + ".js": gts.Regular(asset)}, parent)
		parent = c
		rig.repo.Push("refs/heads/main", c, false)
		rig.ticks <- time.Now()
		rig.nextSync(t)
		pod.waitCommit(t, c.String())
		return c.String()
	}
	c2 := deploy("app-2")
	c3 := deploy("app-3")
	if seen := flips(); seen != 3 {
		t.Fatalf("the watcher saw %d flips of production's current, want 3 (the first tree and two deploys)", seen)
	}

	list := readDeploys(t, prodDir)
	if len(list) != 3 || list[0].Tree != c3 || !list[0].ServedUntil.IsZero() || list[1].Tree != c2 ||
		list[1].ServedUntil.IsZero() || list[2].Tree != prod.Commit || list[2].ServedUntil.IsZero() {
		t.Fatalf("production's deploys.json after two deploys: %+v, want [v3 served, v2 ended, v1 ended]", list)
	}
	info, err := os.Stat(filepath.Join(prodDir, contentagent.DeploysFile))
	if err != nil || info.Mode().Perm() != 0o644 {
		t.Fatalf("production's deploys.json: %v, mode %v; want 0644", err, info.Mode())
	}

	t.Run("the server answers the deploy before last's asset on production's host", func(t *testing.T) {
		testenv.Eventually(t, "production serves v3", func() error {
			if code, body := hostGet(t, srv, "docs.example.com", "/"); code != http.StatusOK || body != "app-3\n" {
				return fmt.Errorf("%d %q", code, body)
			}
			return nil
		})
		code, body, deployed := getAsset(t, srv, "docs.example.com", "/assets/app-2.js", "script")
		if code != http.StatusOK || body != "app-2" || deployed != c2 {
			t.Fatalf("v2's asset after v3: %d %q X-Hyperstatic-Deploy %q, want 200 from %s", code, body, deployed, c2)
		}
		if code, _, deployed := getAsset(t, srv, "docs.example.com", "/assets/app-2.js", "document"); code != http.StatusNotFound || deployed != "" {
			t.Fatalf("a navigation to v2's asset: %d %q, want 404", code, deployed)
		}
	})

	t.Run("a preview has no list and never answers production's previous trees", func(t *testing.T) {
		pr := rig.repo.Commit("pr one", map[string]gts.File{"site/index.html": gts.Regular("pr one\n")})
		rig.repo.Push("refs/heads/contrib", pr, false)
		rig.pull(t, gts.PullEvent{Forge: gitwebhook.Gitea, Action: gts.Opened, Number: 1, Head: pr, Branch: "contrib"})
		waitPreviews(t, pod, "pr-1")
		host := contentagent.PreviewHost("pr-1", "docs", "preview.example.com")
		testenv.Eventually(t, "the preview served", func() error {
			if code, body := hostGet(t, srv, host, "/"); code != http.StatusOK || body != "pr one\n" {
				return fmt.Errorf("%d %q", code, body)
			}
			return nil
		})
		previewDir := filepath.Join(layout.ContentDir(), contentagent.PreviewID("pr-1"))
		if _, err := os.Lstat(filepath.Join(previewDir, contentagent.DeploysFile)); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("the preview's deploys.json: %v, want none", err)
		}
		for _, asset := range []string{"/assets/app-2.js", "/assets/app-3.js"} {
			if code, _, deployed := getAsset(t, srv, host, asset, "script"); code != http.StatusNotFound || deployed != "" {
				t.Fatalf("the preview's %s: %d %q, want 404", asset, code, deployed)
			}
		}
	})
}

// watchFlips watches dir (inotify: the kernel queues the events in the order of the renames) and returns a
// function that reads what was queued and fails the test unless every flip of current came right after a new
// deploys.json was renamed in; it returns how many flips it saw.
func watchFlips(t *testing.T, dir string) (flips func() int) {
	t.Helper()
	testenv.Must(t, os.MkdirAll(dir, 0o755))
	fd, err := syscall.InotifyInit1(syscall.IN_CLOEXEC | syscall.IN_NONBLOCK)
	testenv.Must(t, err)
	t.Cleanup(func() { _ = syscall.Close(fd) })
	_, err = syscall.InotifyAddWatch(fd, dir, syscall.IN_MOVED_TO)
	testenv.Must(t, err)
	return func() int {
		t.Helper()
		var names []string
		buf := make([]byte, 64<<10)
		for {
			n, err := syscall.Read(fd, buf)
			if errors.Is(err, syscall.EAGAIN) {
				break
			}
			testenv.Must(t, err)
			for off := 0; off+syscall.SizeofInotifyEvent <= n; {
				mask := binary.NativeEndian.Uint32(buf[off+4:])
				size := int(binary.NativeEndian.Uint32(buf[off+12:]))
				name := strings.TrimRight(string(buf[off+syscall.SizeofInotifyEvent:off+syscall.SizeofInotifyEvent+size]), "\x00")
				if mask&syscall.IN_Q_OVERFLOW != 0 {
					t.Fatal("the inotify queue overflowed")
				}
				if name == gitsource.CurrentLink || name == contentagent.DeploysFile {
					names = append(names, name)
				}
				off += syscall.SizeofInotifyEvent + size
			}
		}
		seen := 0
		for i, name := range names {
			if name != gitsource.CurrentLink {
				continue
			}
			seen++
			if i == 0 || names[i-1] != contentagent.DeploysFile {
				t.Errorf("renames in production's Store %v: flip %d of current without a new deploys.json before it", names, seen)
			}
		}
		return seen
	}
}

// getAsset asks the server for path with host and Sec-Fetch-Dest dest: the status, body and
// X-Hyperstatic-Deploy.
func getAsset(t *testing.T, srv *serverbin.Process, host, path, dest string) (int, string, string) {
	t.Helper()
	code, body, h := srv.Ask(t, host, path, "Sec-Fetch-Dest", dest)
	return code, body, h.Get("X-Hyperstatic-Deploy")
}

// readDeploys reads Dir/deploys.json as the server's contract has it: {"deploys": [...]}, times in RFC 3339.
func readDeploys(t *testing.T, dir string) []contentagent.TreeDeploy {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, contentagent.DeploysFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Deploys []map[string]any `json:"deploys"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatalf("%s: %v", data, err)
	}
	for _, d := range raw.Deploys {
		for k, v := range d {
			s, ok := v.(string)
			if !ok || (k != "tree" && k != "commit" && k != "servedFrom" && k != "servedUntil") {
				t.Errorf("field %s=%v is not in the contract", k, v)
			}
			if _, err := time.Parse(time.RFC3339, s); (k == "servedFrom" || k == "servedUntil") && (err != nil || !strings.HasSuffix(s, "Z")) {
				t.Errorf("%s %q is not an RFC 3339 UTC time: %v", k, s, err)
			}
		}
	}
	var list contentagent.DeploysList
	if err := json.Unmarshal(data, &list); err != nil {
		t.Fatal(err)
	}
	return list.Deploys
}
