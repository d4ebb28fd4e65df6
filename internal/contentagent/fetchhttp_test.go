package contentagent_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// TestFetcherHTTP covers the fetcher's port: the long poll answers on a change or on its timeout, bundles are
// served by digest alone, immutable and with their length, and a GitLab or Gitea push is honoured like GitHub's.
func TestFetcherHTTP(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	c1 := repo.Commit("v1", map[string]gts.File{"index.html": gts.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)
	fetcher := startFetcher(t, gitsource.Source{URL: repo.URL, Ref: "main"}, nil, t.TempDir(), "127.0.0.1:0", "127.0.0.1:0", []byte("s"))
	first := fetcher.nextSync(t).rev

	// The long poll: a caller without the digest is answered at once; one with it waits for a change.
	if code, body := get(t, fetcher.url+"/revision?wait="); code != http.StatusOK || !strings.Contains(body, first.Digest) {
		t.Fatalf("wait= (no digest yet): %d %s", code, body)
	}
	answers := longPoll(fetcher.url + "/revision?wait=" + first.Digest)
	c2 := repo.Commit("v2", map[string]gts.File{"index.html": gts.Regular("v2\n")}, c1)
	repo.Push("refs/heads/main", c2, false)
	fetcher.ticks <- time.Now()
	second := fetcher.nextSync(t).rev
	if rev := <-answers; rev.Commit != c2.String() || rev.Digest != second.Digest {
		t.Errorf("the long poll answered %+v, want %s", rev, c2)
	}
	// With nothing new, the poll ends at its timeout with the same digest.
	answers = longPoll(fetcher.url + "/revision?wait=" + second.Digest)
	fetcher.timeouts <- time.Now()
	if rev := <-answers; rev.Digest != second.Digest {
		t.Errorf("the timed-out poll answered %+v, want the unchanged %s", rev, second.Digest)
	}

	// Bundles: the current and the previous one are served, immutable, with their length; others are not.
	for _, rev := range []contentagent.Revision{first, second} {
		resp, err := http.Get(fetcher.url + "/bundles/" + rev.Digest)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK || resp.ContentLength != rev.Size || !strings.Contains(resp.Header.Get("Cache-Control"), "immutable") {
			t.Errorf("bundle %s: %s, length %d (want %d), Cache-Control %q", rev.Digest, resp.Status, resp.ContentLength, rev.Size, resp.Header.Get("Cache-Control"))
		}
	}
	for path, want := range map[string]int{
		"/bundles/" + strings.Repeat("0", 64):        http.StatusNotFound,
		"/bundles/" + strings.ToUpper(second.Digest): http.StatusBadRequest,
		"/bundles/state.json":                        http.StatusBadRequest,
		"/bundles/..%2fstate.json":                   http.StatusBadRequest,
		"/hooks":                                     http.StatusNotFound, // not on this port
		"/healthz":                                   http.StatusOK,
	} {
		if code, _ := get(t, fetcher.url+path); code != want {
			t.Errorf("GET %s: %d, want %d", path, code, want)
		}
	}

	// Gitea and GitLab deliveries for the branch trigger a fetch too.
	for _, forge := range []string{"gitea", "gitlab"} {
		c := repo.Commit(forge, map[string]gts.File{"index.html": gts.Regular(forge + "\n")}, c2)
		repo.Push("refs/heads/main", c, true)
		if code := postForgePush(t, forge, fetcher.hookURL, repo.URL, c.String(), []byte("s")); code != http.StatusOK {
			t.Fatalf("%s push: status %d", forge, code)
		}
		if e := fetcher.nextSync(t); e.trigger != contentagent.TriggerWebhook || e.rev.Commit != c.String() {
			t.Errorf("%s push: fetch %+v, want %s by the webhook", forge, e, c)
		}
	}
}

// longPoll GETs url in the background and delivers the revision answered (zero on any error).
func longPoll(url string) <-chan contentagent.Revision {
	answers := make(chan contentagent.Revision, 1)
	go func() {
		var rev contentagent.Revision
		if resp, err := http.Get(url); err == nil {
			_ = json.NewDecoder(resp.Body).Decode(&rev)
			_ = resp.Body.Close()
		}
		answers <- rev
	}()
	return answers
}

// TestFetcherHealthz: the fetcher's /healthz is 503 until a bundle is published, 200 from then on even when a
// fetch fails, and 200 at once for a fetcher restarted on its volume (the bundle restored from its state) whose
// fetches fail.
func TestFetcherHealthz(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	dir := t.TempDir()
	src := gitsource.Source{URL: base + "/site.git", Ref: "main"}
	fetcher := startFetcher(t, src, nil, dir, "127.0.0.1:0", "127.0.0.1:0", nil)
	if e := fetcher.nextSync(t); e.rev.LastError == nil || e.rev.LastError.Reason != string(gitsource.RepositoryNotFound) {
		t.Fatalf("first fetch of a missing repository: %+v, want RepositoryNotFound", e.rev)
	}
	if code, body := get(t, fetcher.url+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz with nothing published: %d %q, want 503", code, body)
	}

	repo := srv.NewRepo(t, base, "site.git", nil)
	c1 := repo.Commit("v1", map[string]gts.File{"index.html": gts.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)
	fetcher.ticks <- time.Now()
	published := fetcher.nextSync(t).rev
	if published.Commit != c1.String() {
		t.Fatalf("fetch: %+v, want %s", published, c1)
	}
	if code, _ := get(t, fetcher.url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz with a bundle published: %d, want 200", code)
	}

	// Restarted on the same volume while the forge refuses it: the restored bundle makes it healthy.
	fetcher.stop()
	srv.SetCredentials("someone", "else", "")
	fetcher = startFetcher(t, src, nil, dir, "127.0.0.1:0", "127.0.0.1:0", nil)
	if e := fetcher.nextSync(t); e.rev.LastError == nil || e.rev.LastError.Reason != string(gitsource.AuthFailed) || e.rev.Digest != published.Digest {
		t.Fatalf("restarted fetcher's first fetch: %+v, want AuthFailed with %s still published", e.rev, published.Digest)
	}
	if code, _ := get(t, fetcher.url+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz of a restarted fetcher with its bundle restored: %d, want 200", code)
	}
}

// TestFetcherLongPollOnFailures: with &failed=, the long poll also answers on a new failure and on a success
// after one (the operator's watch); without it a failure wakes nobody (the pullers).
func TestFetcherLongPollOnFailures(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	c1 := repo.Commit("v1", map[string]gts.File{"index.html": gts.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)
	fetcher := startFetcher(t, gitsource.Source{URL: repo.URL, Ref: "main"}, nil, t.TempDir(), "127.0.0.1:0", "127.0.0.1:0", nil)
	good := fetcher.nextSync(t).rev
	have := fetcher.url + "/revision?wait=" + good.Digest + "&commit=" + good.Commit

	operator := longPoll(have + "&failed=")
	srv.SetCredentials("someone", "else", "")
	fetcher.ticks <- time.Now()
	failed := fetcher.nextSync(t).rev
	if failed.LastError == nil {
		t.Fatalf("a fetch with refused credentials: %+v, want a failure", failed)
	}
	if rev := <-operator; rev.LastError == nil || !rev.LastError.Time.Equal(failed.LastError.Time) || rev.Digest != good.Digest {
		t.Errorf("the operator's poll answered %+v, want the failure with %s still published", rev, good.Digest)
	}
	puller := longPoll(have)
	fetcher.timeouts <- time.Now()
	if rev := <-puller; rev.Digest != good.Digest || rev.LastError == nil {
		t.Errorf("the puller's poll answered %+v, want its timeout with the same digest", rev)
	}

	// The same failure, known to the caller, holds the poll; the next success (same commit) answers it.
	operator = longPoll(have + "&failed=" + failed.LastError.Time.Format(time.RFC3339Nano))
	srv.SetCredentials("", "", "")
	fetcher.ticks <- time.Now()
	if e := fetcher.nextSync(t); e.rev.LastError != nil {
		t.Fatalf("fetch after the credentials are lifted: %+v", e.rev)
	}
	if rev := <-operator; rev.LastError != nil || rev.Digest != good.Digest {
		t.Errorf("the operator's poll answered %+v, want the success", rev)
	}
}
