package gitsource

import (
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
