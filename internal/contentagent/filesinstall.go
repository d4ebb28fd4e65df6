package contentagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// A pod's install from a bundle's file list (gitsource.BuildTree): the files of the new tree the pod already
// holds, in the tree being replaced or in production's (for a preview), are hard-linked; only the others are read,
// each from its range of the bundle. A one-page change then costs a pod the list and one page, not the site: the
// whole Python docs (67 MB) took about 0.25 s of CPU to download, check and extract, 2.5 s at the puller's 100m,
// for every deploy and every preview. It is a shortcut only: without a list, or with one that fails in any way
// (unreadable, refused, a file whose bytes differ), or when most files are missing, the pod installs the whole
// bundle as before (installBundle), whose digest covers every byte.
//
// Trust: the list is held to the SHA-256 the fetcher published with the bundle's digest (Revision.Files), each
// file read to its SHA-256 in the list, and a linked file is one of a tree this pod installed under a list it
// checked the same way (the Store keeps that list beside the tree, Store.FileListPath) and never writes again. So
// a preview's tree shares bytes with production's only where they are equal, and can change none of them.

// maxFilesBytes bounds a file list a puller reads (about 20,000 entries; the Python docs' is 170 KB): a larger
// one is not read, the whole bundle is installed. It keeps the puller's memory (64Mi) bounded.
const maxFilesBytes = 4 << 20

// A list whose missing files number more than maxMissingFiles, or hold more than half the bundle's bytes, is
// installed as the whole bundle: one download is then cheaper than that many ranges.
const maxMissingFiles = 256

// errNotWorthIt says the list's shortcut would read most of the bundle anyway.
var errNotWorthIt = errors.New("most files are missing")

// installTree installs the bundle digest (of size bytes, with the file list files, "" for none) as the tree name
// of store, from the list when it can (linking what the trees of sources hold), else whole. written, when set,
// runs once the tree is complete, just before the Store flips current to it.
func (p *Puller) installTree(ctx context.Context, store *gitsource.Store, name, digest, files string, size int64,
	sources []*gitsource.Store, written func()) error {
	lim := gitsource.Limits{MaxBytes: p.MaxBytes, MaxEntries: p.MaxEntries, MaxDepth: p.MaxDepth}
	url := p.FetcherURL + "/bundles/" + digest
	var raw []byte // the list, once checked: kept beside the tree, however it was installed
	if files != "" {
		data, err := p.getFileList(ctx, url+"/files", files)
		var list gitsource.FileList
		if err == nil {
			list, err = gitsource.ParseFileList(data, digest)
		}
		if err == nil {
			raw = data
			err = p.installFromList(ctx, store, name, url, digest, size, list, lim, sources, written)
			if err == nil {
				p.keepFileList(store, name, raw)
				return nil
			}
		}
		if ctx.Err() != nil {
			return ctx.Err()
		}
		p.Log.Info("installing the whole bundle", "commit", name, "digest", digest, "reason", err)
	}
	if err := installBundle(ctx, p.Client, store, name, url, digest, lim, written); err != nil {
		return err
	}
	if raw != nil {
		p.keepFileList(store, name, raw)
	}
	return nil
}

// getFileList downloads a file list (at most maxFilesBytes) and checks its SHA-256.
func (p *Puller) getFileList(ctx context.Context, url, sum string) ([]byte, error) {
	data, err := p.getAll(ctx, url, maxFilesBytes, "the file list")
	if err != nil {
		return nil, err
	}
	if got := sha256.Sum256(data); hex.EncodeToString(got[:]) != sum {
		return nil, gitsource.ReasonError(gitsource.InvalidContent, "the file list's SHA-256 is %x, want %s", got, sum)
	}
	return data, nil
}

// installFromList builds the tree from list: linked from the current trees of sources, the rest read from
// ranges of the bundle at url.
func (p *Puller) installFromList(ctx context.Context, store *gitsource.Store, name, url, digest string, size int64,
	list gitsource.FileList, lim gitsource.Limits, sources []*gitsource.Store, written func()) error {
	have := filesHeld(sources)
	missing, missingBytes := 0, int64(0)
	seen := map[string]bool{}
	for _, e := range list.Entries {
		if e.Type == gitsource.FileRegular && have[e.SHA256] == "" && !seen[e.SHA256] {
			seen[e.SHA256] = true
			missing++
			missingBytes += max(e.Size, 0)
		}
	}
	if missing > maxMissingFiles || missingBytes > size/2 {
		return fmt.Errorf("%w: %d files, %d bytes", errNotWorthIt, missing, missingBytes)
	}
	read := func(e gitsource.FileEntry) (io.ReadCloser, error) {
		return p.getRange(ctx, url, e.Offset, e.Size, size)
	}
	var linked int
	err := store.Install(name, func(dir string) error {
		var err error
		if linked, err = gitsource.BuildTree(dir, list, lim, func(sum string) string { return have[sum] }, read); err != nil {
			return err
		}
		if written != nil {
			written()
		}
		return nil
	})
	if err == nil {
		p.Log.Info("installed from the file list", "commit", name, "digest", digest, "linked", linked,
			"read", missing, "read_bytes", missingBytes)
	}
	return err
}

// filesHeld indexes the files of the current trees of sources by SHA-256 (the first source that has one wins),
// from the lists kept beside them; a tree without a readable list adds nothing.
func filesHeld(sources []*gitsource.Store) map[string]string {
	have := map[string]string{}
	for _, s := range sources {
		cur, err := s.Current()
		if err != nil || cur == "" {
			continue
		}
		list, err := gitsource.ReadFileList(s.FileListPath(cur), maxFilesBytes)
		if err != nil {
			continue
		}
		for sum, path := range gitsource.FilesOf(filepath.Join(s.Dir, cur), list) {
			if have[sum] == "" {
				have[sum] = path
			}
		}
	}
	return have
}

// getRange returns the body of the bytes [offset, offset+n) of the bundle at url, whose length is total.
func (p *Puller) getRange(ctx context.Context, url string, offset, n, total int64) (io.ReadCloser, error) {
	if offset < 0 || n <= 0 || offset > total-n {
		return nil, gitsource.ReasonError(gitsource.InvalidContent, "the file list names bytes %d+%d of a bundle of %d", offset, n, total)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", offset, offset+n-1))
	resp, err := p.Client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusPartialContent || resp.ContentLength != n {
		_ = resp.Body.Close()
		return nil, fmt.Errorf("GET %s (bytes %d+%d): %w %s, %d bytes", url, offset, n, errStatus, resp.Status, resp.ContentLength)
	}
	return resp.Body, nil
}

// keepFileList writes the list of the tree name beside it, so that the next install links its files; a failure
// costs that next install its shortcut only.
func (p *Puller) keepFileList(store *gitsource.Store, name string, raw []byte) {
	if err := writeFileAtomic(store.FileListPath(name), raw); err != nil {
		p.Log.Warn("keeping the file list; the next install downloads the whole bundle", "error", err)
		_ = os.Remove(store.FileListPath(name))
	}
}
