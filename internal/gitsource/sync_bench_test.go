package gitsource

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// BenchmarkSyncDocsSizedCommit times one Sync of a fresh commit shaped like the Python docs (1,065 files, 67 MB)
// from the loopback test server: resolve, depth-1 fetch into the on-disk object store, write the tree, swap.
// The content is base64 of random bytes, which compresses far worse than HTML: an upper bound on the pack work.
//
//	go test -run '^$' -bench SyncDocsSized -benchtime 3x ./internal/gitsource
func BenchmarkSyncDocsSizedCommit(b *testing.B) {
	srv, base := gts.Start(b, "", "", "")
	r := srv.NewRepo(b, base, "docs.git", nil)
	tree := gts.DocsSizedTree()
	c := r.Commit("docs", tree)
	r.Push("refs/heads/main", c, false)
	src := Source{URL: r.URL, Ref: "main"}
	b.ResetTimer()
	for range b.N {
		s := &Store{Dir: b.TempDir()}
		if _, _, err := s.Sync(b.Context(), src); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSyncOnePagePush times a Sync of a one-page change of the docs-sized tree on top of the tree before:
// "link" links the unchanged files from it (blobs.go), "write" (its blob list removed first) writes every file
// out of the pack as before. The Store keeps its object store (objects.go), as the fetcher's does, so the fetch
// is of what changed; git-bytes and git-objects are what the in-process test server sent per push.
//
//	go test -run '^$' -bench SyncOnePagePush -benchtime 3x ./internal/gitsource
func BenchmarkSyncOnePagePush(b *testing.B) {
	srv, base := gts.Start(b, "", "", "")
	r := srv.NewRepo(b, base, "docs.git", nil)
	tree := gts.DocsSizedTree()
	head := r.Commit("docs", tree)
	r.Push("refs/heads/main", head, false)
	src := Source{URL: r.URL, Ref: "main"}
	for _, mode := range []string{"link", "write"} {
		b.Run(mode, func(b *testing.B) {
			s := &Store{Dir: b.TempDir(), Objects: &Objects{Dir: b.TempDir()}}
			if _, _, err := s.Sync(b.Context(), src); err != nil {
				b.Fatal(err)
			}
			before := srv.Uploads()
			b.ResetTimer()
			for i := range b.N {
				b.StopTimer()
				tree["index.html"] = gts.Regular(fmt.Sprintf("%s %d", mode, i))
				head = r.Commit(mode, tree, head)
				r.Push("refs/heads/main", head, false)
				if cur, _ := s.Current(); mode == "write" {
					_ = os.Remove(filepath.Join(s.Dir, cur+blobsSuffix))
				}
				b.StartTimer()
				if _, _, err := s.Sync(b.Context(), src); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			sent := srv.Uploads().Sub(before)
			b.ReportMetric(float64(sent.Bytes)/float64(b.N), "git-bytes/op")
			b.ReportMetric(float64(sent.Objects)/float64(b.N), "git-objects/op")
		})
	}
}
