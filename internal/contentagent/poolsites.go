package contentagent

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// PoolSite is one site of a pool's GET /sites (docs/design/pools.md, "The fetcher's answers"): on the pool
// fetcher, the bundle it serves for the site and its last failure; on a pool puller, what its pod has installed.
type PoolSite struct {
	ID string `json:"id"`
	// Commit is the Git commit, or for a ConfigMap site the SHA-256 of its mirrors' data.
	Commit string `json:"commit"`
	// Bundle is the hex SHA-256 of the bundle; "" while there is none.
	Bundle string `json:"bundle"`
	Size   int64  `json:"size"`
	// Error is the last failure ("Reason: message"); "" when none. The last good bundle keeps being served.
	Error string `json:"error"`
}

// PoolSites is the body of GET /sites, sorted by id.
type PoolSites struct {
	Sites []PoolSite `json:"sites"`
}

// siteTable is what a pool process publishes per site, with a generation that changes with any entry. GET /sites
// answers it whole, encoded once per generation however many pods ask; its ETag is the process's boot id and the
// generation, and GET /sites?wait=<etag> holds until it differs: one long poll per pod for all its sites, never
// one per site.
type siteTable struct {
	mu      sync.Mutex
	boot    string
	gen     uint64
	changed chan struct{}
	entries map[string]PoolSite
	body    []byte // the encoded list of generation bodyGen
	bodyGen uint64
}

func newSiteTable() *siteTable {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return &siteTable{boot: hex.EncodeToString(b), changed: make(chan struct{}), entries: map[string]PoolSite{}, bodyGen: ^uint64(0)}
}

// bumpLocked starts a new generation and wakes the waiters.
func (t *siteTable) bumpLocked() {
	t.gen++
	close(t.changed)
	t.changed = make(chan struct{})
}

// set publishes e (a no-op when it is what is published).
func (t *siteTable) set(e PoolSite) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if old, ok := t.entries[e.ID]; ok && old == e {
		return
	}
	t.entries[e.ID] = e
	t.bumpLocked()
}

func (t *siteTable) remove(id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.entries[id]; ok {
		delete(t.entries, id)
		t.bumpLocked()
	}
}

// get returns site id's entry, whether it is published, and a channel closed at the next change of any entry.
func (t *siteTable) get(id string) (PoolSite, bool, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.entries[id]
	return e, ok, t.changed
}

func (t *siteTable) etagLocked() string { return t.boot + "-" + strconv.FormatUint(t.gen, 10) }

// list returns the encoded body of the current generation, its ETag, and a channel closed at the next change.
func (t *siteTable) list() ([]byte, string, <-chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.bodyGen != t.gen {
		sites := make([]PoolSite, 0, len(t.entries))
		for _, e := range t.entries {
			sites = append(sites, e)
		}
		slices.SortFunc(sites, func(a, b PoolSite) int { return strings.Compare(a.ID, b.ID) })
		var buf bytes.Buffer
		_ = json.NewEncoder(&buf).Encode(PoolSites{Sites: sites})
		t.body, t.bodyGen = buf.Bytes(), t.gen
	}
	return t.body, t.etagLocked(), t.changed
}

// count returns how many entries match each state: "served" (a bundle, no error), "failing" (an error), and
// "pending" (neither).
func (t *siteTable) count(state string) float64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, e := range t.entries {
		if entryState(e) == state {
			n++
		}
	}
	return float64(n)
}

func entryState(e PoolSite) string {
	switch {
	case e.Error != "":
		return "failing"
	case e.Bundle != "":
		return "served"
	}
	return "pending"
}

// holdUntil waits until changed says so (cond re-evaluated at each change), timeout passes, or the caller leaves.
func holdUntil(ctx context.Context, timeout time.Duration, next func() (bool, <-chan struct{})) {
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	for {
		done, ch := next()
		if done {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

// serveList answers GET /sites; with ?wait=<etag> (quoted or not) it holds up to timeout until the table's
// ETag differs from it.
func (t *siteTable) serveList(timeout time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if q := r.URL.Query(); q.Has("wait") {
			have := strings.Trim(q.Get("wait"), `"`)
			holdUntil(r.Context(), timeout, func() (bool, <-chan struct{}) {
				_, etag, ch := t.list()
				return etag != have, ch
			})
			if r.Context().Err() != nil {
				return
			}
		}
		body, etag, _ := t.list()
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("ETag", `"`+etag+`"`)
		_, _ = w.Write(body)
	}
}

// serveOne answers GET /sites/{id}/revision: the site's entry (404 when it is not in the index); with
// ?wait=<bundle> it holds up to timeout until the site's bundle differs.
func (t *siteTable) serveOne(timeout time.Duration) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := r.PathValue("id")
		if q := r.URL.Query(); q.Has("wait") {
			have := q.Get("wait")
			holdUntil(r.Context(), timeout, func() (bool, <-chan struct{}) {
				e, ok, ch := t.get(id)
				return !ok || e.Bundle != have, ch
			})
			if r.Context().Err() != nil {
				return
			}
		}
		e, ok, _ := t.get(id)
		if !ok {
			http.Error(w, "no such site in the index", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-store")
		_ = json.NewEncoder(w).Encode(e)
	}
}

// workQueue is the bounded concurrency of a pool process: ids wait in order, each at most once, and n workers take
// them. Memory is one entry per waiting site, whatever the number of sites; work is never more than n at once.
type workQueue struct {
	mu     sync.Mutex
	ids    []string
	queued map[string]bool
	wake   chan struct{}
}

func newWorkQueue() *workQueue {
	return &workQueue{queued: map[string]bool{}, wake: make(chan struct{}, 1)}
}

// add queues id unless it is waiting already.
func (q *workQueue) add(id string) {
	q.mu.Lock()
	if !q.queued[id] {
		q.queued[id] = true
		q.ids = append(q.ids, id)
	}
	q.mu.Unlock()
	q.signal()
}

func (q *workQueue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *workQueue) has(id string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.queued[id]
}

func (q *workQueue) len() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ids)
}

func (q *workQueue) pop() (string, bool) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ids) == 0 {
		return "", false
	}
	id := q.ids[0]
	q.ids[0] = ""
	q.ids = q.ids[1:]
	delete(q.queued, id)
	if len(q.ids) > 0 {
		q.signal() // another worker may take the next
	}
	return id, true
}

// run starts n workers calling do for each id taken, until ctx ends.
func (q *workQueue) run(ctx context.Context, n int, do func(ctx context.Context, id string)) {
	for range n {
		go func() {
			for ctx.Err() == nil {
				id, ok := q.pop()
				if !ok {
					select {
					case <-q.wake:
					case <-ctx.Done():
					}
					continue
				}
				do(ctx, id)
			}
		}()
	}
}
