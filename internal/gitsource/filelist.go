package gitsource

import (
	"archive/tar"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	"hyperstatic.dev/hyperstatic/internal/countio"
)

// A bundle's file list names every entry of the bundle in its order, each file with the SHA-256 of its bytes and
// where they start in the bundle. The fetcher writes it in the bundle's pass (WriteBundleFiles); a puller that
// already holds most of a tree's files (the deploy before, production beside a preview) builds the new tree from
// it (BuildTree): it links the files it has by their SHA-256 and reads only the others, from ranges of the bundle,
// instead of downloading and extracting every byte of every deploy. The work of a one-page change is then one
// page, not the site.
//
// The list is checked as a bundle is: the same names, types, links and limits, and every file read is held to its
// SHA-256. A linked file is one of an earlier tree the puller installed and checked, with that SHA-256 by that
// tree's own list; trees are never written once published, so the bytes are the same.

// File types of a FileEntry.
const (
	FileRegular = "f"
	FileDir     = "d"
	FileLink    = "l"
)

// FileList is a bundle's file list.
type FileList struct {
	// Bundle is the digest of the bundle the list describes.
	Bundle  string      `json:"bundle"`
	Entries []FileEntry `json:"entries"`
}

// FileEntry is one entry of a bundle.
type FileEntry struct {
	Name string `json:"n"`
	Type string `json:"t"`
	// Size, SHA256 and Offset are a regular file's: its length, the hex SHA-256 of its bytes, where they start in
	// the bundle.
	Size   int64  `json:"s,omitempty"`
	SHA256 string `json:"h,omitempty"`
	Offset int64  `json:"o,omitempty"`
	// Link is a symbolic link's target.
	Link string `json:"l,omitempty"`
}

func fileTypeOf(flag byte) string {
	switch flag {
	case tar.TypeDir:
		return FileDir
	case tar.TypeSymlink:
		return FileLink
	}
	return FileRegular
}

// ParseFileList decodes a file list and checks that it describes bundle.
func ParseFileList(data []byte, bundle string) (FileList, error) {
	var list FileList
	if err := json.Unmarshal(data, &list); err != nil {
		return list, newError(InvalidContent, err, "the file list does not read as JSON")
	}
	if list.Bundle != bundle {
		return list, newError(InvalidContent, nil, "the file list is of the bundle %q, want %s", list.Bundle, bundle)
	}
	return list, nil
}

// BuildTree writes the tree list describes into dir (empty), holding it to ExtractBundle's rules: safe names
// whose parents are directories of the list, directories, files and links only, links that stay inside, lim
// charged per entry before it is created. A file is a hard link to have(sha256) when that returns the path of a
// regular file of its size (on the same file system), and otherwise is read from read(entry), which must give
// exactly its bytes: they are checked against its SHA-256 (InvalidContent when they differ). It returns how many
// files were linked. Use it as Store.Install's write function.
func BuildTree(dir string, list FileList, lim Limits, have func(sum string) string,
	read func(FileEntry) (io.ReadCloser, error)) (int, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return 0, err
	}
	defer root.Close()
	b := newTreeBudget(lim, "the file list")
	dirs := map[string]bool{".": true}
	written := map[string]string{} // a content written once here is linked for its other names
	var links []string
	linked := 0
	for _, e := range list.Entries {
		if !safePath(e.Name) || !dirs[path.Dir(e.Name)] {
			return linked, newError(InvalidContent, nil, "the file list holds the name %q", e.Name)
		}
		size := int64(0)
		switch e.Type {
		case FileRegular:
			if e.Size < 0 || !validSum(e.SHA256) {
				return linked, newError(InvalidContent, nil, "the file list's %s has size %d and SHA-256 %q", e.Name, e.Size, e.SHA256)
			}
			size = e.Size
		case FileLink:
			size = int64(len(e.Link))
		}
		if err := b.entry(e.Name, size); err != nil {
			return linked, err
		}
		switch e.Type {
		case FileDir:
			err = root.Mkdir(e.Name, 0o755)
			dirs[e.Name] = true
		case FileLink:
			if e.Link == "" || filepath.IsAbs(e.Link) || escapes(path.Join(path.Dir(e.Name), e.Link)) {
				return linked, newError(InvalidContent, nil, "the file list's link %s points to %q, outside the tree", e.Name, e.Link)
			}
			err = root.Symlink(e.Link, e.Name)
			links = append(links, e.Name)
		case FileRegular:
			dst := filepath.Join(dir, filepath.FromSlash(e.Name))
			src, ok := written[e.SHA256]
			if !ok && have != nil {
				src = have(e.SHA256)
			}
			if src != "" && linkSame(src, dst, e.Size) {
				linked++
				continue
			}
			if err = readFile(root, e, read); err == nil {
				written[e.SHA256] = dst
			}
		default:
			return linked, newError(InvalidContent, nil, "the file list's %s is of type %q: only files, directories and links", e.Name, e.Type)
		}
		if err != nil {
			return linked, err
		}
	}
	return linked, checkLinks(dir, links)
}

// linkSame hard-links src at dst when src is a regular file of size bytes; false when it is not, or the link
// fails (another file system): the caller reads the file instead.
func linkSame(src, dst string, size int64) bool {
	info, err := os.Lstat(src)
	if err != nil || !info.Mode().IsRegular() || info.Size() != size {
		return false
	}
	return os.Link(src, dst) == nil
}

// readFile writes e from read, checking its length and SHA-256.
func readFile(root *os.Root, e FileEntry, read func(FileEntry) (io.ReadCloser, error)) error {
	r := io.NopCloser(strings.NewReader(""))
	if e.Size > 0 {
		var err error
		if r, err = read(e); err != nil {
			return err
		}
	}
	defer r.Close()
	h := sha256.New()
	n := &countio.Writer{W: h}
	err := writeFile(root, e.Name, io.TeeReader(io.LimitReader(r, e.Size), n))
	if err != nil {
		return err
	}
	if n.N != e.Size {
		return newError(InvalidContent, nil, "%s: %d bytes read, want %d", e.Name, n.N, e.Size)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.SHA256 {
		return newError(InvalidContent, nil, "%s: SHA-256 %s, want %s", e.Name, got, e.SHA256)
	}
	return nil
}

// validSum is true for a lower-case hex SHA-256.
func validSum(s string) bool {
	if len(s) != 64 {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil && strings.ToLower(s) == s
}

// FilesOf returns, of the files list names, the SHA-256 of each regular file by its path under dir (joined with
// the OS's separator): the index a BuildTree's have looks in, when dir holds the tree list describes.
func FilesOf(dir string, list FileList) map[string]string {
	out := make(map[string]string, len(list.Entries))
	for _, e := range list.Entries {
		if e.Type == FileRegular && validSum(e.SHA256) && safePath(e.Name) {
			out[e.SHA256] = filepath.Join(dir, filepath.FromSlash(e.Name))
		}
	}
	return out
}

// ReadFileList reads the file list at p, of at most max bytes (a missing file: an error of os.ErrNotExist).
func ReadFileList(p string, max int64) (FileList, error) {
	f, err := os.Open(p)
	if err != nil {
		return FileList{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return FileList{}, err
	}
	if int64(len(data)) > max {
		return FileList{}, fmt.Errorf("%s is over %d bytes", p, max)
	}
	var list FileList
	return list, json.Unmarshal(data, &list)
}
