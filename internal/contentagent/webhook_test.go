package contentagent_test

import (
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// TestWebhooksInsideTheGapFetchOnceAtItsEnd drives the minimum gap with the test's clock: the first webhook
// fetches at once; the pushes announced inside the gap that follows start no fetch of their own and are taken,
// the newest one, by exactly one fetch at the gap's end; a gap with nothing announced ends with no fetch; and an
// interval fetch inside a gap takes what waited, so the gap's end adds none.
func TestWebhooksInsideTheGapFetchOnceAtItsEnd(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	secret := []byte("s")
	head := repo.Commit("v0", map[string]gts.File{"index.html": gts.Regular("v0\n")})
	repo.Push("refs/heads/main", head, false)
	fetcher := startFetcher(t, gitsource.Source{URL: repo.URL, Ref: "main"}, nil, t.TempDir(), "127.0.0.1:0", "127.0.0.1:0", secret,
		func(f *contentagent.Fetcher) { f.WebhookMinGap = webhookGap })
	fetcher.nextSync(t)
	n := 0
	push := func() plumbing.Hash {
		t.Helper()
		n++
		head = repo.Commit(fmt.Sprint("v", n), map[string]gts.File{"index.html": gts.Regular(fmt.Sprint("v", n, "\n"))}, head)
		repo.Push("refs/heads/main", head, false)
		if code := postGitHubPush(t, fetcher.hookURL, repo.URL, "refs/heads/main", head.String(), secret); code != http.StatusOK {
			t.Fatalf("webhook for v%d: status %d", n, code)
		}
		return head
	}
	expect := func(trigger string, commit plumbing.Hash) {
		t.Helper()
		if e := fetcher.nextSync(t); e.trigger != trigger || e.rev.Commit != commit.String() {
			t.Fatalf("fetch %s of %s, want %s of %s", e.trigger, e.rev.Commit, trigger, commit)
		}
	}

	expect(contentagent.TriggerWebhook, push()) // no gap runs yet: at once
	for range 3 {
		push()
	}
	// All three are counted before the gap ends, so none of them can have started a fetch of its own.
	waitMetric(t, fetcher.url, "hyperstatic_git_webhook_coalesced_total", "3")
	fire(t, fetcher.gaps)
	expect(contentagent.TriggerWebhook, head) // one fetch, of the newest push
	fire(t, fetcher.gaps)                     // the gap after it: nothing announced, so no fetch
	fetcher.ticks <- time.Now()
	expect(contentagent.TriggerInterval, head) // the next attempt is the interval's: the gap's end started none

	expect(contentagent.TriggerWebhook, push()) // the gap has ended: at once again
	push()
	waitMetric(t, fetcher.url, "hyperstatic_git_webhook_coalesced_total", "4")
	fetcher.ticks <- time.Now()
	expect(contentagent.TriggerInterval, head) // the interval fetch inside the gap takes the waiting push...
	fire(t, fetcher.gaps)                      // ...so the gap ends with no fetch
	fetcher.ticks <- time.Now()
	expect(contentagent.TriggerInterval, head)

	_, page := get(t, fetcher.url+"/metrics")
	if got := metric(page, `hyperstatic_git_fetch_triggers_total{trigger="webhook"}`); got != "3" {
		t.Errorf("webhook fetches %s for 6 webhooks, want 3", got)
	}
	if got := metric(page, `hyperstatic_git_webhook_requests_total{result="accepted"}`); got != "6" {
		t.Errorf("accepted webhooks %s, want 6", got)
	}
}

// fire sends one tick on ch, which the fetcher's loop must be waiting on.
func fire(t *testing.T, ch chan<- time.Time) {
	t.Helper()
	select {
	case ch <- time.Now():
	case <-time.After(waitLimit):
		t.Fatal("the fetcher does not wait on this timer")
	}
}

// waitMetric polls url/metrics until series has the value want (bounded by waitLimit).
func waitMetric(t testing.TB, url, series, want string) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	got := ""
	for time.Now().Before(deadline) {
		_, page := get(t, url+"/metrics")
		if got = metric(page, series); got == want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s is %q after %s, want %s", series, got, waitLimit, want)
}
