package contentagent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

// maxShardBytes bounds the read of one index shard: a ConfigMap holds 1 MiB.
const maxShardBytes = 2 << 20

// dataLink is the link kubelet flips to publish a new version of a projected volume (a ConfigMap's files).
const dataLink = "..data"

// IndexDir is a pool's index as the pool fetcher and the pool puller read it: every *.json shard of Dir, a
// projected volume of the index ConfigMaps (docs/design/pools.md, "The index"). It is read again when the volume
// changes: when the ..data link names another directory (kubelet's atomic update) or, without that link, when a
// shard's name, size or time changes. A shard that does not parse keeps its previous good form (none at the first
// read) and the refusal is logged and counted; a site found in two shards is taken from the first by file name.
type IndexDir struct {
	Dir string
	Log *slog.Logger

	mu      sync.Mutex
	mark    string
	good    map[string][]poolindex.Site // by shard file name: the last form that parsed
	refused map[string]string           // by shard file name: why its current form was refused
	sites   map[string]poolindex.Site
	loaded  bool
}

// Load reads the index when it changed since the last Load and says whether the sites may have changed. An
// error is the directory itself unreadable; a refused shard is not an error (Refused says which).
func (x *IndexDir) Load() (bool, error) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.Log == nil {
		x.Log = slog.Default()
	}
	mark, err := indexMark(x.Dir)
	if err != nil {
		return false, err
	}
	if x.loaded && mark == x.mark {
		return false, nil
	}
	names, err := shardNames(x.Dir)
	if err != nil {
		return false, err
	}
	good := map[string][]poolindex.Site{}
	refused := map[string]string{}
	for _, name := range names {
		shard, err := readShard(filepath.Join(x.Dir, name))
		if err != nil {
			refused[name] = err.Error()
			if prev, ok := x.good[name]; ok {
				good[name] = prev
			}
			if x.refused[name] != err.Error() {
				x.Log.Error("index shard refused; its previous good form (if any) is kept", "shard", name, "error", err)
			}
			continue
		}
		good[name] = shard.Sites
	}
	// The volume may have flipped while it was read: then the next Load reads it again.
	if again, err := indexMark(x.Dir); err != nil || again != mark {
		mark = ""
	}
	sites := map[string]poolindex.Site{}
	for _, name := range names {
		for _, s := range good[name] {
			if _, dup := sites[s.ID]; dup {
				x.Log.Error("a site is in two index shards; the first by file name is kept", "site", s.ID, "shard", name)
				continue
			}
			sites[s.ID] = s
		}
	}
	x.mark, x.good, x.refused, x.sites, x.loaded = mark, good, refused, sites, true
	return true, nil
}

// Sites returns the sites of the index as last loaded, by id (the caller must not modify them).
func (x *IndexDir) Sites() map[string]poolindex.Site {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.sites
}

// Loaded is true once a Load has read the directory.
func (x *IndexDir) Loaded() bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.loaded
}

// Refused returns, by shard file name, why its current form was refused.
func (x *IndexDir) Refused() map[string]string {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.refused
}

// Watch loads the index every `every` (and at once) until ctx ends, calling changed after each load that read
// it. An unreadable directory is logged and tried again.
func (x *IndexDir) Watch(ctx context.Context, every time.Duration, changed func()) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		ok, err := x.Load()
		if err != nil {
			x.Log.Error("reading the index", "dir", x.Dir, "error", err)
		} else if ok {
			changed()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// indexMark is what changes when the index does: the target of ..data, else every shard's name, size and time.
func indexMark(dir string) (string, error) {
	if target, err := os.Readlink(filepath.Join(dir, dataLink)); err == nil {
		return "data:" + target, nil
	}
	names, err := shardNames(dir)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, n := range names {
		info, err := os.Stat(filepath.Join(dir, n))
		if err != nil {
			continue
		}
		fmt.Fprintf(&b, "%s:%d:%d;", n, info.Size(), info.ModTime().UnixNano())
	}
	return b.String(), nil
}

// shardNames are the *.json names of dir, sorted (kubelet's own ..-prefixed entries are not shards).
func shardNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if n := e.Name(); strings.HasSuffix(n, ".json") && !strings.HasPrefix(n, ".") {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names, nil
}

func readShard(path string) (poolindex.Shard, error) {
	f, err := os.Open(path)
	if err != nil {
		return poolindex.Shard{}, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxShardBytes+1))
	if err != nil {
		return poolindex.Shard{}, err
	}
	if len(data) > maxShardBytes {
		return poolindex.Shard{}, fmt.Errorf("over %d bytes", maxShardBytes)
	}
	return poolindex.Parse(data)
}

// siteDir is the directory of site id under dir. poolindex refuses every id that is not two DNS labels joined by
// a dot; this is the second wall, at the join itself: an id that is not one plain name inside dir (a slash,
// "..", a leading dot, which would also reach the .ready directory) is refused, whatever let it through.
func siteDir(dir, id string) (string, error) {
	if id == "" || strings.HasPrefix(id, ".") || strings.ContainsAny(id, `/\`+"\x00") || !filepath.IsLocal(id) {
		return "", fmt.Errorf("site id %q is not a plain directory name", id)
	}
	return filepath.Join(dir, id), nil
}
