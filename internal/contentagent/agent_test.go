package contentagent_test

import (
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// siteFiles is a commit of the site: the served tree under site/, and a file outside it.
func siteFiles(page, redirects string) map[string]gts.File {
	return map[string]gts.File{
		"README.md":       gts.Regular("not served\n"),
		"site/index.html": gts.Regular(page),
		"site/_redirects": gts.Regular(redirects),
	}
}

// TestFetcherAndPullers runs the design's processes against the real test Git server (a private repository
// over smart HTTP) with the real server binary as the check: one fetcher, two pullers (two pods), through
// polling, the webhook, a refused webhook, a commit failing the check, and a fetcher restart.
func TestFetcherAndPullers(t *testing.T) {
	check := contentagent.ServerCheck(serverbin.Require(t), time.Minute, gitsource.DefaultMaxEntries, gitsource.DefaultMaxDepth)
	srv, base := gts.Start(t, "reader", "s3cret", "")
	repo := srv.NewRepo(t, base, "site.git", &githttp.BasicAuth{Username: "reader", Password: "s3cret"})

	// The credentials come the way a pod gets them: a mounted Secret, Flux's keys, kubelet's extra names.
	secretDir := t.TempDir()
	for name, v := range map[string]string{"username": "reader", "password": "s3cret", "..data": "ignored"} {
		if err := os.WriteFile(filepath.Join(secretDir, name), []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	creds, err := contentagent.ReadSecretDir(secretDir)
	if err != nil {
		t.Fatal(err)
	}
	auth, err := gitsource.AuthFromSecret(repo.URL, creds)
	if err != nil {
		t.Fatal(err)
	}
	src := gitsource.Source{URL: repo.URL, Ref: "main", Path: "site", Auth: auth}
	hookSecret := []byte("webhook-secret")
	fetchDir := t.TempDir()

	c1 := repo.Commit("v1", siteFiles("v1\n", "/old /new 301\n"))
	repo.Push("refs/heads/main", c1, false)
	fetcher := startFetcher(t, src, check, fetchDir, "127.0.0.1:0", "127.0.0.1:0", hookSecret)
	if e := fetcher.nextSync(t); e.trigger != contentagent.TriggerStart || e.rev.Commit != c1.String() || e.rev.LastError != nil {
		t.Fatalf("first fetch: %+v, want %s from the start", e, c1)
	}
	pods := []*runningPuller{startPuller(t, fetcher.url), startPuller(t, fetcher.url)}

	t.Run("both pullers serve the first commit, with its time and digest", func(t *testing.T) {
		pub, _ := fetcher.f.Revision()
		for i, pod := range pods {
			rev := pod.waitCommit(t, c1.String())
			if rev.Digest != pub.Digest || pod.served(t, "index.html") != "v1\n" {
				t.Errorf("pod %d: %+v serving %q, want the fetcher's %s", i, rev, pod.served(t, "index.html"), pub.Digest)
			}
		}
		if pub.Ref != "refs/heads/main" || pub.CommitTime.IsZero() || pub.Size == 0 {
			t.Errorf("published revision %+v: want the ref, the commit time, the size", pub)
		}
		if _, err := os.Stat(filepath.Join(pods[0].p.Store.Served(), "README.md")); !os.IsNotExist(err) {
			t.Errorf("README.md outside path site/ is served (stat: %v)", err)
		}
	})

	t.Run("an interval fetch takes a pushed commit to both pullers", func(t *testing.T) {
		c2 := repo.Commit("v2", siteFiles("v2\n", "/old /new 301\n"), c1)
		repo.Push("refs/heads/main", c2, false)
		fetcher.ticks <- time.Now()
		if e := fetcher.nextSync(t); e.trigger != contentagent.TriggerInterval || e.rev.Commit != c2.String() {
			t.Fatalf("fetch %+v, want %s on the interval", e, c2)
		}
		for _, pod := range pods {
			pod.waitCommit(t, c2.String())
			if got := pod.served(t, "index.html"); got != "v2\n" {
				t.Errorf("served %q, want v2", got)
			}
		}
	})

	t.Run("a commit changing only files outside the path reaches the pullers too", func(t *testing.T) {
		prev, _ := fetcher.f.Revision()
		files := siteFiles("v2\n", "/old /new 301\n")
		files["README.md"] = gts.Regular("changed outside site/\n")
		c := repo.Commit("readme", files, plumbing.NewHash(prev.Commit))
		repo.Push("refs/heads/main", c, false)
		fetcher.ticks <- time.Now()
		if e := fetcher.nextSync(t); e.rev.Commit != c.String() || e.rev.Digest != prev.Digest {
			t.Fatalf("fetch %+v, want %s with the same tree digest %s", e.rev, c, prev.Digest)
		}
		for _, pod := range pods {
			if rev := pod.waitCommit(t, c.String()); rev.Digest != prev.Digest {
				t.Errorf("a puller: %+v, want digest %s", rev, prev.Digest)
			}
		}
	})

	t.Run("a signed webhook fetches at once; a bad signature and another repository do nothing", func(t *testing.T) {
		c3 := repo.Commit("v3", siteFiles("v3\n", "/old /new 301\n"))
		repo.Push("refs/heads/main", c3, true) // a force-push: a commit without the old one as parent
		if code := postGitHubPush(t, fetcher.hookURL, repo.URL, "refs/heads/main", c3.String(), []byte("wrong")); code != http.StatusUnauthorized {
			t.Errorf("bad signature: status %d, want 401", code)
		}
		if code := postGitHubPush(t, fetcher.hookURL, base+"/other.git", "refs/heads/main", c3.String(), hookSecret); code != http.StatusAccepted {
			t.Errorf("another repository: status %d, want 202", code)
		}
		if code := postGitHubPush(t, fetcher.hookURL, repo.URL, "refs/heads/dev", c3.String(), hookSecret); code != http.StatusAccepted {
			t.Errorf("another branch: status %d, want 202", code)
		}
		_, page := get(t, fetcher.url+"/metrics")
		if got := metric(page, `hyperstatic_git_webhook_requests_total{result="BadSignature"}`); got != "1" {
			t.Errorf("BadSignature deliveries %q, want 1", got)
		}
		if got := metric(page, `hyperstatic_git_webhook_requests_total{result="ignored"}`); got != "2" {
			t.Errorf("ignored deliveries %q, want 2", got)
		}
		if got := metric(page, `hyperstatic_git_fetch_triggers_total{trigger="webhook"}`); got != "" {
			t.Fatalf("a refused or foreign webhook started a fetch (%s)", got)
		}
		// The interval timer never fires here: the fetch that follows is the signed webhook's.
		if code := postGitHubPush(t, fetcher.hookURL, repo.URL, "refs/heads/main", c3.String(), hookSecret); code != http.StatusOK {
			t.Fatalf("signed webhook: status %d, want 200", code)
		}
		if e := fetcher.nextSync(t); e.trigger != contentagent.TriggerWebhook || e.rev.Commit != c3.String() {
			t.Fatalf("the fetch after the webhook: %+v, want %s by the webhook", e, c3)
		}
		for _, pod := range pods {
			pod.waitCommit(t, c3.String())
		}
	})

	var good string
	t.Run("a commit failing the check keeps the last bundle and says why", func(t *testing.T) {
		before, _ := fetcher.f.Revision()
		bad := repo.Commit("bad redirects", siteFiles("broken\n", "/only-a-source\n"))
		repo.Push("refs/heads/main", bad, true)
		fetcher.ticks <- time.Now()
		e := fetcher.nextSync(t)
		if e.rev.Digest != before.Digest || e.rev.Commit != before.Commit || e.rev.LastError == nil ||
			e.rev.LastError.Reason != string(gitsource.InvalidContent) {
			t.Fatalf("after the bad commit: %+v, want %s still published and an InvalidContent error", e.rev, before.Commit)
		}
		var status contentagent.Revision
		data, err := os.ReadFile(filepath.Join(fetchDir, "status.json"))
		if err == nil {
			err = json.Unmarshal(data, &status)
		}
		if err != nil || status.LastError == nil || status.LastError.Reason != "InvalidContent" || status.Commit != before.Commit {
			t.Errorf("status file %s (%v): want InvalidContent with %s published", data, err, before.Commit)
		}
		_, body := get(t, fetcher.url+"/revision")
		if err := json.Unmarshal([]byte(body), &status); err != nil || status.LastError == nil || status.LastError.Reason != "InvalidContent" {
			t.Errorf("/revision %s: want the InvalidContent reason", body)
		}
		_, page := get(t, fetcher.url+"/metrics")
		if got := metric(page, `hyperstatic_git_fetch_total{result="InvalidContent"}`); got != "1" {
			t.Errorf("InvalidContent fetches %q, want 1", got)
		}
		if got := metric(page, `hyperstatic_git_revision_info{commit="`+before.Commit+`"}`); got != "1" {
			t.Errorf("revision_info of %s is %q, want 1", before.Commit, got)
		}
		for _, pod := range pods {
			if cur, _ := pod.p.Store.Current(); cur != before.Commit || pod.served(t, "index.html") != "v3\n" {
				t.Errorf("a puller serves %s %q, want %s v3", cur, pod.served(t, "index.html"), before.Commit)
			}
		}
		// The next good commit is taken with no other action.
		fixed := repo.Commit("fixed", siteFiles("v4\n", "/old /new 301\n"), bad)
		repo.Push("refs/heads/main", fixed, false)
		fetcher.ticks <- time.Now()
		if e := fetcher.nextSync(t); e.rev.Commit != fixed.String() || e.rev.LastError != nil {
			t.Fatalf("after the fix: %+v, want %s and no error", e.rev, fixed)
		}
		for _, pod := range pods {
			pod.waitCommit(t, fixed.String())
		}
		good = fixed.String()
	})

	t.Run("a restarted fetcher keeps the pullers on their tree and then takes the next push", func(t *testing.T) {
		if good == "" {
			t.Skip("needs the previous step")
		}
		before, _ := fetcher.f.Revision()
		addr, hookAddr := fetcher.addr, fetcher.hookAddr
		fetcher.stop()
		for i, pod := range pods {
			pod.waitBackoff(t, i)
			if cur, _ := pod.p.Store.Current(); cur != good || pod.served(t, "index.html") != "v4\n" {
				t.Fatalf("pod %d serves %s with the fetcher down, want %s", i, cur, good)
			}
		}
		// Same volume, same address: the last bundle is served before the first fetch answers.
		fetcher = startFetcher(t, src, check, fetchDir, addr, hookAddr, hookSecret)
		if rev, _ := fetcher.f.Revision(); rev.Digest != before.Digest || rev.Commit != good {
			t.Errorf("restarted fetcher starts with %+v, want %s", rev, before.Digest)
		}
		if e := fetcher.nextSync(t); e.trigger != contentagent.TriggerStart || e.rev.Digest != before.Digest {
			t.Errorf("restarted fetcher's first fetch: %+v, want the same bundle", e)
		}
		for _, pod := range pods {
			pod.backoff.fire <- time.Now()
		}
		c5 := repo.Commit("v5", siteFiles("v5\n", "/old /new 301\n"))
		repo.Push("refs/heads/main", c5, true)
		if code := postGitHubPush(t, fetcher.hookURL, repo.URL, "refs/heads/main", c5.String(), hookSecret); code != http.StatusOK {
			t.Fatalf("webhook: status %d", code)
		}
		for i, pod := range pods {
			if rev := pod.waitCommit(t, c5.String()); pod.served(t, "index.html") != "v5\n" {
				t.Errorf("pod %d: %+v serves %q, want v5", i, rev, pod.served(t, "index.html"))
			}
		}
		// A restarted puller container finds its tree and does not download it again.
		_, page := get(t, fetcher.url+"/metrics")
		downloads := metric(page, "hyperstatic_git_bundle_downloads_total")
		pods[1].stop()
		restarted := startPullerIn(t, fetcher.url, pods[1].dir)
		if rev := restarted.waitCommit(t, c5.String()); restarted.served(t, "index.html") != "v5\n" {
			t.Errorf("restarted puller: %+v serves %q, want v5", rev, restarted.served(t, "index.html"))
		}
		if _, page := get(t, fetcher.url+"/metrics"); metric(page, "hyperstatic_git_bundle_downloads_total") != downloads || downloads != "2" {
			t.Errorf("bundle downloads went from %s to %s, want 2 both times (one per pod for v5)", downloads, metric(page, "hyperstatic_git_bundle_downloads_total"))
		}
	})
}

// The fetcher's check runs the server under the site's tree caps (the flags the operator passes the fetcher), not
// the server's defaults: a tree over them is refused before it is published, naming the limit.
func TestServerCheckCarriesTheTreeLimits(t *testing.T) {
	bin := serverbin.Require(t)
	dir := t.TempDir()
	for _, name := range []string{"index.html", "a.html", "b.html", "c.html"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("<p>x</p>"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := contentagent.ServerCheck(bin, time.Minute, 2, 64)(dir); err == nil || !strings.Contains(err.Error(), "--max-entries") {
		t.Fatalf("4 files under --max-entries 2: want refused naming the limit, got %v", err)
	}
	if err := contentagent.ServerCheck(bin, time.Minute, 4, 64)(dir); err != nil {
		t.Fatalf("4 files under --max-entries 4: %v", err)
	}
}
