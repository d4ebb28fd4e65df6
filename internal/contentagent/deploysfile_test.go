package contentagent_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
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
