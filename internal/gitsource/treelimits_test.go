package gitsource

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// countEntries counts the files, directories and links under dir (dir itself not counted).
func countEntries(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(p string, _ fs.DirEntry, err error) error {
		if err == nil && p != dir {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A tree bomb (three trees that repeat the one below 40 times: 64,000 empty files and 1,640 directories from a
// pack of five tree objects) is refused at the entry limit, naming it and the path, with the last good commit
// still served; entries deeper than the depth limit and empty files past the byte limit (each entry costs
// EntryCost) are refused alike. Before, only file bytes were charged: each of these was served.
func TestTreeLimitsRefuseACommit(t *testing.T) {
	const maxEntries = 1000
	deep := strings.Repeat("d/", 70) + "page.html"
	empties := map[string]gts.File{}
	for i := range 200 { // 200 × 512 bytes of entries, no content
		empties[fmt.Sprintf("empty/e%03d", i)] = gts.Regular("")
	}
	for name, tc := range map[string]struct {
		lim    Limits
		commit func(r *gts.Repo) plumbing.Hash
		says   string
	}{
		"tree bomb": {Limits{MaxEntries: maxEntries}, func(r *gts.Repo) plumbing.Hash {
			return r.TreeBomb("bomb", 3, 40)
		}, "limit of 1000 entries (files, directories and links) at bomb/d00"},
		"too deep": {Limits{}, func(r *gts.Repo) plumbing.Hash {
			return r.Commit("deep", with(site("v2"), map[string]gts.File{deep: gts.Regular("x")}))
		}, "depth limit of 64 directories at " + strings.Repeat("d/", 64) + "d"},
		"empty files past the bytes": {Limits{MaxBytes: 64 << 10}, func(r *gts.Repo) plumbing.Hash {
			return r.Commit("empties", with(site("v2"), empties))
		}, "size limit of 65536 bytes (content plus 512 per entry) at empty/"},
	} {
		t.Run(name, func(t *testing.T) {
			r, s, c1, src := servingV1(t, "main", tc.lim.MaxBytes)
			src.MaxEntries, src.MaxDepth = tc.lim.MaxEntries, tc.lim.MaxDepth
			r.Push("refs/heads/main", tc.commit(r), true)
			_, _, err := s.Sync(t.Context(), src)
			wantReason(t, s, err, TooLarge, c1)
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("the refusal %q does not say %q", err, tc.says)
			}
			wantTree(t, served(t, s), site("v1"))
			if leftovers, _ := filepath.Glob(filepath.Join(s.Dir, ".stage-*")); len(leftovers) != 0 {
				t.Fatalf("the refused tree was left on disk: %v", leftovers)
			}
		})
	}
}

// The bomb is stopped before it writes more than the limit: the tree written when the limit trips holds at most
// MaxEntries entries (the refused stage of a Sync is removed, so the tree is written here directly).
func TestTreeBombWritesNoMoreThanTheLimit(t *testing.T) {
	const maxEntries = 1000
	r := newRepo(t)
	r.Push("refs/heads/main", r.TreeBomb("bomb", 3, 40), false)
	src := Source{URL: r.URL, Ref: "main"}
	target, err := Resolve(t.Context(), src)
	if err != nil {
		t.Fatal(err)
	}
	f, err := (&Objects{Dir: t.TempDir()}).fetch(t.Context(), src, target, true)
	if err != nil {
		t.Fatal(err)
	}
	defer f.release()
	tree, err := selectTree(f.commit, "")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	_, err = writeTree(tree, dir, Limits{MaxEntries: maxEntries}, nil)
	if ReasonOf(err) != TooLarge {
		t.Fatalf("writing the bomb: %v, want TooLarge", err)
	}
	if n := countEntries(t, dir); n > maxEntries {
		t.Fatalf("%d entries written before the refusal, want at most %d", n, maxEntries)
	}
}

// BenchmarkRefuseTreeBomb: the bomb (three trees repeating the one below 1,000 times: 10^9 empty files)
// under the default limits, from the test Git server to the refusal.
//
//	go test -run '^$' -bench RefuseTreeBomb -benchtime 3x -benchmem ./internal/gitsource
func BenchmarkRefuseTreeBomb(b *testing.B) {
	s, base := gts.Start(b, "", "", "")
	r := s.NewRepo(b, base, "bomb.git", nil)
	r.Push("refs/heads/main", r.TreeBomb("bomb", 3, 1000), false)
	src := Source{URL: r.URL, Ref: "main"}
	for b.Loop() {
		st := &Store{Dir: filepath.Join(b.TempDir(), "content")}
		_, _, err := st.Sync(b.Context(), src)
		if ReasonOf(err) != TooLarge {
			b.Fatalf("the bomb: %v, want TooLarge", err)
		}
		if entries, _ := os.ReadDir(st.Dir); len(entries) != 0 {
			b.Fatalf("the refused bomb left %d entries in the store", len(entries))
		}
	}
}
