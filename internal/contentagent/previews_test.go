package contentagent_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
	"hyperstatic.dev/hyperstatic/internal/previews"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// previewInterval is the previews' listing interval in these tests, mapped to the test's own channel.
const previewInterval = 3 * time.Hour

// previewRig is a fetcher with previews over the real test Git server, its previews' timer and clock the test's.
type previewRig struct {
	*runningFetcher
	repo      *gts.Repo
	srv       *gts.Server
	secret    []byte
	listTicks chan time.Time
	rounds    chan syncEvent
	mu        sync.Mutex
	now       time.Time
}

func (r *previewRig) clock() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.now
}

func (r *previewRig) advance(d time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.now = r.now.Add(d)
}

// nextRound returns the previews' next round.
func (r *previewRig) nextRound(t *testing.T) syncEvent {
	t.Helper()
	select {
	case e := <-r.rounds:
		return e
	case <-time.After(waitLimit):
		t.Fatal("no previews round")
		return syncEvent{}
	}
}

// pull makes the forge act on a pull request and deliver its event; the round it starts is returned.
func (r *previewRig) pull(t *testing.T, ev gts.PullEvent) syncEvent {
	t.Helper()
	ev.RepoURL = r.repo.URL
	if err := r.srv.Pull("site.git", ev); err != nil {
		t.Fatal(err)
	}
	status, err := ev.Deliver(context.Background(), http.DefaultClient, gts.Hook{URL: r.hookURL, Secret: r.secret})
	if err != nil || status != http.StatusOK {
		t.Fatalf("%s #%d %s: delivery %d %v", ev.Forge, ev.Number, ev.Action, status, err)
	}
	e := r.nextRound(t)
	if e.trigger != contentagent.TriggerWebhook {
		t.Fatalf("round after the event: trigger %s", e.trigger)
	}
	return e
}

func startPreviewRig(t *testing.T, settings previews.Settings, check func(string) error) *previewRig {
	t.Helper()
	srv, base := gts.Start(t, "", "", "")
	r := &previewRig{srv: srv, repo: srv.NewRepo(t, base, "site.git", nil), secret: []byte("hook-secret"),
		listTicks: make(chan time.Time), rounds: make(chan syncEvent, 100),
		now: time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)}
	dir := t.TempDir()
	c1 := r.repo.Commit("main", siteFiles("main\n", "/old /new 301\n"))
	r.repo.Push("refs/heads/main", c1, false)
	r.runningFetcher = startFetcher(t, gitsource.Source{URL: r.repo.URL, Ref: "main", Path: "site"}, check, dir,
		"127.0.0.1:0", "127.0.0.1:0", r.secret, func(f *contentagent.Fetcher) {
			f.Previews, f.PreviewDir, f.PreviewInterval = settings, filepath.Join(dir, "previews"), previewInterval
			after := f.After
			f.After = func(d time.Duration) <-chan time.Time {
				if d == previewInterval {
					return r.listTicks
				}
				return after(d)
			}
			f.Now = r.clock
			f.OnPreviews = func(trigger string, rev contentagent.Revision) { r.rounds <- syncEvent{trigger, rev} }
		})
	r.nextSync(t)
	r.nextRound(t)
	return r
}

// bundleFile downloads a bundle from the fetcher, checks its digest and extracts it; it returns the tree's index.html.
func bundlePage(t *testing.T, fetcherURL, digest string) string {
	t.Helper()
	code, body := get(t, fetcherURL+"/bundles/"+digest)
	if code != http.StatusOK {
		t.Fatalf("bundle %s: %d", digest, code)
	}
	sum := sha256.Sum256([]byte(body))
	if hex.EncodeToString(sum[:]) != digest {
		t.Fatalf("bundle %s has another digest", digest)
	}
	dir := t.TempDir()
	if err := gitsource.ExtractBundle(bytes.NewReader([]byte(body)), dir, digest, gitsource.Source{}.Limits()); err != nil {
		t.Fatal(err)
	}
	page, err := os.ReadFile(filepath.Join(dir, "index.html"))
	if err != nil {
		t.Fatal(err)
	}
	return string(page)
}

func names(ps []contentagent.Preview) string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

func previewNamed(t *testing.T, rev contentagent.Revision, name string) contentagent.Preview {
	t.Helper()
	for _, p := range rev.Previews {
		if p.Name == name {
			return p
		}
	}
	t.Fatalf("no preview %s in %s", name, names(rev.Previews))
	return contentagent.Preview{}
}

// TestFetcherPreviews runs step b of issue 41's previews against the real test Git server, its pull requests and
// their webhooks in the three forges' formats, and the real server's --check: pull requests and a branch become
// previews with their own checked bundles; a commit failing the check is not published and says why; a closed
// request, a deleted branch and the TTL remove them; the cap counts the rest; and production's revision and
// bundle stay byte for byte what they were, with no production fetch, while previews come and go.
func TestFetcherPreviews(t *testing.T) {
	check := contentagent.ServerCheck(serverbin.Require(t), time.Minute, gitsource.DefaultMaxEntries, gitsource.DefaultMaxDepth)
	rig := startPreviewRig(t, previews.Settings{PullRequests: true, Branches: []string{"feature/*"}, TTL: time.Hour, Max: 2}, check)
	repo := rig.repo
	prod, _ := rig.f.Revision()
	prodPage := bundlePage(t, rig.url, prod.Digest)
	if prodPage != "main\n" || len(prod.Previews) != 0 {
		t.Fatalf("production %q, previews %v", prodPage, prod.Previews)
	}
	productionUnchanged := func(t *testing.T) {
		t.Helper()
		rev := revisionOf(t, rig.url)
		if rev.Digest != prod.Digest || rev.Commit != prod.Commit || len(rev.Deploys) != 1 {
			t.Fatalf("production moved: %+v, want %s at %s", rev, prod.Commit, prod.Digest)
		}
		if page := bundlePage(t, rig.url, prod.Digest); page != prodPage {
			t.Fatalf("production's bundle now serves %q", page)
		}
		select {
		case e := <-rig.events:
			t.Fatalf("a production fetch happened: %+v", e)
		default:
		}
	}
	main := prod.Commit

	c2 := repo.Commit("pr one", siteFiles("pr one\n", "/old /new 301\n"))
	repo.Push("refs/heads/contrib", c2, false)
	t.Run("a GitHub pull request opened: its preview is fetched at once, checked and bundled", func(t *testing.T) {
		e := rig.pull(t, gts.PullEvent{Forge: gitwebhook.GitHub, Action: gts.Opened, Number: 1, Head: c2, Branch: "contrib"})
		p := previewNamed(t, e.rev, "pr-1")
		if p.Ref != "refs/pull/1/head" || p.Commit != c2.String() || p.Error != nil || !p.Since.Equal(rig.clock()) || p.Size == 0 {
			t.Fatalf("pr-1: %+v", p)
		}
		if page := bundlePage(t, rig.url, p.Bundle); page != "pr one\n" {
			t.Fatalf("pr-1's bundle serves %q", page)
		}
		productionUnchanged(t)
	})

	bad := repo.Commit("mr two", siteFiles("mr two\n", "/broken\n"))
	repo.Push("refs/heads/broken", bad, false)
	t.Run("a GitLab merge request failing --check is not published and says why", func(t *testing.T) {
		e := rig.pull(t, gts.PullEvent{Forge: gitwebhook.GitLab, Action: gts.Opened, Number: 2, Head: bad, Branch: "broken"})
		p := previewNamed(t, e.rev, "mr-2")
		if p.Bundle != "" || p.Commit != "" || p.Error == nil || p.Error.Reason != string(gitsource.InvalidContent) ||
			p.FailedCommit != bad.String() || !strings.Contains(p.Error.Message, "_redirects") {
			t.Fatalf("mr-2: %+v (error %+v)", p, p.Error)
		}
		if names(e.rev.Previews) != "pr-1,mr-2" {
			t.Fatalf("previews %s", names(e.rev.Previews))
		}
		// The operator's reading of the same answer (internal/gitrevision, which never trusts the pod).
		_, body := get(t, rig.url+"/revision")
		read, err := gitrevision.Parse([]byte(body))
		if err != nil {
			t.Fatalf("the operator refuses the fetcher's answer: %v", err)
		}
		if len(read.Previews) != 2 || read.Previews[0].Name != "pr-1" || read.Previews[0].Commit != c2.String() ||
			read.Previews[0].Bundle != e.rev.Previews[0].Bundle || read.Previews[1].Failure == nil ||
			read.Previews[1].Failure.Reason != "GitInvalidContent" || read.Previews[1].FailedCommit != bad.String() ||
			read.PreviewsTag == "" {
			t.Fatalf("the operator reads %+v", read)
		}
		productionUnchanged(t)
	})

	c3 := repo.Commit("feature", siteFiles("feature x\n", "/old /new 301\n"))
	repo.Push("refs/heads/feature/x", c3, false)
	featureName, _ := previews.Settings{Branches: []string{"feature/*"}}.Name("refs/heads/feature/x", "")
	t.Run("a push to a previewed branch lists at once; over the cap it is counted, not previewed", func(t *testing.T) {
		if code := postGitHubPush(t, rig.hookURL, repo.URL, "refs/heads/feature/x", c3.String(), rig.secret); code != http.StatusOK {
			t.Fatalf("push webhook: %d", code)
		}
		e := rig.nextRound(t)
		if names(e.rev.Previews) != "pr-1,mr-2" || e.rev.PreviewsSkipped != 1 {
			t.Fatalf("previews %s, skipped %d; want pr-1,mr-2 and 1 skipped", names(e.rev.Previews), e.rev.PreviewsSkipped)
		}
		productionUnchanged(t)
	})

	var pr1Bundle string
	t.Run("the pull request closed: its preview goes though the forge keeps its ref; the branch takes the place", func(t *testing.T) {
		before, _ := rig.f.Revision()
		pr1Bundle = previewNamed(t, before, "pr-1").Bundle
		e := rig.pull(t, gts.PullEvent{Forge: gitwebhook.GitHub, Action: gts.Closed, Number: 1, Head: c2, Branch: "contrib"})
		if names(e.rev.Previews) != "mr-2,"+featureName || e.rev.PreviewsSkipped != 0 {
			t.Fatalf("previews %s, skipped %d", names(e.rev.Previews), e.rev.PreviewsSkipped)
		}
		if code, _ := get(t, rig.url+"/bundles/"+pr1Bundle); code != http.StatusNotFound {
			t.Fatalf("the closed request's bundle: %d, want 404 (pruned)", code)
		}
		if page := bundlePage(t, rig.url, previewNamed(t, e.rev, featureName).Bundle); page != "feature x\n" {
			t.Fatalf("%s serves %q", featureName, page)
		}
		// The next listing does not bring it back: the ref is still there, at the commit it was closed at.
		rig.listTicks <- time.Now()
		if e := rig.nextRound(t); names(e.rev.Previews) != "mr-2,"+featureName {
			t.Fatalf("after a listing: %s", names(e.rev.Previews))
		}
		productionUnchanged(t)
	})

	good := repo.Commit("mr two fixed", siteFiles("mr two\n", "/old /new 301\n"), bad)
	repo.Push("refs/heads/broken", good, false)
	t.Run("the merge request updated with a good commit is published", func(t *testing.T) {
		rig.advance(time.Minute)
		e := rig.pull(t, gts.PullEvent{Forge: gitwebhook.GitLab, Action: gts.Updated, Number: 2, Head: good, Branch: "broken"})
		p := previewNamed(t, e.rev, "mr-2")
		if p.Commit != good.String() || p.Error != nil || p.FailedCommit != "" || bundlePage(t, rig.url, p.Bundle) != "mr two\n" {
			t.Fatalf("mr-2: %+v", p)
		}
		productionUnchanged(t)
	})

	t.Run("the TTL ends previews; a new commit revives one", func(t *testing.T) {
		rig.advance(time.Hour) // feature/x was published an hour and a minute ago, mr-2 an hour ago
		rig.listTicks <- time.Now()
		e := rig.nextRound(t)
		if len(e.rev.Previews) != 0 {
			t.Fatalf("after the TTL: %s", names(e.rev.Previews))
		}
		c4 := repo.Commit("feature 2", siteFiles("feature x2\n", "/old /new 301\n"), c3)
		repo.Push("refs/heads/feature/x", c4, false)
		rig.listTicks <- time.Now()
		e = rig.nextRound(t)
		if names(e.rev.Previews) != featureName || bundlePage(t, rig.url, e.rev.Previews[0].Bundle) != "feature x2\n" {
			t.Fatalf("after a new commit: %+v", e.rev.Previews)
		}
		productionUnchanged(t)
	})

	t.Run("a deleted branch's preview goes at the next listing", func(t *testing.T) {
		repo.Delete("refs/heads/feature/x")
		rig.listTicks <- time.Now()
		if e := rig.nextRound(t); len(e.rev.Previews) != 0 {
			t.Fatalf("previews %s", names(e.rev.Previews))
		}
		if entries, _ := os.ReadDir(rig.f.PreviewDir); len(entries) != 0 {
			t.Fatalf("preview trees left: %v", entries)
		}
		productionUnchanged(t)
	})

	t.Run("production still follows its branch, the previews apart", func(t *testing.T) {
		c5 := repo.Commit("main 2", siteFiles("main 2\n", "/old /new 301\n"), plumbing.NewHash(main))
		repo.Push("refs/heads/main", c5, false)
		rig.ticks <- time.Now()
		if e := rig.nextSync(t); e.rev.Commit != c5.String() || e.rev.Commit == main {
			t.Fatalf("production fetch: %+v", e.rev)
		}
	})
}
