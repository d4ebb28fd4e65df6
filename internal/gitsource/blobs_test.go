package gitsource

import (
	"os"
	"path/filepath"
	"testing"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// A Sync links the files the tree before holds (same inode) and writes the others; the tree is the commit's
// byte for byte. A file of the tree before that went meanwhile is written from the pack instead. A Store with
// LinkFrom links the other Store's current tree the same way.
func TestSyncLinksTheFilesOfTheTreeBefore(t *testing.T) {
	r, s, c1, src := servingV1(t, "main", 0)
	v2 := with(site("v1"), map[string]gts.File{"index.html": gts.Regular("v2:index")})
	c2 := r.Commit("v2", v2, c1)
	r.Push("refs/heads/main", c2, false)
	mustSync(t, s, src)
	wantTree(t, served(t, s), v2)
	in := func(commit, p string) string { return filepath.Join(s.Dir, commit, filepath.FromSlash(p)) }
	if inode(t, in(c2.String(), "docs/guide.html")) != inode(t, in(c1.String(), "docs/guide.html")) {
		t.Error("an unchanged file was written again, not linked")
	}
	if inode(t, in(c2.String(), "index.html")) == inode(t, in(c1.String(), "index.html")) {
		t.Error("the changed file is the old one")
	}
	if _, err := os.Stat(filepath.Join(s.Dir, c2.String()+blobsSuffix)); err != nil {
		t.Errorf("the new tree's blob list: %v", err)
	}

	// A file of the tree before gone (changed under the list): written from the pack.
	if err := os.Remove(in(c2.String(), "assets/app.css")); err != nil {
		t.Fatal(err)
	}
	v3 := with(v2, map[string]gts.File{"docs/guide.html": gts.Regular("v3:guide")})
	c3 := r.Commit("v3", v3, c2)
	r.Push("refs/heads/main", c3, false)
	mustSync(t, s, src)
	wantTree(t, served(t, s), v3)

	// A preview's Store links production's current tree on its first Sync.
	preview := &Store{Dir: filepath.Join(t.TempDir(), "preview"), LinkFrom: s}
	v4 := with(v3, map[string]gts.File{"docs/api/index.html": gts.Regular("v4:api")})
	c4 := r.Commit("v4", v4, c3)
	r.Push("refs/heads/feature", c4, false)
	mustSync(t, preview, Source{URL: r.URL, Ref: "feature"})
	wantTree(t, served(t, preview), v4)
	if inode(t, filepath.Join(preview.Dir, c4.String(), "index.html")) != inode(t, in(c3.String(), "index.html")) {
		t.Error("the preview's first tree did not link production's files")
	}
	// Pruning takes the lists with their trees: v1's went when v3 was published.
	if _, err := os.Stat(filepath.Join(s.Dir, c1.String()+blobsSuffix)); !os.IsNotExist(err) {
		t.Errorf("the blob list of a pruned tree: %v, want it gone", err)
	}
}
