package gitsource

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"hyperstatic.dev/hyperstatic/internal/countio"
)

// A bundle is a served tree as a tar stream, addressed by the SHA-256 of its bytes: the fetcher writes one per
// commit, every server pod's puller downloads it and installs it (docs/design/git-content.md). The tar is
// deterministic (names sorted, no times, no owners), so one tree always has one digest.

// WriteBundle writes the tree under dir (a published Dir/<commit>, or Store.Served()) to w and returns the
// hex SHA-256 of what it wrote. Directories, regular files and symbolic links only.
func WriteBundle(w io.Writer, dir string) (string, error) {
	digest, _, err := WriteBundleFiles(w, dir)
	return digest, err
}

// WriteBundleFiles is WriteBundle that also returns the bundle's file list (FileList): each entry in the tar's
// order, each file with its SHA-256 and where its bytes start in the bundle. One pass over the tree: the files
// are read once for both.
func WriteBundleFiles(w io.Writer, dir string) (string, FileList, error) {
	h := sha256.New()
	out := &countio.Writer{W: io.MultiWriter(w, h)}
	tw := tar.NewWriter(out)
	list := FileList{}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return "", list, err
	}
	defer root.Close()
	// fs.WalkDir visits names in lexical order: the order, and so the digest, depends on the tree alone.
	err = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == "." {
			return err
		}
		hdr := &tar.Header{Name: p, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := root.Readlink(p)
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Linkname, hdr.Mode = tar.TypeSymlink, target, 0o777
		case d.IsDir():
			hdr.Typeflag, hdr.Name, hdr.Mode = tar.TypeDir, p+"/", 0o755
		case d.Type().IsRegular():
			info, err := d.Info()
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Size, hdr.Mode = tar.TypeReg, info.Size(), 0o644
		default:
			return fmt.Errorf("%s: not a file, directory or link", p)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		// tar.Writer writes a header at once, so the count is where the file's bytes start.
		entry := FileEntry{Name: p, Type: fileTypeOf(hdr.Typeflag), Size: hdr.Size, Link: hdr.Linkname, Offset: out.N}
		if hdr.Typeflag != tar.TypeReg {
			list.Entries = append(list.Entries, entry)
			return nil
		}
		f, err := root.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fh := sha256.New()
		if _, err := io.Copy(io.MultiWriter(tw, fh), f); err != nil {
			return err
		}
		entry.SHA256 = hex.EncodeToString(fh.Sum(nil))
		list.Entries = append(list.Entries, entry)
		return nil
	})
	if err != nil {
		return "", list, err
	}
	if err := tw.Close(); err != nil {
		return "", list, err
	}
	list.Bundle = hex.EncodeToString(h.Sum(nil))
	return list.Bundle, list, nil
}

// ExtractBundle writes the bundle read from r into dir (empty), holding it to the rules of a fetched tree: safe
// relative names, directories, files and links only, links that stay inside, and lim charged per entry as the
// fetcher charged it (bytes plus EntryCost each, entries, depth), before each entry is created. The
// SHA-256 of every byte read must be wantDigest, checked at the end (a bundle cut short or altered fails with
// InvalidContent; the caller's Install then discards dir). Use it as Store.Install's write function.
func ExtractBundle(r io.Reader, dir, wantDigest string, lim Limits) error {
	h := sha256.New()
	hashed := io.TeeReader(r, h)
	tr := tar.NewReader(hashed)
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer root.Close()
	b := newTreeBudget(lim, "the bundle")
	var links []string
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return newError(InvalidContent, err, "the bundle does not read as tar")
		}
		name := strings.TrimSuffix(hdr.Name, "/")
		if !safePath(name) {
			return newError(InvalidContent, nil, "the bundle holds the name %q", hdr.Name)
		}
		size := int64(0)
		switch hdr.Typeflag {
		case tar.TypeReg:
			size = hdr.Size
		case tar.TypeSymlink:
			size = int64(len(hdr.Linkname))
		}
		if err := b.entry(name, size); err != nil {
			return err
		}
		switch hdr.Typeflag {
		case tar.TypeDir:
			err = root.Mkdir(name, 0o755)
		case tar.TypeSymlink:
			if filepath.IsAbs(hdr.Linkname) || escapes(path.Join(path.Dir(name), hdr.Linkname)) {
				return newError(InvalidContent, nil, "the bundle's link %s points to %q, outside the tree", name, hdr.Linkname)
			}
			err = root.Symlink(hdr.Linkname, name)
			links = append(links, name)
		case tar.TypeReg:
			err = writeFile(root, name, tr)
		default:
			return newError(InvalidContent, nil, "the bundle's %s is of tar type %q: only files, directories and links", name, hdr.Typeflag)
		}
		if err != nil {
			return err
		}
	}
	if _, err := io.Copy(io.Discard, io.LimitReader(hashed, 1<<20)); err != nil { // what follows the tar is hashed too
		return err
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != wantDigest {
		return newError(InvalidContent, nil, "the bundle's SHA-256 is %s, want %s", got, wantDigest)
	}
	return checkLinks(dir, links)
}

// safePath is true for a relative slash path of safe names ("a/b.html"), never "", ".", ".." or absolute.
func safePath(p string) bool {
	if p == "" || strings.HasPrefix(p, "/") {
		return false
	}
	for _, part := range strings.Split(p, "/") {
		if !safeName(part) {
			return false
		}
	}
	return true
}

func writeFile(root *os.Root, name string, r io.Reader) error {
	out, err := root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = io.Copy(out, r)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}
