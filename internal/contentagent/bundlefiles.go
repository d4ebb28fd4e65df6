package contentagent

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// The bundle files of a fetcher, shared by the dedicated site's fetcher (one directory) and the pool fetcher (one
// directory per site): DIR/<sha256>.tar, each complete at its final name, immutable, served as is. The dedicated
// fetcher also keeps each bundle's file list, DIR/<sha256>.files (gitsource.FileList, JSON), written before the
// bundle's rename and pruned with it: a puller that has most of the files builds the tree from it (filesinstall.go).

// filesSuffix names a bundle's file list beside it.
const filesSuffix = ".files"

// writeBundleFile writes the tree's bundle into dir under a temporary name and renames it to its digest: a
// bundle at its final name is always complete.
func writeBundleFile(dir, tree string) (string, int64, error) {
	digest, size, _, err := writeBundle(dir, tree, false)
	return digest, size, err
}

// writeBundleWithFiles is writeBundleFile that also writes the bundle's file list and returns its SHA-256 (the
// Files of a Deploy or a Preview).
func writeBundleWithFiles(dir, tree string) (digest string, size int64, files string, err error) {
	return writeBundle(dir, tree, true)
}

func writeBundle(dir, tree string, withFiles bool) (string, int64, string, error) {
	tmp, err := os.CreateTemp(dir, ".bundle-")
	if err != nil {
		return "", 0, "", err
	}
	defer os.Remove(tmp.Name()) // a no-op once renamed
	w := bufio.NewWriterSize(tmp, 256<<10)
	digest, list, err := gitsource.WriteBundleFiles(w, tree)
	if err == nil {
		err = w.Flush()
	}
	if err == nil {
		err = tmp.Close()
	} else {
		_ = tmp.Close()
	}
	if err != nil {
		return "", 0, "", err
	}
	info, err := os.Stat(tmp.Name())
	if err != nil {
		return "", 0, "", err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return "", 0, "", err
	}
	var files string
	if withFiles {
		data, err := json.Marshal(list)
		if err != nil {
			return "", 0, "", err
		}
		sum := sha256.Sum256(data)
		files = hex.EncodeToString(sum[:])
		if err := writeFileAtomic(filesFile(dir, digest), data); err != nil {
			return "", 0, "", err
		}
	}
	return digest, info.Size(), files, os.Rename(tmp.Name(), bundleFile(dir, digest))
}

// filesFile is the path of a bundle's file list.
func filesFile(dir, digest string) string { return filepath.Join(dir, digest+filesSuffix) }

func bundleFile(dir, digest string) string { return filepath.Join(dir, digest+".tar") }

// pruneBundleFiles removes every bundle of dir but keep, and leftovers of interrupted writes. An open download
// keeps its file until it ends.
func pruneBundleFiles(dir string, log *slog.Logger, keep ...string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sort.Strings(names)
	for _, n := range names {
		d, ok := strings.CutSuffix(n, ".tar")
		if !ok {
			d, ok = strings.CutSuffix(n, filesSuffix)
		}
		if (!ok || !validDigest(d) || slices.Contains(keep, d)) && !strings.HasPrefix(n, ".bundle-") {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			log.Warn("removing an old bundle", "name", n, "error", err)
		}
	}
}

// serveBundleFile answers the bundle at path, named by digest. A digest names one content forever, so the
// answer is immutable. It reports whether the bundle was sent (200).
func serveBundleFile(w http.ResponseWriter, r *http.Request, path, digest string) bool {
	file, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		http.Error(w, "no bundle with this digest", http.StatusNotFound)
		return false
	}
	if err != nil {
		http.Error(w, "reading the bundle", http.StatusInternalServerError)
		return false
	}
	defer file.Close()
	info, err := file.Stat()
	if err != nil {
		http.Error(w, "reading the bundle", http.StatusInternalServerError)
		return false
	}
	h := w.Header()
	h.Set("Content-Type", "application/x-tar")
	h.Set("Content-Length", strconv.FormatInt(info.Size(), 10))
	h.Set("Cache-Control", "public, max-age=31536000, immutable")
	h.Set("ETag", `"`+digest+`"`)
	http.ServeContent(w, r, "", info.ModTime(), file)
	return true
}
