package gitsource

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// The kept store against git's own upload-pack, not only this repository's test server: go-git's file://
// transport runs the system's git-upload-pack, which answers the haves of a depth-1 fetch as a forge running git
// does. The push of one page brings a pack of 4 objects (commit, root, docs/, the page), and the tree is exact.
func TestKeptStoreAgainstGitUploadPack(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git binary:", err)
	}
	dir := t.TempDir()
	bare, work := filepath.Join(dir, "site.git"), filepath.Join(dir, "work")
	gitCLI(t, dir, "init", "-q", "--bare", bare)
	gitCLI(t, dir, "init", "-q", "-b", "main", work)
	commitAll := func(files map[string]gts.File, msg string) {
		t.Helper()
		for p, f := range files {
			full := filepath.Join(work, filepath.FromSlash(p))
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(f.Data), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		gitCLI(t, work, "add", "-A")
		gitCLI(t, work, "commit", "-q", "-m", msg)
		gitCLI(t, work, "push", "-q", bare, "main")
	}
	files := docs("v1")
	commitAll(files, "v1")
	s := newStore(t)
	src := Source{URL: "file://" + bare, Ref: "main"}
	mustSync(t, s, src)
	wantTree(t, served(t, s), files)
	packs := packIndexes(t, s)

	files = with(files, map[string]gts.File{"docs/page03.html": gts.Regular("v2")})
	commitAll(files, "v2")
	mustSync(t, s, src)
	wantTree(t, served(t, s), files)
	var added []string
	for _, p := range packIndexes(t, s) {
		if !slices.Contains(packs, p) {
			added = append(added, p)
		}
	}
	if len(added) != 1 {
		t.Fatalf("the second fetch added %d packs, want 1", len(added))
	}
	if n := objectsIn(t, added[0]); n != 4 {
		t.Fatalf("git sent %d objects for a one-page push, want 4 (commit, root, docs/, the page)", n)
	}
}

// gitCLI runs git in dir with no user or system configuration.
func gitCLI(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@example.invalid",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@example.invalid")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// packIndexes lists the pack indexes of the Store's kept object store.
func packIndexes(t *testing.T, s *Store) []string {
	t.Helper()
	idxs, err := filepath.Glob(filepath.Join(s.Objects.Dir, "objects", "pack", "*.idx"))
	if err != nil {
		t.Fatal(err)
	}
	return idxs
}

// readIndex reads a pack index.
func readIndex(t *testing.T, idxPath string) *idxfile.MemoryIndex {
	t.Helper()
	f, err := os.Open(idxPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(f).Decode(idx); err != nil {
		t.Fatal(err)
	}
	return idx
}

// objectsIn counts the objects a pack index lists.
func objectsIn(t *testing.T, idxPath string) int {
	t.Helper()
	n, err := readIndex(t, idxPath).Count()
	if err != nil {
		t.Fatal(err)
	}
	return int(n)
}
