package contract

import (
	"fmt"
	"io"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The puller ↔ server skew protection contract (docs/design/deploys.md, decision 3): the real content-agent
// fetcher and puller, started from the operator's own command lines, and the real server, started from the
// operator's own arguments with the site value it renders for a site with spec.server.skewProtection. The puller
// writes Dir/deploys.json before it flips Dir/current; the server reads it with the tree. After a deploy that no
// longer has an asset, the server answers it from the deploy before, marked with that commit; a navigation gets
// the usual 404.
func TestContractSkewProtection(t *testing.T) {
	srv, base := gittestserver.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "docs.git", nil)
	c1 := repo.Commit("v1", map[string]gittestserver.File{"index.html": gittestserver.Regular("v1\n"),
		"assets/app-1.js": gittestserver.Regular("one\n")})
	repo.Push("refs/heads/main", c1, false)

	site := gitSite(v1alpha1.GitContent{URL: repo.URL, Ref: "main"})
	site.Spec.Server.SkewProtection = &v1alpha1.SkewProtection{Window: metav1.Duration{Duration: time.Hour}}
	dir := t.TempDir()
	fetchAddr := runOperatorFetcher(t, site, dir)
	pull := gitcontent.PullArgs(site)
	pull = setArg(t, pull, "--fetcher", "http://"+fetchAddr)
	pull = setArg(t, pull, "--dir", filepath.Join(dir, "site"))
	// The server's admin port is chosen when it starts, after the first tree: the puller then waits its bound
	// after a flip instead of the reload count, which only delays its pruning.
	pull = setArg(t, pull, "--server-admin", "http://127.0.0.1:1")
	runPuller(t, pull, freePort(t))

	bin := serverbin.Require(t)
	server := serverbin.Start(t, bin, operatorArgs(t, bin, site, filepath.Join(dir, "site", "current")))
	get := func(path string, header ...string) (int, string, http.Header) {
		req, err := http.NewRequest(http.MethodGet, "http://"+server.HTTPAddr+path, nil)
		testenv.Must(t, err)
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		resp, err := http.DefaultClient.Do(req)
		testenv.Must(t, err)
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body), resp.Header
	}

	c2 := repo.Commit("v2", map[string]gittestserver.File{"index.html": gittestserver.Regular("v2\n"),
		"assets/app-2.js": gittestserver.Regular("two\n")}, c1)
	repo.Push("refs/heads/main", c2, false)
	testenv.Eventually(t, "the server serving v2", func() error {
		if _, body, _ := get("/index.html"); body != "v2\n" {
			return fmt.Errorf("index.html is %q", body)
		}
		return nil
	})
	code, body, h := get("/assets/app-1.js", "Sec-Fetch-Dest", "script")
	if code != http.StatusOK || body != "one\n" || h.Get("X-Hyperstatic-Deploy") != c1.String() || h.Get("Cache-Control") != "private, max-age=60" {
		t.Errorf("v1's asset after the deploy of v2: %d %q %v; want 200 from v1 marked %s", code, body, h, c1)
	}
	if code, _, h := get("/assets/app-2.js"); code != http.StatusOK || h.Get("X-Hyperstatic-Deploy") != "" {
		t.Errorf("v2's own asset: %d %v, want 200 unmarked", code, h)
	}
	if code, _, _ := get("/assets/app-1.js", "Sec-Fetch-Dest", "document"); code != http.StatusNotFound {
		t.Errorf("a navigation to v1's asset: %d, want 404", code)
	}
}
