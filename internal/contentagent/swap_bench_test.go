package contentagent_test

import (
	"fmt"
	"maps"
	"net/http"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// BenchmarkPushToSwapped times a push until both pods' pullers serve the new commit, with the webhook: push,
// signed GitHub delivery, fetch (depth 1, fresh), the server's --check, the bundle, the long polls answered, two
// downloads, digest checks, extractions and flips. Each op is a new commit changing one page, which costs the
// fetcher as much as any (it fetches the whole commit). push-ms/op is the push itself (go-git client to the test server),
// fetch-ms/op is push → bundle published (it includes push-ms); the rest is the pullers'. Not a test: figures depend on the machine and go into docs/design/git-content.md.
//
//	go test -run '^$' -bench PushToSwapped -benchtime 5x ./internal/contentagent
func BenchmarkPushToSwapped(b *testing.B) {
	small := map[string]gts.File{}
	for i := range 20 {
		small[fmt.Sprintf("page%02d.html", i)] = gts.Regular(fmt.Sprintf("<h1>page %d</h1>\n", i))
	}
	b.Run("small-20-files", func(b *testing.B) { benchPushToSwapped(b, small) })
	b.Run("docs-1065-files-67MB", func(b *testing.B) { benchPushToSwapped(b, gts.DocsSizedTree()) })
}

func benchPushToSwapped(b *testing.B, files map[string]gts.File) {
	b.Helper()
	tree := maps.Clone(files) // b.Run calls this more than once: each starts from the same tree
	check := contentagent.ServerCheck(serverbin.Require(b), 5*time.Minute, gitsource.DefaultMaxEntries, gitsource.DefaultMaxDepth)
	srv, base := gts.Start(b, "", "", "")
	repo := srv.NewRepo(b, base, "site.git", nil)
	secret := []byte("bench")
	parent := repo.Commit("start", tree)
	repo.Push("refs/heads/main", parent, false)
	fetcher := startFetcher(b, gitsource.Source{URL: repo.URL, Ref: "main"}, check, b.TempDir(), "127.0.0.1:0", "127.0.0.1:0", secret)
	fetcher.nextSync(b)
	pods := []*runningPuller{startPuller(b, fetcher.url), startPuller(b, fetcher.url)}
	for _, pod := range pods {
		pod.waitCommit(b, parent.String())
	}
	var pushTotal, fetchTotal time.Duration
	b.ResetTimer()
	for i := range b.N {
		b.StopTimer()
		tree["index.html"] = gts.Regular(fmt.Sprintf("<h1>version %d</h1>\n", i))
		c := repo.Commit(fmt.Sprint(i), tree, parent)
		parent = c
		b.StartTimer()
		start := time.Now()
		repo.Push("refs/heads/main", c, false)
		pushTotal += time.Since(start)
		if code := postGitHubPush(b, fetcher.hookURL, repo.URL, "refs/heads/main", c.String(), secret); code != http.StatusOK {
			b.Fatalf("webhook: %d", code)
		}
		if e := fetcher.nextSync(b); e.rev.Commit != c.String() {
			b.Fatalf("fetch: %+v", e)
		}
		fetchTotal += time.Since(start)
		for _, pod := range pods {
			pod.waitCommit(b, c.String())
		}
	}
	b.ReportMetric(float64(pushTotal.Milliseconds())/float64(b.N), "push-ms/op")
	b.ReportMetric(float64(fetchTotal.Milliseconds())/float64(b.N), "fetch-ms/op")
}
