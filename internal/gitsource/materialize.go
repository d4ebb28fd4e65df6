package gitsource

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// lfsPointerPrefix starts every Git LFS pointer file (spec v1); pointers are small text files, so only blobs
// under lfsPointerMax bytes are read to look for it.
const (
	lfsPointerPrefix = "version https://git-lfs.github.com/spec/v1\n"
	lfsPointerMax    = 1024
)

// selectTree returns the tree at subdir ("" or "/" for the root) of the commit.
func selectTree(c *object.Commit, subdir string) (*object.Tree, error) {
	tree, err := c.Tree()
	if err != nil {
		return nil, fmt.Errorf("reading the tree of %s: %w", c.Hash, err)
	}
	p := strings.Trim(subdir, "/")
	if p == "" {
		return tree, nil
	}
	if p != path.Clean(p) || strings.HasPrefix(p, "../") || p == ".." {
		return nil, newError(InvalidSource, nil, "path %q must be a plain relative directory", subdir)
	}
	sub, err := tree.Tree(p)
	if err != nil {
		return nil, newError(InvalidContent, nil, "commit %s has no directory %q", c.Hash, p)
	}
	return sub, nil
}

// treeWriter writes a Git tree into a new directory. Writes go through an os.Root, so no name and no link
// written earlier can make a later write land outside the directory.
type treeWriter struct {
	root  *os.Root
	dir   string
	b     *treeBudget
	links []string // relative names of the symbolic links written, checked once the whole tree is there
	// reuse names a file of an earlier tree by its blob (blobs.go): such a file is linked, not read from the pack
	// again. blobs records every file written, for the next tree.
	reuse map[plumbing.Hash]string
	blobs []treeBlob
}

// writeTree writes tree into dir (which must exist and be empty) and checks the result. It fails on a
// submodule, an LFS pointer, an unsafe name, a link that leaves dir or points nowhere, or a tree past lim: bytes,
// entries or depth, each charged before the entry is created (so a large file is refused before its bytes hit
// the disk, and a tree bomb after MaxEntries entries, not 10^9).
//
// A file whose blob reuse names (a file of the tree before, blobs.go) is hard-linked rather than read; the files
// written are returned by blob for the next tree.
func writeTree(tree *object.Tree, dir string, lim Limits, reuse map[plumbing.Hash]string) ([]treeBlob, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	w := &treeWriter{root: root, dir: dir, b: newTreeBudget(lim, "the served tree"), reuse: reuse}
	if err := w.write(tree, ""); err != nil {
		return nil, err
	}
	return w.blobs, checkLinks(dir, w.links)
}

func (w *treeWriter) write(tree *object.Tree, rel string) error {
	for _, e := range tree.Entries {
		name := path.Join(rel, e.Name)
		if !safeName(e.Name) {
			return newError(InvalidContent, nil, "the tree has an entry named %q under %q", e.Name, "/"+rel)
		}
		switch e.Mode {
		case filemode.Dir:
			if err := w.b.entry(name, 0); err != nil {
				return err
			}
			sub, err := tree.Tree(e.Name)
			if err != nil {
				return fmt.Errorf("reading directory %s: %w", name, err)
			}
			if err := w.root.Mkdir(name, 0o755); err != nil {
				return err
			}
			if err := w.write(sub, name); err != nil {
				return err
			}
		case filemode.Submodule:
			return newError(InvalidContent, nil, "%s is a submodule (commit %s): submodules are not fetched; "+
				"commit the built files instead, or serve a path without it", name, e.Hash)
		case filemode.Symlink:
			if err := w.symlink(tree, e, name); err != nil {
				return err
			}
		default: // Regular, Executable, Deprecated: served alike, written 0644.
			if err := w.file(tree, e, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// safeName refuses what a Git tree can hold but a directory must not: "", ".", "..", and names with a slash or
// a NUL (go-git reads them from a tree a hostile server sent).
func safeName(n string) bool {
	return n != "" && n != "." && n != ".." && !strings.ContainsAny(n, "/\x00")
}

func (w *treeWriter) symlink(tree *object.Tree, e object.TreeEntry, name string) error {
	f, err := tree.TreeEntryFile(&e)
	if err != nil {
		return err
	}
	target, err := f.Contents()
	if err != nil {
		return err
	}
	// A first, lexical check gives the clearest message; checkLinks then resolves every link on disk, which
	// also catches a link reaching out through another link.
	if filepath.IsAbs(target) || escapes(path.Join(path.Dir(name), target)) {
		return newError(InvalidContent, nil, "the symbolic link %s points to %q, outside the served tree", name, target)
	}
	if err := w.b.entry(name, int64(len(target))); err != nil {
		return err
	}
	if err := w.root.Symlink(target, name); err != nil {
		return err
	}
	w.links = append(w.links, name)
	return nil
}

// escapes is true when a cleaned relative path climbs above its root.
func escapes(p string) bool {
	p = path.Clean(p)
	return p == ".." || strings.HasPrefix(p, "../")
}

func (w *treeWriter) file(tree *object.Tree, e object.TreeEntry, name string) error {
	f, err := tree.TreeEntryFile(&e)
	if err != nil {
		return err
	}
	if err := w.b.entry(name, f.Size); err != nil {
		return err
	}
	w.blobs = append(w.blobs, treeBlob{hash: e.Hash, name: name})
	// The parents of name are directories this writer made (a Git tree has no entry under a link), so the link
	// lands inside dir. A blob the tree before held passed the LFS check there.
	if src := w.reuse[e.Hash]; src != "" && linkSame(src, filepath.Join(w.dir, filepath.FromSlash(name)), f.Size) {
		return nil
	}
	r, err := f.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	if f.Size < lfsPointerMax {
		head, err := io.ReadAll(r)
		if err != nil {
			return err
		}
		if bytes.HasPrefix(head, []byte(lfsPointerPrefix)) {
			return newError(InvalidContent, nil, "%s is a Git LFS pointer: LFS objects are not fetched; "+
				"commit the file itself, or serve a path without LFS files", name)
		}
		return w.root.WriteFile(name, head, 0o644)
	}
	return writeFile(w.root, name, r)
}

// checkLinks resolves every link on disk and refuses one that ends outside dir or nowhere: the server would
// skip it (and fail --check), and a link that works only by accident of the layout around the tree must not
// be published.
func checkLinks(dir string, links []string) error {
	base, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return err
	}
	for _, l := range links {
		resolved, err := filepath.EvalSymlinks(filepath.Join(base, filepath.FromSlash(l)))
		if errors.Is(err, os.ErrNotExist) {
			return newError(InvalidContent, nil, "the symbolic link %s points to nothing in the served tree", l)
		}
		if err != nil {
			return newError(InvalidContent, err, "the symbolic link %s does not resolve", l)
		}
		if rel, err := filepath.Rel(base, resolved); err != nil || escapes(filepath.ToSlash(rel)) {
			return newError(InvalidContent, nil, "the symbolic link %s resolves outside the served tree", l)
		}
	}
	return nil
}
