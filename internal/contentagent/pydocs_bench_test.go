package contentagent_test

import (
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// PydocsDirEnvVar names the real Python docs tree (`make e2e-pydocs-images` writes _out/pydocs); without it, and
// without _out/pydocs at the module's root, the benchmark is skipped.
const PydocsDirEnvVar = "HYPERSTATIC_PYDOCS_DIR"

func pydocsDir(tb testing.TB) string {
	tb.Helper()
	dir := os.Getenv(PydocsDirEnvVar)
	if dir == "" {
		dir = filepath.Join("..", "..", "_out", "pydocs")
	}
	if _, err := os.Stat(filepath.Join(dir, "index.html")); err != nil {
		tb.Skipf("no Python docs tree at %s (set %s, or make e2e-pydocs-images): %v", dir, PydocsDirEnvVar, err)
	}
	return dir
}

func treeFromDir(tb testing.TB, dir string) map[string]gts.File {
	tb.Helper()
	tree := map[string]gts.File{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, p)
		tree[filepath.ToSlash(rel)] = gts.Regular(string(data))
		return err
	})
	if err != nil {
		tb.Fatal(err)
	}
	return tree
}

func cpuTime() time.Duration {
	var r syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &r)
	return time.Duration(r.Utime.Nano() + r.Stime.Nano())
}

// noFileLists hides the fetcher's file lists: the puller installs every push as the whole bundle (the way before
// the lists).
type noFileLists struct{ h http.Handler }

func (n noFileLists) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.HasSuffix(r.URL.Path, "/files") {
		http.NotFound(w, r)
		return
	}
	n.h.ServeHTTP(w, r)
}

// BenchmarkPydocsOnePagePush is the e2e scenario's push (one page of the Python docs changed, 1,065 files, 67 MB)
// through the real fetcher (with the real server's --check) and a puller, on loopback in one process: fetch is
// the fetcher's part (resolve, depth-1 fetch from the in-process test Git server, write, check, bundle), pull the
// puller's from the fetcher's publish to the pod serving the commit, pull-cpu the process's CPU time in that
// window (the puller's alone: the fetcher waits) — a pod's puller has 100m, so its wall time there is about ten
// times pull-cpu. read-bytes is what the puller read from the fetcher, git-bytes what the Git server sent the
// fetcher. "whole-bundle" hides the file lists.
//
//	HYPERSTATIC_SERVER_BIN=... go test -run '^$' -bench PydocsOnePagePush -benchtime 5x ./internal/contentagent
func BenchmarkPydocsOnePagePush(b *testing.B) {
	dir := pydocsDir(b)
	check := contentagent.ServerCheck(serverbin.Require(b), time.Minute, gitsource.DefaultMaxEntries, gitsource.DefaultMaxDepth)
	tree := treeFromDir(b, dir)
	page := "index.html"
	srv, base := gts.Start(b, "", "", "")
	repo := srv.NewRepo(b, base, "docs.git", nil)
	head := repo.Commit("v1", tree)
	repo.Push("refs/heads/main", head, false)
	fetcher := startFetcher(b, gitsource.Source{URL: repo.URL, Ref: "main"}, check, b.TempDir(), "127.0.0.1:0", "127.0.0.1:0", nil)
	fetcher.nextSync(b)

	for _, mode := range []string{"file-list", "whole-bundle"} {
		b.Run(mode, func(b *testing.B) {
			h := fetcher.f.Handler()
			if mode == "whole-bundle" {
				h = noFileLists{h}
			}
			proxy := &countingProxy{h: h}
			front := httptest.NewServer(proxy)
			b.Cleanup(front.Close)
			pod := startPuller(b, front.URL)
			rev, _ := fetcher.f.Revision()
			pod.waitCommit(b, rev.Commit)
			proxy.take()
			var fetch, pull, pullCPU time.Duration
			var read, gitBytes int64
			b.ResetTimer()
			for i := range b.N {
				tree[page] = gts.Regular(tree[page].Data + fmt.Sprintf("<!-- %s %d -->\n", mode, i))
				head = repo.Commit(fmt.Sprintf("%s %d", mode, i), tree, head)
				repo.Push("refs/heads/main", head, false)
				start, sent := time.Now(), srv.Uploads()
				fetcher.ticks <- start
				if e := fetcher.nextSync(b); e.rev.Commit != head.String() {
					b.Fatalf("fetched %+v, want %s", e.rev, head)
				}
				gitBytes += srv.Uploads().Sub(sent).Bytes
				published, cpu0 := time.Now(), cpuTime()
				pod.waitCommit(b, head.String())
				pull += time.Since(published)
				pullCPU += cpuTime() - cpu0
				fetch += published.Sub(start)
				n, _ := proxy.take()
				read += n
			}
			b.StopTimer()
			per := func(d time.Duration) float64 { return float64(d.Milliseconds()) / float64(b.N) }
			b.ReportMetric(per(fetch), "fetch-ms/op")
			b.ReportMetric(per(pull), "pull-ms/op")
			b.ReportMetric(per(pullCPU), "pull-cpu-ms/op")
			b.ReportMetric(float64(read)/float64(b.N), "read-bytes/op")
			b.ReportMetric(float64(gitBytes)/float64(b.N), "git-bytes/op")
		})
	}
}
