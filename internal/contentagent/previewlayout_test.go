package contentagent_test

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/previews"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// hostGet asks the server for path with Host host.
func hostGet(t *testing.T, srv *serverbin.Process, host, path string) (int, string) {
	t.Helper()
	return srv.GetByHost(t, host, path)
}

// waitPreviews waits until the pod serves exactly the named previews.
func waitPreviews(t *testing.T, rp *runningPuller, want ...string) contentagent.Revision {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		rev, changed := rp.p.Revision()
		if names(rev.Previews) == strings.Join(want, ",") {
			return rev
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the pod serves previews %q, want %q", names(rev.Previews), want)
		}
	}
}

// TestPreviewsServedInSitesMode is the contract between a previews site's puller and the real server in its
// many-sites mode (step c of issue 41's previews): the fetcher over the real test Git server, a puller laying out
// --sites DIR, and the real hyperstatic-server --sites DIR. A preview's host serves its commit byte for byte,
// production's hosts serve production throughout, an unknown host and a closed preview's host are 404, and an
// index entry claiming production's host (a preview cannot make one: its host is built from a checked name, so
// the test writes it by hand) is refused by the server while production keeps it.
func TestPreviewsServedInSitesMode(t *testing.T) {
	bin := serverbin.Require(t)
	check := contentagent.ServerCheck(bin, time.Minute, gitsource.DefaultMaxEntries, gitsource.DefaultMaxDepth)
	rig := startPreviewRig(t, previews.Settings{PullRequests: true}, check)
	dir := t.TempDir()
	valueFile := filepath.Join(t.TempDir(), "site.json")
	testenv.Must(t, os.WriteFile(valueFile, []byte(`{"version":1,"cleanURLs":true}`), 0o644))
	layout := &contentagent.SitesLayout{Dir: dir, Hosts: []string{"docs.example.com", "docs.web.svc"}, Site: "docs",
		Domain: "preview.example.com", ValueFile: valueFile,
		Limits: poolindex.Limits{MaxFiles: 1000, MaxBytes: 1 << 20}}
	prod, _ := rig.f.Revision()
	pod := startPullerIn(t, rig.url, filepath.Join(layout.ContentDir(), contentagent.ProductionID), func(p *contentagent.Puller) {
		p.Sites = layout
	})
	pod.waitCommit(t, prod.Commit)
	srv := serverbin.Start(t, bin, []string{"--sites", dir, "--listen", "x", "--admin-listen", "y"})

	served := func(host, want string) {
		t.Helper()
		testenv.Eventually(t, host+" serves "+want, func() error {
			if code, body := hostGet(t, srv, host, "/"); code != http.StatusOK || body != want {
				return fmt.Errorf("%s: %d %q", host, code, body)
			}
			return nil
		})
	}
	productionServed := func() {
		t.Helper()
		for _, h := range layout.Hosts {
			if code, body := hostGet(t, srv, h, "/"); code != http.StatusOK || body != "main\n" {
				t.Fatalf("production host %s: %d %q", h, code, body)
			}
		}
	}
	served("docs.example.com", "main\n")
	productionServed()
	if code, _ := hostGet(t, srv, "pr-1--docs.preview.example.com", "/"); code != http.StatusNotFound {
		t.Fatalf("a preview host before any preview: %d", code)
	}

	c2 := rig.repo.Commit("pr one", siteFiles("pr one\n", "/old /new 301\n"))
	rig.repo.Push("refs/heads/contrib", c2, false)
	rig.pull(t, gts.PullEvent{Forge: gitwebhook.Gitea, Action: gts.Opened, Number: 1, Head: c2, Branch: "contrib"})
	rev := waitPreviews(t, pod, "pr-1")
	if p := rev.Previews[0]; p.Commit != c2.String() || p.Ref != "refs/pull/1/head" {
		t.Fatalf("the pod's pr-1: %+v", p)
	}
	t.Run("the preview's host serves its commit byte for byte; production's hosts production", func(t *testing.T) {
		served("pr-1--docs.preview.example.com", "pr one\n")
		productionServed()
		// The preview's tree is its own, its files equal to production's linked from production's tree
		// (filesinstall.go); production's bytes are the same (productionServed).
		in := func(id, commit string) string { return filepath.Join(layout.ContentDir(), id, commit, "_redirects") }
		if inodeOf(t, in(contentagent.PreviewID("pr-1"), c2.String())) != inodeOf(t, in(contentagent.ProductionID, prod.Commit)) {
			t.Error("the preview's _redirects, production's bytes, was not linked from production's tree")
		}
		// The tree's own rules apply under the preview's host (its _redirects).
		req, err := http.NewRequest(http.MethodGet, "http://"+srv.HTTPAddr+"/old", nil)
		testenv.Must(t, err)
		req.Host = "pr-1--docs.preview.example.com"
		resp, err := http.DefaultTransport.RoundTrip(req)
		testenv.Must(t, err)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || !strings.HasSuffix(resp.Header.Get("Location"), "/new") {
			t.Fatalf("pr-1 /old: %d %q, want its _redirects' 301 to /new", resp.StatusCode, resp.Header.Get("Location"))
		}
		if code, _ := hostGet(t, srv, "pr-2--docs.preview.example.com", "/"); code != http.StatusNotFound {
			t.Fatalf("an unknown preview host: %d, want 404", code)
		}
		if code, _ := hostGet(t, srv, "elsewhere.example.com", "/"); code != http.StatusNotFound {
			t.Fatalf("an unknown host: %d, want 404", code)
		}
	})

	t.Run("an entry claiming production's host is refused by the server; production keeps it", func(t *testing.T) {
		evil := []poolindex.Site{{ID: contentagent.PreviewID("evil"), Hosts: []string{"docs.example.com", "evil--docs.preview.example.com"},
			Value: []byte(`{"version":1}`), Limits: layout.Limits}}
		data, err := poolindex.Render(2, evil)
		testenv.Must(t, err)
		evilTree := filepath.Join(layout.ContentDir(), contentagent.PreviewID("evil"), "0123456789abcdef")
		testenv.Must(t, os.MkdirAll(evilTree, 0o755))
		testenv.Must(t, os.WriteFile(filepath.Join(evilTree, "index.html"), []byte("evil\n"), 0o644))
		testenv.Must(t, os.Symlink("0123456789abcdef", filepath.Join(filepath.Dir(evilTree), "current")))
		testenv.Must(t, os.WriteFile(filepath.Join(dir, "index", "2-evil.json"), data, 0o644))
		testenv.Eventually(t, "the server reports the refused entry", func() error {
			_, body := adminGet(t, srv, "/sites")
			if !strings.Contains(body, "host docs.example.com is already site production.site's") {
				return fmt.Errorf("/sites: %s", body)
			}
			return nil
		})
		productionServed()
		if code, _ := hostGet(t, srv, "evil--docs.preview.example.com", "/"); code != http.StatusNotFound {
			t.Fatalf("the refused entry's own host: %d, want 404 (the whole entry is refused)", code)
		}
		testenv.Must(t, os.Remove(filepath.Join(dir, "index", "2-evil.json")))
	})

	c3 := rig.repo.Commit("pr one, again", siteFiles("pr one v2\n", "/old /new 301\n"), c2)
	rig.repo.Push("refs/heads/contrib", c3, false)
	t.Run("an update of the request: the preview serves the new commit", func(t *testing.T) {
		rig.pull(t, gts.PullEvent{Forge: gitwebhook.Gitea, Action: gts.Updated, Number: 1, Head: c3, Branch: "contrib"})
		testenv.Eventually(t, "the pod serves pr-1 at the new commit", func() error {
			rev, _ := pod.p.Revision()
			if len(rev.Previews) != 1 || rev.Previews[0].Commit != c3.String() {
				return fmt.Errorf("previews %+v", rev.Previews)
			}
			return nil
		})
		served("pr-1--docs.preview.example.com", "pr one v2\n")
		productionServed()
	})

	t.Run("the request closed: its host is 404, its trees gone; production unchanged", func(t *testing.T) {
		rig.pull(t, gts.PullEvent{Forge: gitwebhook.Gitea, Action: gts.Closed, Number: 1, Head: c3, Branch: "contrib"})
		waitPreviews(t, pod)
		testenv.Eventually(t, "the preview host gone", func() error {
			if code, body := hostGet(t, srv, "pr-1--docs.preview.example.com", "/"); code != http.StatusNotFound {
				return fmt.Errorf("%d %q", code, body)
			}
			return nil
		})
		entries, err := os.ReadDir(layout.ContentDir())
		testenv.Must(t, err)
		var left []string
		for _, e := range entries {
			left = append(left, e.Name())
		}
		if slices.Contains(left, contentagent.PreviewID("pr-1")) {
			t.Fatalf("pr-1's trees are left: %v", left)
		}
		productionServed()
		if rev, _ := pod.p.Revision(); rev.Commit != prod.Commit || rev.Digest != prod.Digest {
			t.Fatalf("the pod's production moved: %+v", rev)
		}
	})
}

// adminGet asks the server's admin port.
func adminGet(t *testing.T, srv *serverbin.Process, path string) (int, string) {
	t.Helper()
	resp, err := http.Get("http://" + srv.AdminAddr + path)
	testenv.Must(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	testenv.Must(t, err)
	return resp.StatusCode, string(body)
}
