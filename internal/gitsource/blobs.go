package gitsource

import (
	"bufio"
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// A fetcher's Sync writes a whole tree for every commit, though a push usually changes a page of it. So each
// tree it writes keeps, beside it, the Git blob of each of its files (Dir/<commit>.blobs, a line "<blob> <path>"
// each, pruned with the tree), and the next Sync hard-links every file whose blob the tree before holds instead of
// reading it out of the pack again: on the Python docs (67 MB) that read was about 0.9 s of CPU of a push. A blob
// names its bytes, and published trees are never written, so the linked file is the blob. A list that is missing
// or unreadable only costs the shortcut. LinkFrom adds another Store's current tree (a preview's Store links
// production's: its first commit is mostly production's).

// blobsSuffix names a tree's blob list beside it.
const blobsSuffix = ".blobs"

// maxBlobsBytes bounds a blob list read back (about 150,000 files; the Python docs' is 90 KB).
const maxBlobsBytes = 16 << 20

// treeBlob is one file of a written tree: its blob and its slash path.
type treeBlob struct {
	hash plumbing.Hash
	name string
}

// writeBlobs keeps the blob list of tree name; a failure costs the next Sync its shortcut only.
func (s *Store) writeBlobs(name string, blobs []treeBlob) {
	var buf bytes.Buffer
	for _, b := range blobs {
		buf.WriteString(b.hash.String() + " " + b.name + "\n")
	}
	p := filepath.Join(s.Dir, name+blobsSuffix)
	if err := os.WriteFile(p+".tmp", buf.Bytes(), 0o644); err != nil || os.Rename(p+".tmp", p) != nil {
		_ = os.Remove(p + ".tmp")
		_ = os.Remove(p)
	}
}

// reusable returns the files of the current trees of s and of s.LinkFrom by blob: the paths a new tree links.
func (s *Store) reusable() map[plumbing.Hash]string {
	out := map[plumbing.Hash]string{}
	for _, st := range []*Store{s, s.LinkFrom} {
		if st == nil {
			continue
		}
		if cur, err := st.Current(); err == nil && cur != "" {
			st.readBlobs(cur, out)
		}
	}
	return out
}

// readBlobs adds the files of tree name to out (the first path of a blob stays).
func (s *Store) readBlobs(name string, out map[plumbing.Hash]string) {
	f, err := os.Open(filepath.Join(s.Dir, name+blobsSuffix))
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(io.LimitReader(f, maxBlobsBytes))
	sc.Buffer(make([]byte, 0, 64<<10), 64<<10)
	tree := filepath.Join(s.Dir, name)
	for sc.Scan() {
		hash, p, ok := strings.Cut(sc.Text(), " ")
		h, valid := commitHash(hash)
		if !ok || !valid || !safePath(p) {
			continue
		}
		if _, seen := out[h]; !seen {
			out[h] = filepath.Join(tree, filepath.FromSlash(p))
		}
	}
}
