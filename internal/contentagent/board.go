package contentagent

import (
	"context"
	"encoding/json"
	"net/http"
	"sync"
	"time"
)

// board holds one process's current Revision and wakes whoever waits for it to change: the long-poll handlers
// and the tests. Every set closes the channel handed out before it, so a waiter never misses a change.
type board struct {
	mu      sync.Mutex
	rev     Revision
	changed chan struct{}
}

func newBoard(rev Revision) *board { return &board{rev: rev, changed: make(chan struct{})} }

// get returns the revision and a channel closed at its next change.
func (b *board) get() (Revision, <-chan struct{}) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.rev, b.changed
}

func (b *board) update(f func(*Revision)) Revision {
	b.mu.Lock()
	defer b.mu.Unlock()
	f(&b.rev)
	close(b.changed)
	b.changed = make(chan struct{})
	return b.rev
}

// waitFor blocks until cond holds for the revision, or ctx ends (then it returns ctx's error).
func (b *board) waitFor(ctx context.Context, cond func(Revision) bool) (Revision, error) {
	for {
		rev, ch := b.get()
		if cond(rev) {
			return rev, nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return rev, ctx.Err()
		}
	}
}

// serveRevision answers GET /revision. With ?wait=<digest> (the digest the caller has, "" for none) it holds
// the answer until the digest differs or timeout fires (then it answers the same digest: the caller asks again).
// With &commit=<commit> too, a new commit answers even when its tree, and so its digest, is the same (a commit
// that changed only files outside the served path): every pod then reports the new commit. With &failed=<time>
// (the RFC 3339 time of the last failure the caller has, "" for none) a new failure or a success after one
// answers too: the operator's watch (internal/gitrevision) wakes on those, the pullers never ask. With
// &previews=<tag> (previewsTag of the previews the caller has, "" for none) any change of the previews answers:
// the pullers of a site with previews ask so. Without wait it answers at once.
func serveRevision(b *board, after func(time.Duration) <-chan time.Time, timeout time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		rev, _ := b.get()
		if q := r.URL.Query(); q.Has("wait") {
			have, haveCommit := q.Get("wait"), q.Get("commit")
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel()
			go func() {
				select {
				case <-after(timeout):
					cancel()
				case <-ctx.Done():
				}
			}()
			var err error
			rev, err = b.waitFor(ctx, func(rev Revision) bool {
				return rev.Digest != have || (q.Has("commit") && rev.Commit != haveCommit) ||
					(q.Has("failed") && !sameFailure(rev.LastError, q.Get("failed"))) ||
					(q.Has("previews") && previewsTag(rev.Previews) != q.Get("previews"))
			})
			if err != nil && r.Context().Err() != nil {
				return // the caller left
			}
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(rev)
	}
}

// sameFailure says f is the failure the caller has: none for "", else one that failed at that time. A time that
// does not parse is never the same: the caller gets an answer at once.
func sameFailure(f *Failure, have string) bool {
	if have == "" {
		return f == nil
	}
	t, err := time.Parse(time.RFC3339Nano, have)
	return err == nil && f != nil && f.Time.Equal(t)
}
