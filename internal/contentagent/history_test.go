package contentagent_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

const pinToken = "pin-token-of-the-test"

// TestHistoryAndPin runs docs/design/deploys.md's steps 1 and 2 against the real test Git server over real HTTP:
// a fetcher keeping 3 deploys and two pullers keeping their trees; the history across a fetcher restart; a pin
// refused without the token and for a commit not in the history; a pin flipping both pods to a tree already on
// their disk (no bundle downloaded); fetches going on while pinned; the pin surviving a restart; the unpin.
func TestHistoryAndPin(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	src := gitsource.Source{URL: repo.URL, Ref: "main"}
	fetchDir := t.TempDir()
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(pinToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	configure := func(f *contentagent.Fetcher) { f.History, f.PinTokenFile = 3, tokenFile }

	var commits []plumbing.Hash
	push := func(page string) string {
		c := repo.Commit(page, map[string]gts.File{"index.html": gts.Regular(page + "\n")}, commits...)
		commits = []plumbing.Hash{c}
		repo.Push("refs/heads/main", c, false)
		return c.String()
	}
	c1 := push("v1")
	fetcher := startFetcher(t, src, nil, fetchDir, "127.0.0.1:0", "127.0.0.1:0", nil, configure)
	fetcher.nextSync(t)
	pods := []*runningPuller{startPuller(t, fetcher.url), startPuller(t, fetcher.url)}
	all := []string{c1}
	for _, page := range []string{"v2", "v3", "v4"} {
		c := push(page)
		all = append(all, c)
		fetcher.ticks <- time.Now()
		if e := fetcher.nextSync(t); e.rev.Commit != c {
			t.Fatalf("fetch %+v, want %s", e.rev, c)
		}
		for _, pod := range pods {
			pod.waitCommit(t, c)
		}
	}
	c2, c3, c4 := all[1], all[2], all[3]

	t.Run("the fetcher lists its last 3 deploys newest first; older bundles are gone", func(t *testing.T) {
		rev := revisionOf(t, fetcher.url)
		if got := commitsOf(rev.Deploys); !slices.Equal(got, []string{c4, c3, c2}) {
			t.Fatalf("deploys %v, want [v4 v3 v2]", got)
		}
		for i, d := range rev.Deploys {
			if d.FirstServed.IsZero() || d.Committed.IsZero() || d.Size == 0 || (i == 0) != d.LastServed.IsZero() {
				t.Errorf("deploy %d: %+v; want its times and size, lastServed only on the replaced ones", i, d)
			}
			if code, _ := get(t, fetcher.url+"/bundles/"+d.Bundle); code != http.StatusOK {
				t.Errorf("bundle of deploy %d: %d, want 200", i, code)
			}
		}
		if !rev.Deploys[1].LastServed.Equal(rev.Deploys[0].FirstServed) {
			t.Errorf("v3 last served %v, want when v4 was first served, %v", rev.Deploys[1].LastServed, rev.Deploys[0].FirstServed)
		}
	})

	t.Run("each puller keeps the trees of the history and no older one", func(t *testing.T) {
		for i, pod := range pods {
			if got, want := treesIn(t, pod.dir), sorted(c2, c3, c4); !slices.Equal(got, want) {
				t.Errorf("pod %d keeps %v, want %v", i, got, want)
			}
		}
	})

	t.Run("a pin needs the token", func(t *testing.T) {
		for name, token := range map[string]string{"no token": "", "another token": "Bearer wrong", "not bearer": pinToken} {
			if code, _ := postPin(t, fetcher.url, token, c2); code != http.StatusUnauthorized {
				t.Errorf("%s: %d, want 401", name, code)
			}
		}
		if code, _ := postPin(t, fetcher.url, "Bearer "+pinToken, "not-a-commit"); code != http.StatusBadRequest {
			t.Errorf("a malformed pin: %d, want 400", code)
		}
		if rev := revisionOf(t, fetcher.url); rev.Commit != c4 || rev.Pin != "" {
			t.Errorf("after refused pins the fetcher publishes %s pinned %q, want %s unpinned", rev.Commit, rev.Pin, c4)
		}
	})

	t.Run("a pin of a commit not in the history is refused and changes nothing", func(t *testing.T) {
		code, body := postPin(t, fetcher.url, "Bearer "+pinToken, c1)
		var failure contentagent.Failure
		_ = json.Unmarshal(body, &failure)
		if code != http.StatusConflict || failure.Reason != contentagent.ReasonNotInHistory {
			t.Errorf("pin of v1: %d %s, want 409 %s", code, body, contentagent.ReasonNotInHistory)
		}
		if rev := revisionOf(t, fetcher.url); rev.Commit != c4 || rev.Pin != "" {
			t.Errorf("the fetcher publishes %s pinned %q, want %s unpinned", rev.Commit, rev.Pin, c4)
		}
	})

	downloads := func() string {
		_, page := get(t, fetcher.url+"/metrics")
		return metric(page, "hyperstatic_git_bundle_downloads_total")
	}
	t.Run("a pin flips every pod to its kept tree without a download", func(t *testing.T) {
		before := downloads()
		code, body := postPin(t, fetcher.url, "Bearer "+pinToken, c2)
		var rev contentagent.Revision
		_ = json.Unmarshal(body, &rev)
		if code != http.StatusOK || rev.Commit != c2 || rev.Pin != c2 || len(rev.Deploys) != 3 || rev.Deploys[2].Commit != c2 {
			t.Fatalf("pin of v2: %d %s, want 200 publishing v2", code, body)
		}
		for i, pod := range pods {
			pod.waitCommit(t, c2)
			if got := pod.served(t, "index.html"); got != "v2\n" {
				t.Errorf("pod %d serves %q, want v2", i, got)
			}
		}
		if after := downloads(); after != before {
			t.Errorf("bundle downloads went from %s to %s: a rollback must not download", before, after)
		}
	})

	c5 := push("v5")
	t.Run("while pinned, fetches go on into the history and the pin stays published", func(t *testing.T) {
		fetcher.ticks <- time.Now()
		e := fetcher.nextSync(t)
		if e.rev.Commit != c2 || e.rev.Pin != c2 {
			t.Fatalf("after fetching v5 the fetcher publishes %s pinned %q, want v2", e.rev.Commit, e.rev.Pin)
		}
		// History 3: the newest two and the pinned one, which is never dropped.
		if got := commitsOf(e.rev.Deploys); !slices.Equal(got, []string{c5, c4, c2}) {
			t.Errorf("deploys %v, want [v5 v4 v2]", got)
		}
		if !e.rev.Deploys[0].FirstServed.IsZero() {
			t.Errorf("v5 was never published, yet first served at %v", e.rev.Deploys[0].FirstServed)
		}
		for _, pod := range pods {
			if rev, _ := pod.p.Revision(); rev.Commit != c2 {
				t.Errorf("a pod moved to %s while pinned", rev.Commit)
			}
		}
	})

	// A restart of the fetcher's container (same volume, same address), outside a subtest so that the new
	// fetcher lives on for the next steps.
	before := revisionOf(t, fetcher.url)
	addr, hookAddr := fetcher.addr, fetcher.hookAddr
	fetcher.stop()
	for i, pod := range pods {
		pod.waitBackoff(t, i)
	}
	fetcher = startFetcher(t, src, nil, fetchDir, addr, hookAddr, nil, configure)
	t.Run("the history and the pin survive a fetcher restart", func(t *testing.T) {
		after, _ := fetcher.f.Revision() // before its first fetch answers: restored from state.json
		if after.Commit != c2 || after.Pin != c2 || !slices.Equal(commitsOf(after.Deploys), commitsOf(before.Deploys)) {
			t.Errorf("restarted: %s pinned %q, deploys %v; want v2 pinned, %v", after.Commit, after.Pin,
				commitsOf(after.Deploys), commitsOf(before.Deploys))
		}
		if e := fetcher.nextSync(t); e.rev.Commit != c2 || e.rev.Pin != c2 {
			t.Errorf("the restarted fetcher's first fetch publishes %s, want the pinned v2", e.rev.Commit)
		}
	})
	for _, pod := range pods {
		pod.backoff.fire <- time.Now()
	}

	t.Run("unpinning publishes the newest deploy on every pod", func(t *testing.T) {
		code, body := postPin(t, fetcher.url, "Bearer "+pinToken, "")
		if code != http.StatusOK {
			t.Fatalf("unpin: %d %s", code, body)
		}
		for i, pod := range pods {
			pod.waitCommit(t, c5)
			if got := pod.served(t, "index.html"); got != "v5\n" {
				t.Errorf("pod %d serves %q, want v5", i, got)
			}
		}
		if rev := revisionOf(t, fetcher.url); rev.Pin != "" || rev.Commit != c5 {
			t.Errorf("after the unpin: %s pinned %q", rev.Commit, rev.Pin)
		}
	})

	t.Run("without a token configured pinning is off", func(t *testing.T) {
		if err := os.Remove(tokenFile); err != nil {
			t.Fatal(err)
		}
		if code, _ := postPin(t, fetcher.url, "Bearer "+pinToken, c4); code != http.StatusForbidden {
			t.Errorf("pin with no token file: %d, want 403", code)
		}
	})
}

// postPin POSTs {"pin": commit} ({"pin": null} for "") to the fetcher with the Authorization header auth.
func postPin(t testing.TB, fetcherURL, auth, commit string) (int, []byte) {
	t.Helper()
	body := `{"pin": null}`
	if commit != "" {
		body = `{"pin": "` + commit + `"}`
	}
	req, err := http.NewRequest(http.MethodPost, fetcherURL+"/pin", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, bytes.TrimSpace(data)
}

func revisionOf(t testing.TB, fetcherURL string) contentagent.Revision {
	t.Helper()
	code, body := get(t, fetcherURL+"/revision")
	var rev contentagent.Revision
	if err := json.Unmarshal([]byte(body), &rev); code != http.StatusOK || err != nil {
		t.Fatalf("GET /revision: %d %s (%v)", code, body, err)
	}
	return rev
}

func commitsOf(deploys []contentagent.Deploy) []string {
	var out []string
	for _, d := range deploys {
		out = append(out, d.Commit)
	}
	return out
}

// treesIn lists the trees a puller's directory holds, sorted.
func treesIn(t testing.TB, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if gitsource.TreeName(e.Name()) {
			out = append(out, e.Name())
		}
	}
	slices.Sort(out)
	return out
}

func sorted(s ...string) []string { slices.Sort(s); return s }
