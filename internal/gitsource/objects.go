package gitsource

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// A Sync used to fetch every commit at depth 1 into a scratch object store it then deleted, so every push, and
// every preview (which differs from production by a page), transferred and parsed the whole tree's pack: 67 MB
// for the Python docs, about 3.6 s of each push (the server building the pack, go-git parsing and indexing it).
// Objects keeps the store between fetches instead, and go-git sends a have for each commit it holds.
//
// The depth of an incremental fetch is 2, not 1. git's upload-pack leaves out of the pack only the trees of the
// commits the haves reach that are parents of a commit it sends, when the client takes no thin packs (go-git
// takes none): at depth 1 the commit sent is shallow, has no parent in the walk, and everything is sent however
// many haves were ACKed (git 2.39 by hand: 24 of 24 objects at depth 1, 4 at depth 2, for a one-file change whose
// parent the client named). At depth 2 a push whose parent the store holds (production's next commit, a preview
// whose head's parent is production's commit) costs what changed. When the parent is not held (two commits at
// once, a pull request based on an older commit, a force-push) the server sends the commit and its parent whole,
// a little more than a depth-1 fetch; the room left in the store bounds it, past which the fresh depth-1 fetch
// follows.
//
// What keeps the served tree exact:
//   - A have is only a commit whose whole tree the store was checked to hold (checkComplete) right after its
//     fetch. A server leaves out everything a have reaches, so a have the store could not back would make it
//     withhold objects the store lacks.
//   - Anything wrong on the incremental path ends in a fetch into a fresh store, which is what every fetch was
//     before: an error of the incremental fetch (but the credentials, the repository and the ref, which a fresh
//     fetch would meet alike, and a cancelled context), a pack past the room the store has left, a commit whose
//     tree came incomplete (a server that walked past our shallow commits, a store damaged on disk), and, in
//     Store.SyncTo, a tree that could not be read out of the store. A server that ignores the haves sends
//     everything: correct, and the store grows until its bound starts it afresh.
//   - Objects are content-addressed (go-git indexes each under the hash of the bytes it received) and the tree
//     is still written from the commit's own tree and checked as before: a kept store changes what is
//     transferred, never what is served.
//
// Bounds:
//   - Disk: the store never holds more than the site's MaxBytes. An incremental fetch may write only what the
//     store has left of it; passing that is not TooLarge but a fresh fetch with the whole MaxBytes, as before.
//     That is the room the scratch store had (the operator sizes the fetcher's emptyDir with one pack of
//     MaxBytes, docs/design/git-content.md), and production and its previews now share the one store where each
//     had a scratch store of its own.
//   - Work: a fresh store starts when the store holds more than keptGrowth times the bytes of its last fresh
//     fetch, or more than maxKeptPacks packs. A fresh fetch costs one whole pack and comes only after the
//     incremental ones added as many bytes again, so the restarts at most double what a fetcher transfers over
//     time; and each incremental fetch adds a pack, which every object lookup then searches, so their number is
//     bounded too (for one-page pushes of the Python docs, 1/64 of a whole pack per push).
//   - Haves: the maxHaves commits fetched last, production's and the previews' alike.
//
// Which repository the store holds and its last fresh size are kept in memory only: a process's first fetch
// starts a fresh store, so nothing a previous process left behind is trusted.
const (
	keptGrowth   = 2
	maxKeptPacks = 64
	maxHaves     = 16
	// keptRefPrefix names the refs of the commits kept as haves (go-git sends one have per ref).
	keptRefPrefix = "refs/hyperstatic/kept/"
)

// Objects is a Git object store kept between fetches in Dir, which it owns (it is emptied whenever the store
// starts afresh). One process shares one Objects between the Stores that fetch the same repository: production's
// and its previews'. It is safe for concurrent use: one fetch at a time, and a fetch's tree is read out of the
// store before the next fetch may change it.
type Objects struct {
	Dir string

	mu sync.Mutex
	// url is the repository the store holds, "" until a fresh fetch succeeded (so the next fetch starts afresh).
	url string
	// freshBytes is what the store held after its fresh fetch.
	freshBytes int64
	// kept are the commits with a ref under keptRefPrefix, oldest first.
	kept []plumbing.Hash
}

// fetched is a commit in the store; the store stays locked until release (idempotent), once its tree is read.
type fetched struct {
	commit *object.Commit
	// incremental is true when the commit came into a kept store (a damaged store is the caller's to suspect).
	incremental bool
	release     func()
}

// fetch brings target's commit into the store, from what the store holds when it can, and returns it with the
// store locked. fresh forces a fresh store (the caller could not read a tree out of the kept one).
func (o *Objects) fetch(ctx context.Context, src Source, target Target, fresh bool) (fetched, error) {
	o.mu.Lock()
	release := sync.OnceFunc(o.mu.Unlock)
	if !fresh && o.keeps(src) {
		c, err := o.fetchInto(ctx, src, target, false)
		if err == nil {
			return fetched{commit: c, incremental: true, release: release}, nil
		}
		if !worthFresh(ctx, err) {
			release()
			return fetched{}, err
		}
	}
	c, err := o.fetchInto(ctx, src, target, true)
	if err != nil {
		release()
		return fetched{}, err
	}
	return fetched{commit: c, release: release}, nil
}

// keeps is true when the next fetch of src may build on the store: it holds src's repository and is within its
// bounds.
func (o *Objects) keeps(src Source) bool {
	if o.url == "" || o.url != src.URL {
		return false
	}
	used, packs, err := o.usage()
	return err == nil && used < src.maxBytes() && used <= keptGrowth*o.freshBytes && packs <= maxKeptPacks
}

// worthFresh is true for a failure of the incremental path that a fresh store may not meet: not the credentials,
// the repository, the ref or the content, which a fresh fetch meets alike, and not a cancelled fetch.
func worthFresh(ctx context.Context, err error) bool {
	if ctx.Err() != nil {
		return false
	}
	switch ReasonOf(err) {
	case AuthFailed, RepositoryNotFound, RefNotFound, Unsupported, InvalidSource, InvalidContent:
		return false
	}
	return true
}

// fetchInto fetches into the kept store (fresh false: within the room it has left) or into a fresh one (the
// whole MaxBytes), and checks the commit's tree is all there before keeping the commit as a have.
func (o *Objects) fetchInto(ctx context.Context, src Source, target Target, fresh bool) (*object.Commit, error) {
	room := src.maxBytes()
	if fresh {
		if err := o.reset(); err != nil {
			return nil, err
		}
	} else {
		used, _, err := o.usage()
		if err != nil {
			return nil, err
		}
		room -= used
	}
	b := &budget{max: room}
	st := filesystem.NewStorage(limitFS{Filesystem: osfs.New(o.Dir, osfs.WithBoundOS()), b: b}, cache.NewObjectLRU(objectCacheSize))
	if fresh {
		if _, err := git.Init(st, nil); err != nil {
			return nil, fmt.Errorf("creating the object store: %w", err)
		}
	}
	depth := 2 // see above: only a parent in the walk makes the haves count
	if fresh {
		depth = 1
	}
	commit, err := fetchCommit(ctx, src, target, st, b, depth)
	if err != nil {
		return nil, err
	}
	if err := checkComplete(st, commit); err != nil {
		return nil, newError(Unreachable, err, "the server sent commit %s without all of its tree", commit.Hash)
	}
	o.keep(st, commit.Hash)
	if fresh {
		o.url = src.URL
		o.freshBytes, _, _ = o.usage()
	}
	return commit, nil
}

// reset empties Dir for a fresh store.
func (o *Objects) reset() error {
	o.url, o.freshBytes, o.kept = "", 0, nil
	if err := os.RemoveAll(o.Dir); err != nil {
		return err
	}
	return os.MkdirAll(o.Dir, 0o755)
}

// keep makes commit a have of the next fetches (a ref to it) and drops the oldest beyond maxHaves. A ref that
// cannot be written costs only the have.
func (o *Objects) keep(st *filesystem.Storage, commit plumbing.Hash) {
	name := plumbing.ReferenceName(keptRefPrefix + commit.String())
	o.kept = slices.DeleteFunc(o.kept, func(h plumbing.Hash) bool { return h == commit })
	if st.SetReference(plumbing.NewHashReference(name, commit)) != nil {
		return
	}
	o.kept = append(o.kept, commit)
	for len(o.kept) > maxHaves {
		_ = st.RemoveReference(plumbing.ReferenceName(keptRefPrefix + o.kept[0].String()))
		o.kept = o.kept[1:]
	}
}

// usage returns the bytes of every file under Dir (packs, their indexes, refs, the shallow file, a pack left by an
// interrupted fetch) and the number of packs.
func (o *Objects) usage() (used int64, packs int, err error) {
	err = filepath.WalkDir(o.Dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		used += info.Size()
		if strings.HasSuffix(d.Name(), ".pack") {
			packs++
		}
		return nil
	})
	return used, packs, err
}

// checkComplete fails when the store lacks an object of the commit's tree (submodules name commits of other
// repositories: not objects of this one). Each tree is read; each blob is looked up in the indexes only.
func checkComplete(st *filesystem.Storage, c *object.Commit) error {
	seen := map[plumbing.Hash]bool{}
	var walk func(h plumbing.Hash) error
	walk = func(h plumbing.Hash) error {
		t, err := object.GetTree(st, h)
		if err != nil {
			return fmt.Errorf("tree %s: %w", h, err)
		}
		for _, e := range t.Entries {
			if seen[e.Hash] || e.Mode == filemode.Submodule {
				continue
			}
			seen[e.Hash] = true
			if e.Mode == filemode.Dir {
				err = walk(e.Hash)
			} else if err = st.HasEncodedObject(e.Hash); err != nil {
				err = fmt.Errorf("blob %s: %w", e.Hash, err)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	return walk(c.TreeHash)
}
