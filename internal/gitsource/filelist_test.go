package gitsource

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// writeTreeFiles writes files (path → content; a content "->target" makes a symbolic link) under a new directory.
func writeTreeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		if target, ok := strings.CutPrefix(data, "->"); ok {
			err = os.Symlink(target, full)
		} else {
			err = os.WriteFile(full, []byte(data), 0o644)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// bundleWithList returns the bundle of dir, its digest and its file list.
func bundleWithList(t *testing.T, dir string) ([]byte, string, FileList) {
	t.Helper()
	var buf bytes.Buffer
	digest, list, err := WriteBundleFiles(&buf, dir)
	if err != nil {
		t.Fatal(err)
	}
	if plain, err := WriteBundle(io.Discard, dir); err != nil || plain != digest {
		t.Fatalf("WriteBundle gives %s (%v), WriteBundleFiles %s: one tree, one digest", plain, err, digest)
	}
	return buf.Bytes(), digest, list
}

// rangesOf reads a file list's entries from the bundle's bytes, counting the reads.
func rangesOf(bundle []byte, reads *int) func(FileEntry) (io.ReadCloser, error) {
	return func(e FileEntry) (io.ReadCloser, error) {
		*reads++
		return io.NopCloser(bytes.NewReader(bundle[e.Offset : e.Offset+e.Size])), nil
	}
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	info, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return info.Sys().(*syscall.Stat_t).Ino
}

var v1Files = map[string]string{
	"index.html":           "<h1>home</h1>",
	"docs/a.html":          "page a",
	"docs/b.html":          "page b",
	"docs/copy-of-a.html":  "page a",
	"docs/sub/c.css":       "body{}",
	"empty.txt":            "",
	"latest":               "->docs",
	"docs/sub/up-to-index": "->../../index.html",
}

// A tree built from its file list, linking every file from a tree that holds them, is the bundle's tree byte for
// byte (its bundle has the same digest), and reads nothing; a tree with one page changed reads that page alone,
// from its range of the new bundle, and links the rest (the same inodes).
func TestBuildTreeFromFileList(t *testing.T) {
	v1 := writeTreeFiles(t, v1Files)
	bundle1, digest1, list1 := bundleWithList(t, v1)
	held := FilesOf(v1, list1)

	same := t.TempDir()
	reads := 0
	linked, err := BuildTree(same, list1, Limits{}, func(sum string) string { return held[sum] }, rangesOf(bundle1, &reads))
	if err != nil {
		t.Fatal(err)
	}
	if reads != 0 || linked != 6 { // every file, the empty one and the two of one content included
		t.Fatalf("linked %d files and read %d, want 6 and 0", linked, reads)
	}
	if d, _ := WriteBundle(io.Discard, same); d != digest1 {
		t.Fatalf("the tree built has the digest %s, want %s", d, digest1)
	}
	if inode(t, filepath.Join(same, "docs/sub/c.css")) != inode(t, filepath.Join(v1, "docs/sub/c.css")) {
		t.Fatal("docs/sub/c.css was not linked")
	}

	v2Files := map[string]string{}
	for p, data := range v1Files {
		v2Files[p] = data
	}
	v2Files["docs/b.html"] = "page b, changed"
	v2Files["docs/new.html"] = "page b, changed" // one content twice: read once
	v2 := writeTreeFiles(t, v2Files)
	bundle2, digest2, list2 := bundleWithList(t, v2)
	built := t.TempDir()
	reads = 0
	if _, err := BuildTree(built, list2, Limits{}, func(sum string) string { return held[sum] }, rangesOf(bundle2, &reads)); err != nil {
		t.Fatal(err)
	}
	if reads != 1 {
		t.Fatalf("read %d files, want the changed one", reads)
	}
	if d, _ := WriteBundle(io.Discard, built); d != digest2 {
		t.Fatalf("the tree built has the digest %s, want %s", d, digest2)
	}
	if inode(t, filepath.Join(built, "index.html")) != inode(t, filepath.Join(v1, "index.html")) {
		t.Fatal("index.html was not linked")
	}

	// A held path that is not a file of the size (changed under the list, or a directory) is read instead.
	reads = 0
	if _, err := BuildTree(t.TempDir(), list1, Limits{}, func(string) string { return v1 + "/docs" }, rangesOf(bundle1, &reads)); err != nil {
		t.Fatal(err)
	}
	if reads != 4 { // four contents, each read once; the empty file is written without a read
		t.Fatalf("read %d files, want 4", reads)
	}
}

// A file list is held to a bundle's rules, and every byte read to its SHA-256: a list the fetcher could not have
// written, or bytes that are not the file's, fail with InvalidContent or TooLarge.
func TestBuildTreeRefuses(t *testing.T) {
	v1 := writeTreeFiles(t, v1Files)
	bundle, _, list := bundleWithList(t, v1)
	sumA := ""
	for _, e := range list.Entries {
		if e.Name == "docs/a.html" {
			sumA = e.SHA256
		}
	}
	file := func(name string) FileEntry {
		return FileEntry{Name: name, Type: FileRegular, Size: 6, SHA256: sumA, Offset: 0}
	}
	goodBytes := func(FileEntry) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("page a")), nil }
	cases := []struct {
		name    string
		entries []FileEntry
		read    func(FileEntry) (io.ReadCloser, error)
		lim     Limits
		reason  Reason
	}{
		{"a name that climbs", []FileEntry{file("../x.html")}, goodBytes, Limits{}, InvalidContent},
		{"an absolute name", []FileEntry{file("/etc/x")}, goodBytes, Limits{}, InvalidContent},
		{"a parent that is not a directory of the list", []FileEntry{file("nowhere/x.html")}, goodBytes, Limits{}, InvalidContent},
		{"a file under a link", []FileEntry{{Name: "d", Type: FileDir}, {Name: "l", Type: FileLink, Link: "d"}, file("l/x.html")},
			goodBytes, Limits{}, InvalidContent},
		{"a link outside", []FileEntry{{Name: "l", Type: FileLink, Link: "../../etc"}}, goodBytes, Limits{}, InvalidContent},
		{"an unknown type", []FileEntry{{Name: "dev", Type: "c"}}, goodBytes, Limits{}, InvalidContent},
		{"a malformed SHA-256", []FileEntry{{Name: "x", Type: FileRegular, Size: 6, SHA256: "AB"}}, goodBytes, Limits{}, InvalidContent},
		{"bytes that are not the file's", []FileEntry{file("x.html")},
			func(FileEntry) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("page b")), nil }, Limits{}, InvalidContent},
		{"bytes cut short", []FileEntry{file("x.html")},
			func(FileEntry) (io.ReadCloser, error) { return io.NopCloser(strings.NewReader("page")), nil }, Limits{}, InvalidContent},
		{"more entries than the limit", []FileEntry{file("a.html"), file("b.html")}, goodBytes, Limits{MaxEntries: 1}, TooLarge},
		{"a file over the byte limit", []FileEntry{{Name: "x", Type: FileRegular, Size: 1 << 40, SHA256: sumA}}, goodBytes,
			Limits{MaxBytes: 1 << 20}, TooLarge},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := BuildTree(t.TempDir(), FileList{Entries: c.entries}, c.lim, nil, c.read)
			if ReasonOf(err) != c.reason {
				t.Fatalf("err %v (reason %q), want reason %s", err, ReasonOf(err), c.reason)
			}
		})
	}

	// A list of another bundle is refused before anything is built.
	data, _ := json.Marshal(list)
	if _, err := ParseFileList(data, strings.Repeat("0", 64)); ReasonOf(err) != InvalidContent {
		t.Fatalf("a list of another bundle: %v", err)
	}
	if _, err := ParseFileList([]byte("{"), list.Bundle); ReasonOf(err) != InvalidContent {
		t.Fatalf("a list that is not JSON: %v", err)
	}
	// A read that fails fails the build with its error.
	boom := errors.New("boom")
	if _, err := BuildTree(t.TempDir(), list, Limits{}, nil, func(FileEntry) (io.ReadCloser, error) { return nil, boom }); !errors.Is(err, boom) {
		t.Fatalf("a failed read: %v", err)
	}
	_ = bundle
}

// A tree's file list (Store.FileListPath) goes when its tree is pruned, and stays while its tree does.
func TestPruneRemovesAFileListWithItsTree(t *testing.T) {
	s := newStore(t)
	names := []string{strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)}
	for _, n := range names {
		if err := s.Install(n, func(dir string) error { return os.WriteFile(filepath.Join(dir, "x"), []byte(n), 0o644) }); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(s.FileListPath(n), []byte("{}"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for i, n := range names {
		_, err := os.Stat(s.FileListPath(n))
		if kept := i > 0; kept != (err == nil) {
			t.Fatalf("the list of tree %d: %v, want kept %v (the current tree and the one it replaced)", i, err, kept)
		}
	}
}
