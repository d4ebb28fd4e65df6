package gitsource

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// DefaultMaxBytes is the size limit when Source.MaxBytes is 0: the packfile of one commit, and separately the
// files written, may each take this much.
const DefaultMaxBytes = 512 << 20

// CurrentLink is the symbolic link, in the Store's directory, that names the tree being served: the server's
// root is Dir/current.
const CurrentLink = "current"

// Source is what to serve: a repository, a ref, a subdirectory.
type Source struct {
	URL string
	// Ref is a branch, a tag (short or refs/...), or a full 40-hex commit hash. A branch is followed.
	Ref string
	// Path is the subdirectory of the repository to serve ("" for all of it).
	Path string
	// Auth is from AuthFromSecret (or WithSecret); nil for an anonymous fetch.
	Auth transport.AuthMethod
	// CABundle is PEM certificates trusted for an https:// URL beside the system's (the Secret's ca.crt, set by
	// WithSecret); nil for the system's alone.
	CABundle []byte
	// MaxBytes caps the packfile and the written tree (each; the tree's content plus EntryCost per entry); 0
	// means DefaultMaxBytes.
	MaxBytes int64
	// MaxEntries caps the files, directories and links of the written tree, MaxDepth its path components; 0
	// means DefaultMaxEntries, DefaultMaxDepth.
	MaxEntries int
	MaxDepth   int
}

func (s Source) maxBytes() int64 { return s.Limits().MaxBytes }

// Limits are the limits of the written tree, defaults filled in: what a puller must extract the bundle with.
func (s Source) Limits() Limits {
	return Limits{MaxBytes: s.MaxBytes, MaxEntries: s.MaxEntries, MaxDepth: s.MaxDepth}.withDefaults()
}

// Revision is the commit a Store serves.
type Revision struct {
	Commit string
	// Time is the commit's committer time (when it was made, not when it was pushed).
	Time time.Time
	// Ref is the full name the ref resolved to ("" when the source names a commit).
	Ref string
}

// Store keeps the trees of one site's source under Dir:
//
//	Dir/<commit>/       a commit's served tree (Source.Path of it), never modified once published
//	Dir/current         symbolic link to <commit>: what is served
//	Dir/<commit>.files  the tree's file list (FileList), when its installer keeps one: removed with the tree
//	Dir/<commit>.blobs  the Git blob of each of its files, when Sync wrote it (blobs.go): removed with the tree
//	Dir/.stage-*        a tree being written (removed on failure)
//	Dir/.objects-*      the scratch object store of a fetch without Objects (always removed)
//
// One Store per Source: a tree is named after its commit alone, so a changed Path needs a new Store (Dir).
// A Store is not safe for concurrent Syncs; one goroutine per site owns it.
type Store struct {
	Dir string
	// Check, when set, runs on a new tree before it is published (the server's `--check`: _redirects,
	// _headers, names); its error makes the Sync fail with InvalidContent and the old tree keeps serving.
	Check func(dir string) error
	// KeepOlder, when set, makes a publish leave the trees older than the one it replaced in place; the caller
	// removes them with Prune once nothing reads them (a pod's puller: after the server has reloaded).
	KeepOlder bool
	// Retain, when set, names more trees that pruning keeps: a pod's puller keeps the trees of the fetcher's
	// deploy history (docs/design/deploys.md), so a rollback is a flip to a tree already on disk (Activate).
	Retain func() []string
	// LinkFrom, when set, is another Store on the same file system whose current tree's files a Sync links when
	// the new tree has them (blobs.go), beside this Store's own current tree: a preview's Store names production's.
	LinkFrom *Store
	// Objects, when set, is the Git object store a Sync fetches into and keeps for the next, so that a fetch
	// transfers only what the commits it holds do not reach (objects.go): a preview's Store shares production's.
	// nil: each Sync fetches into a scratch store of its own, deleted after.
	Objects *Objects
	// beforeSwap, in tests only, runs when the new tree is complete and not yet published.
	beforeSwap func(tree string)
}

// FileListPath is where the file list of the tree name is kept (a pod's puller writes it after the install, so
// that the next install links this tree's files rather than download them: BuildTree).
func (s *Store) FileListPath(name string) string { return filepath.Join(s.Dir, name+fileListSuffix) }

const fileListSuffix = ".files"

// Served returns the path to give the server as its root.
func (s *Store) Served() string { return filepath.Join(s.Dir, CurrentLink) }

// Current returns the commit served now ("" when nothing was published yet).
func (s *Store) Current() (string, error) {
	target, err := os.Readlink(s.Served())
	if errors.Is(err, os.ErrNotExist) {
		return "", nil
	}
	return target, err
}

// Sync makes Dir/current serve the commit src.Ref names now. It returns the revision served and whether it
// changed. On any error nothing served changes: the last good tree stays current.
func (s *Store) Sync(ctx context.Context, src Source) (Revision, bool, error) {
	target, err := Resolve(ctx, src)
	if err != nil {
		return Revision{}, false, err
	}
	return s.SyncTo(ctx, src, target)
}

// SyncTo is Sync with the ref already resolved (a listing's Refs.Target): the fetch takes target.Ref by name, so
// a push since the listing is taken as Sync takes one.
func (s *Store) SyncTo(ctx context.Context, src Source, target Target) (Revision, bool, error) {
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return Revision{}, false, err
	}
	cur, err := s.Current()
	if err != nil {
		return Revision{}, false, err
	}
	if cur == target.Commit.String() {
		// The commit time is in the tree's name only; an unchanged Sync does not fetch to learn it again.
		return Revision{Commit: cur, Ref: target.Ref}, false, nil
	}
	objects := s.Objects
	if objects == nil {
		scratch, err := os.MkdirTemp(s.Dir, ".objects-")
		if err != nil {
			return Revision{}, false, err
		}
		defer os.RemoveAll(scratch)
		objects = &Objects{Dir: scratch}
	}
	rev, changed, incremental, err := s.syncFrom(ctx, objects, src, target, cur, false)
	if err != nil && incremental && ReasonOf(err) == "" && ctx.Err() == nil {
		// The kept store answered, but the tree could not be read out of it (an object lost or damaged on disk
		// since its fetch; every failure of the content rules, the limits and the check has a Reason): once
		// more from a fresh store.
		rev, changed, _, err = s.syncFrom(ctx, objects, src, target, cur, true)
	}
	return rev, changed, err
}

// syncFrom fetches target into objects (a fresh store when fresh) and installs its tree unless it is cur.
// incremental says the commit came into a kept store.
func (s *Store) syncFrom(ctx context.Context, objects *Objects, src Source, target Target, cur string, fresh bool) (
	rev Revision, changed, incremental bool, err error) {
	f, err := objects.fetch(ctx, src, target, fresh)
	if err != nil {
		return Revision{}, false, false, err
	}
	defer f.release()
	rev = Revision{Commit: f.commit.Hash.String(), Time: f.commit.Committer.When, Ref: target.Ref}
	if rev.Commit == cur { // the ref moved back between Resolve and the fetch
		return rev, false, f.incremental, nil
	}
	tree, err := selectTree(f.commit, src.Path)
	if err != nil {
		return Revision{}, false, f.incremental, err
	}
	reuse := s.reusable()
	var blobs []treeBlob
	err = s.Install(rev.Commit, func(dir string) error {
		// Once the tree is written the store is not read again: the next fetch (a preview's) may start while
		// this one's check runs.
		defer f.release()
		blobs, err = writeTree(tree, dir, src.Limits(), reuse)
		return err
	})
	if err != nil {
		return Revision{}, false, f.incremental, err
	}
	s.writeBlobs(rev.Commit, blobs)
	return rev, true, f.incremental, nil
}

// Install publishes a tree for commit that write puts into an empty directory: the Check runs on it, then it
// becomes Dir/<commit> and Dir/current flips to it. Sync installs what it fetched; a pod's puller installs what
// it extracted from a bundle (ExtractBundle). On error nothing served changes and the directory is removed.
// commit names the tree: a Git commit, or any lower-case hex name of 16 to 64 digits (TreeName), as the pool's
// trees are named by a digest (docs/design/pools.md).
func (s *Store) Install(commit string, write func(dir string) error) error {
	if !TreeName(commit) {
		return newError(InvalidSource, nil, "%q is not a full commit hash nor a hex tree name", commit)
	}
	if err := os.MkdirAll(s.Dir, 0o755); err != nil {
		return err
	}
	if cur, err := s.Current(); err != nil || cur == commit {
		return err // already served: its tree is immutable, and replacing it would pull it from under readers
	}
	stage, err := os.MkdirTemp(s.Dir, ".stage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(stage) // a no-op once renamed into place
	if err := write(stage); err != nil {
		return annotate(err, commit)
	}
	if s.Check != nil {
		if err := s.Check(stage); err != nil {
			return newError(InvalidContent, err, "commit %s fails the content check", commit)
		}
	}
	return s.publish(stage, commit)
}

// annotate names the commit in a content error.
func annotate(err error, commit string) error {
	var e *Error
	if errors.As(err, &e) {
		return &Error{Reason: e.Reason, Msg: "commit " + commit + ": " + e.Msg, Err: e.Err}
	}
	return err
}

// publish renames the finished stage to Dir/<commit> and flips Dir/current to it with one rename(2) of a new
// link over the old: a reader resolving current gets the whole old tree or the whole new one. Trees older than
// the one just replaced are then removed; the replaced one stays, because a server may still be reading it
// until its reload (it keeps at most one older generation alive; see the server README, "Reload").
func (s *Store) publish(stage, commit string) error {
	final := filepath.Join(s.Dir, commit)
	// A tree of this commit left from earlier (the ref went back to it): it is not current (Sync checked), so
	// it is replaced by the fresh one rather than trusted.
	if err := os.RemoveAll(final); err != nil {
		return err
	}
	if err := os.Chmod(stage, 0o755); err != nil { // MkdirTemp makes it 0700; the server may run as another user
		return err
	}
	if err := os.Rename(stage, final); err != nil {
		return err
	}
	if s.beforeSwap != nil {
		s.beforeSwap(final)
	}
	return s.flip(commit)
}

// Activate flips Dir/current to the tree name already on disk (an earlier deploy kept by Retain) and reports
// whether there was one; false with no error when there is none (the caller installs it). A tree at its final
// name is complete (publish renames a finished stage) and immutable, so it is not checked again.
func (s *Store) Activate(name string) (bool, error) {
	if !TreeName(name) {
		return false, newError(InvalidSource, nil, "%q is not a full commit hash nor a hex tree name", name)
	}
	if cur, err := s.Current(); err != nil || cur == name {
		return err == nil, err
	}
	info, err := os.Lstat(filepath.Join(s.Dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if !info.IsDir() {
		return false, nil
	}
	return true, s.flip(name)
}

// flip points Dir/current at the tree commit with one rename(2) of a new link over the old, then prunes (unless
// KeepOlder) every tree but it, the one it replaced, and those Retain names.
func (s *Store) flip(commit string) error {
	previous, err := s.Current()
	if err != nil {
		return err
	}
	tmp := filepath.Join(s.Dir, fmt.Sprintf(".%s-%d", CurrentLink, time.Now().UnixNano()))
	if err := os.Symlink(commit, tmp); err != nil {
		return err
	}
	if err := os.Rename(tmp, s.Served()); err != nil {
		_ = os.Remove(tmp)
		return err
	}
	if s.KeepOlder {
		return nil
	}
	return s.prune(commit, previous)
}

// Prune removes every tree but the current one and previous (the tree current replaced, which a server may
// still read until its reload), and leftovers of interrupted installs. Publishing prunes by itself unless
// KeepOlder is set. Not safe beside a Sync or Install of the same Store.
func (s *Store) Prune(previous string) error {
	cur, err := s.Current()
	if err != nil {
		return err
	}
	return s.prune(cur, previous)
}

// prune removes every tree but keep, and leftovers of interrupted Syncs.
func (s *Store) prune(keep ...string) error {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return err
	}
	if s.Retain != nil {
		keep = append(keep, s.Retain()...)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if tree, _, ok := strings.Cut(name, "."); ok && TreeName(tree) {
			name = tree // a tree's lists (.files, .blobs) go with it
		}
		if name == CurrentLink || slices.Contains(keep, name) {
			continue
		}
		if !TreeName(name) && !strings.HasPrefix(name, ".") {
			continue // not ours
		}
		if err := os.RemoveAll(filepath.Join(s.Dir, e.Name())); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// TreeName is true for the names a Store gives its trees: lower-case hex of 16 to 64 digits (a 40-digit Git
// commit; the SHA-256 of a pool's ConfigMap site; the first 16 digits of a pool bundle's digest). Nothing else in
// Dir is a tree, and no such name can be "current", start with a dot or hold a slash.
func TreeName(name string) bool {
	if len(name) < 16 || len(name) > 64 {
		return false
	}
	for _, c := range name {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
