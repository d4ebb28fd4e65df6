package gitsource

import (
	"os"
	"path"
	"slices"
	"strings"
)

// WriteFiles writes files (slash path → content) into dir (which must exist and be empty) under the rules of a
// fetched tree: safe relative names, writes through an os.Root, and lim charged before each entry is created
// (each directory made on the way and each file: bytes plus EntryCost, entries, depth). It is the write function
// of a tree that is not a Git commit, a pool's ConfigMap site (docs/design/pools.md), for Store.Install. Files are
// written in sorted order, so a refusal names the same path every time.
func WriteFiles(dir string, files map[string][]byte, lim Limits) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	b := newTreeBudget(lim, "the served tree")
	made := map[string]bool{}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, name := range names {
		if !safePath(name) {
			return newError(InvalidContent, nil, "the tree would hold the name %q", name)
		}
		parts := strings.Split(name, "/")
		for i := 1; i < len(parts); i++ {
			d := path.Join(parts[:i]...)
			if made[d] {
				continue
			}
			if _, isFile := files[d]; isFile {
				return newError(InvalidContent, nil, "%s is both a file and the directory of %s", d, name)
			}
			if err := b.entry(d, 0); err != nil {
				return err
			}
			if err := root.Mkdir(d, 0o755); err != nil {
				return err
			}
			made[d] = true
		}
		if err := b.entry(name, int64(len(files[name]))); err != nil {
			return err
		}
		if err := root.WriteFile(name, files[name], 0o644); err != nil {
			return err
		}
	}
	return nil
}
