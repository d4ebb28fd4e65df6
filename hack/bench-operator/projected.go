package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// The pool pods read their index from a projected volume of the shard ConfigMaps. The kubelet updates such a
// volume atomically: the files go into a new hidden directory, the ..data link is renamed onto it in one step,
// and each file name is a link through ..data. The readers (the puller, the fetcher, the server's pool thread)
// follow that link; writeProjected does the same here, so they read the index as they would in a pod.

const projectedDataLink = "..data"

// writeProjected makes dir hold exactly files, in the kubelet's layout; stamp names the new version's directory.
func writeProjected(dir string, files map[string]string, stamp string) error {
	version := "..v" + stamp
	vdir := filepath.Join(dir, version)
	if err := os.Mkdir(vdir, 0o755); err != nil {
		return err
	}
	for name, data := range files {
		if strings.ContainsRune(name, '/') || strings.HasPrefix(name, ".") {
			return fmt.Errorf("projected file name %q: a plain name is required", name)
		}
		if err := os.WriteFile(filepath.Join(vdir, name), []byte(data), 0o644); err != nil {
			return err
		}
	}
	old, _ := os.Readlink(filepath.Join(dir, projectedDataLink))
	tmp := filepath.Join(dir, projectedDataLink+"_tmp")
	_ = os.Remove(tmp)
	if err := os.Symlink(version, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, filepath.Join(dir, projectedDataLink)); err != nil {
		return err
	}
	// The visible names: a link through ..data for each file, the names of files that left removed.
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, keep := files[e.Name()]; !keep && !strings.HasPrefix(e.Name(), "..") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	for name := range files {
		link := filepath.Join(dir, name)
		if target, err := os.Readlink(link); err == nil && target == filepath.Join(projectedDataLink, name) {
			continue
		}
		_ = os.Remove(link)
		if err := os.Symlink(filepath.Join(projectedDataLink, name), link); err != nil {
			return err
		}
	}
	if old != "" && old != version {
		return os.RemoveAll(filepath.Join(dir, old))
	}
	return nil
}

// indexWriter writes the index volume again whenever kicked (at most once per debounce: a burst of shard writes
// at the operator's start becomes a few volume updates, as the kubelet's sync period batches them).
type indexWriter struct {
	dir     string
	list    func(ctx context.Context) (map[string]string, error)
	kicked  atomic.Bool
	last    map[string]string
	version int
}

const indexDebounce = 500 * time.Millisecond

func (w *indexWriter) kick() { w.kicked.Store(true) }

// write writes the volume when its files changed since the last write.
func (w *indexWriter) write(ctx context.Context) error {
	files, err := w.list(ctx)
	if err != nil {
		return err
	}
	if w.version > 0 && maps.Equal(files, w.last) {
		return nil
	}
	w.version++
	if err := writeProjected(w.dir, files, fmt.Sprintf("%06d", w.version)); err != nil {
		return err
	}
	w.last = files
	return nil
}

func (w *indexWriter) run(ctx context.Context) {
	t := time.NewTicker(indexDebounce)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if w.kicked.Swap(false) {
			if err := w.write(ctx); err != nil {
				say("writing the pool's index volume: %v (tried again at the next change)", err)
				w.kick()
			}
		}
	}
}
