package contentagent

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// ReadyDir is the directory, in the pool puller's Dir, where it signals the server: .ready/<id> is created (a
// file written then renamed into place) after each flip of <id>/current and after a site's tree is removed.
const ReadyDir = ".ready"

// maxSitesBytes bounds the fetcher's /sites answer: about 250 bytes per site, 30,000 sites and room.
const maxSitesBytes = 64 << 20

// PoolPuller is `content-agent pool-pull`, the native sidecar of every pool server pod (docs/design/pools.md,
// "The content directory"). For every site of the index, and only those, it keeps Dir/<id>/current on the
// fetcher's bundle of the site: Dir/<id>/<first 16 hex digits of the bundle's SHA-256>, extracted under the site's
// limits with the digest checked over every byte (the dedicated puller's verified install, installBundle), the
// previous tree kept until the flip is done and older ones removed; then it signals Dir/.ready/<id>. A site that
// leaves the index loses its trees and is signalled too. It learns of new bundles with one long poll of the
// fetcher's GET /sites for all its sites, and installs at most Concurrency bundles at once.
type PoolPuller struct {
	Index *IndexDir
	Dir   string
	// FetcherURL is the pool fetcher's base URL (http://POOL-fetcher.NS.svc:8080).
	FetcherURL string
	// Client does the requests; its Timeout must exceed the fetcher's long poll (30 s).
	Client *http.Client
	// Concurrency bounds the bundles installed at once (4 when 0).
	Concurrency int
	// WaitTimeout bounds the long poll of this process's own /sites (30 s when 0).
	WaitTimeout time.Duration
	// IndexEvery is how often the index directory is checked for a change (2 s when 0).
	IndexEvery time.Duration
	// PollGap is the least time from one GET /sites to the next (250 ms when 0).
	PollGap time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failure (of the poll; of a site's install), doubled on
	// each failure in a row.
	MinBackoff, MaxBackoff time.Duration
	Log                    *slog.Logger

	mu      sync.Mutex
	state   map[string]*pullSite
	fetched map[string]PoolSite // the fetcher's last /sites, by id
	polled  bool                // fetched holds an answer
	ready   atomic.Bool         // Ready was true once
	kick    chan struct{}
	queue   *workQueue
	table   *siteTable
	metrics *poolMetrics
}

// pullSite is what this pod has of one site.
type pullSite struct {
	name    string // the tree current names ("" for none)
	pub     PoolSite
	running bool
	// failedBundle failed to install; it is tried again at retryAt, the wait doubling from MinBackoff.
	failedBundle string
	retryAt      time.Time
	backoff      time.Duration
}

// Init prepares the puller: the trees found under Dir (a restarted container) are its starting point.
func (p *PoolPuller) Init() error {
	if p.Log == nil {
		p.Log = slog.Default()
	}
	if p.Client == nil {
		p.Client = &http.Client{Timeout: 10 * time.Minute}
	}
	if p.Concurrency <= 0 {
		p.Concurrency = 4
	}
	if p.WaitTimeout <= 0 {
		p.WaitTimeout = 30 * time.Second
	}
	if p.IndexEvery <= 0 {
		p.IndexEvery = 2 * time.Second
	}
	if p.PollGap <= 0 {
		p.PollGap = 250 * time.Millisecond
	}
	if p.MinBackoff <= 0 {
		p.MinBackoff = time.Second
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = max(30*time.Second, p.MinBackoff)
	}
	if p.Index.Log == nil {
		p.Index.Log = p.Log
	}
	p.FetcherURL = strings.TrimSuffix(p.FetcherURL, "/")
	p.state = map[string]*pullSite{}
	p.kick = make(chan struct{}, 1)
	p.queue = newWorkQueue()
	p.table = newSiteTable()
	p.metrics = newPoolMetrics("pull", p.table, p.queue.len, func() int { return len(p.Index.Refused()) })
	if err := os.MkdirAll(filepath.Join(p.Dir, ReadyDir), 0o755); err != nil {
		return err
	}
	entries, err := os.ReadDir(p.Dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		dir, err := siteDir(p.Dir, e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		cur, _ := (&gitsource.Store{Dir: dir}).Current()
		p.state[e.Name()] = &pullSite{name: cur, pub: PoolSite{ID: e.Name()}}
	}
	return nil
}

// Sites returns what this pod has installed (GET /sites).
func (p *PoolPuller) Sites() PoolSites {
	body, _, _ := p.table.list()
	var s PoolSites
	_ = json.Unmarshal(body, &s)
	return s
}

// Run follows the index and the fetcher until ctx ends.
func (p *PoolPuller) Run(ctx context.Context) {
	p.queue.run(ctx, p.Concurrency, p.install)
	go p.Index.Watch(ctx, p.IndexEvery, p.wake)
	go p.poll(ctx)
	retry := time.NewTimer(time.Hour)
	defer retry.Stop()
	for {
		next := p.reconcile()
		retry.Reset(time.Hour)
		if !next.IsZero() {
			retry.Reset(max(time.Until(next), time.Millisecond))
		}
		select {
		case <-ctx.Done():
			return
		case <-p.kick:
		case <-retry.C:
		}
	}
}

func (p *PoolPuller) wake() {
	select {
	case p.kick <- struct{}{}:
	default:
	}
}

// poll long-polls the fetcher's /sites with the ETag of its last answer, for ever.
func (p *PoolPuller) poll(ctx context.Context) {
	etag := ""
	backoff := p.MinBackoff
	for ctx.Err() == nil {
		asked := time.Now()
		sites, tag, err := p.fetchSites(ctx, etag)
		if ctx.Err() != nil {
			return
		}
		if err != nil {
			p.Log.Warn("reading the fetcher's sites; the installed trees are unchanged", "error", err, "retry_in", backoff)
			p.metrics.attempts.WithLabelValues("sites", "Error").Inc()
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(2*backoff, p.MaxBackoff)
			etag = ""
			continue
		}
		if tag == etag && time.Since(asked) < p.MinBackoff {
			// The same answer at once (or no ETag at all): a fetcher that does not hold the poll. Not a loop as
			// fast as it answers.
			select {
			case <-time.After(backoff):
			case <-ctx.Done():
				return
			}
			backoff = min(2*backoff, p.MaxBackoff)
		} else {
			backoff = p.MinBackoff
		}
		etag = tag
		byID := make(map[string]PoolSite, len(sites.Sites))
		for _, s := range sites.Sites {
			byID[s.ID] = s
		}
		p.mu.Lock()
		p.fetched, p.polled = byID, true
		p.mu.Unlock()
		p.wake()
		// While the fetcher publishes site after site (a new pool, a restart), every pod's poll would come back
		// at each one, and the whole list with it: at most one poll per PollGap takes them in batches.
		select {
		case <-time.After(p.PollGap - time.Since(asked)):
		case <-ctx.Done():
			return
		}
	}
}

// fetchSites is GET /sites?wait=<etag> (no wait without an ETag: the first answer comes at once).
func (p *PoolPuller) fetchSites(ctx context.Context, etag string) (PoolSites, string, error) {
	u := p.FetcherURL + "/sites"
	if etag != "" {
		u += "?" + url.Values{"wait": {etag}}.Encode()
	}
	var out PoolSites
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return out, "", err
	}
	resp, err := p.Client.Do(req)
	if err != nil {
		return out, "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return out, "", fmt.Errorf("GET %s: %w %s", u, errStatus, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxSitesBytes+1))
	if err != nil {
		return out, "", fmt.Errorf("reading the fetcher's sites: %w", err)
	}
	if len(data) > maxSitesBytes {
		return out, "", fmt.Errorf("the fetcher's sites are over %d bytes", maxSitesBytes)
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return out, "", fmt.Errorf("the fetcher's sites: %w", err)
	}
	for _, s := range out.Sites {
		if s.Bundle != "" && !validDigest(s.Bundle) {
			return out, "", fmt.Errorf("the fetcher's sites name the digest %q for %q", s.Bundle, s.ID)
		}
	}
	return out, strings.Trim(resp.Header.Get("ETag"), `"`), nil
}

// treeName is the name of a bundle's tree under Dir/<id>: the first 16 hex digits of its digest.
func treeName(bundle string) string { return bundle[:16] }

// reconcile compares the index, the fetcher's answer and what is installed: it queues the installs, removes the
// departed sites and publishes this pod's /sites. It returns the next retry time of a failed install (zero: none).
func (p *PoolPuller) reconcile() time.Time {
	if !p.Index.Loaded() {
		return time.Time{}
	}
	sites := p.Index.Sites()
	now := time.Now()
	var next time.Time
	var remove []string
	p.mu.Lock()
	for id := range sites {
		if _, err := siteDir(p.Dir, id); err != nil {
			continue
		}
		st, ok := p.state[id]
		if !ok {
			st = &pullSite{pub: PoolSite{ID: id}}
			p.state[id] = st
		}
		f, known := p.fetched[id]
		if known && f.Bundle != "" && !st.running {
			switch {
			case treeName(f.Bundle) == st.name:
				if st.pub.Bundle != f.Bundle { // found installed at start: now known by its bundle
					st.pub = PoolSite{ID: id, Commit: f.Commit, Bundle: f.Bundle, Size: f.Size}
				}
			case st.failedBundle == f.Bundle && now.Before(st.retryAt):
				if next.IsZero() || st.retryAt.Before(next) {
					next = st.retryAt
				}
			default:
				p.queue.add(id)
			}
		}
		p.table.set(p.entryLocked(id, st, f, known))
	}
	for id, st := range p.state {
		if _, ok := sites[id]; ok || st.running {
			continue
		}
		delete(p.state, id)
		p.table.remove(id)
		remove = append(remove, id)
	}
	p.mu.Unlock()
	for _, id := range remove {
		p.removeSite(id)
	}
	return next
}

// entryLocked is site id's entry in this pod's /sites: what it has installed, and its own failure or, while it
// has no tree, the fetcher's.
func (p *PoolPuller) entryLocked(id string, st *pullSite, f PoolSite, known bool) PoolSite {
	e := st.pub
	e.ID = id
	if e.Error == "" && st.name == "" && known && f.Bundle == "" && f.Error != "" {
		e.Error = "fetcher: " + f.Error
	}
	return e
}

// install downloads and installs the fetcher's bundle of site id (a worker of the queue).
func (p *PoolPuller) install(ctx context.Context, id string) {
	sites := p.Index.Sites()
	def, inIndex := sites[id]
	p.mu.Lock()
	st, ok := p.state[id]
	f := p.fetched[id]
	if !ok || !inIndex || st.running || f.Bundle == "" || treeName(f.Bundle) == st.name {
		p.mu.Unlock()
		return
	}
	st.running = true
	p.mu.Unlock()

	dir, err := siteDir(p.Dir, id)
	p.metrics.inFlight.Inc()
	start := time.Now()
	if err == nil {
		err = installBundle(ctx, p.Client, &gitsource.Store{Dir: dir}, treeName(f.Bundle),
			p.FetcherURL+"/bundles/"+f.Bundle, f.Bundle, limits(def), nil)
	}
	if err == nil {
		err = p.signal(id)
	}
	p.metrics.duration.Observe(time.Since(start).Seconds())
	p.metrics.inFlight.Dec()
	result := "changed"
	if err != nil {
		result = reasonOf(err)
	}
	p.metrics.attempts.WithLabelValues("bundle", result).Inc()

	p.mu.Lock()
	st.running = false
	if err == nil {
		st.name = treeName(f.Bundle)
		st.pub = PoolSite{ID: id, Commit: f.Commit, Bundle: f.Bundle, Size: f.Size}
		st.failedBundle, st.backoff = "", 0
	} else if ctx.Err() == nil {
		st.backoff = min(max(2*st.backoff, p.MinBackoff), p.MaxBackoff)
		st.failedBundle, st.retryAt = f.Bundle, time.Now().Add(st.backoff)
		st.pub.Error = result + ": " + err.Error()
	}
	p.mu.Unlock()
	if err != nil {
		p.Log.Warn("installing a site's bundle failed; its tree is unchanged", "site", id, "bundle", f.Bundle, "error", err)
	} else {
		p.Log.Info("site installed", "site", id, "commit", f.Commit, "bundle", f.Bundle)
	}
	p.wake()
}

// removeSite removes a departed site's trees and signals the server.
func (p *PoolPuller) removeSite(id string) {
	dir, err := siteDir(p.Dir, id)
	if err != nil {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		p.Log.Warn("removing a departed site", "site", id, "error", err)
		return
	}
	if err := p.signal(id); err != nil {
		p.Log.Warn("signalling the server", "site", id, "error", err)
	}
	p.Log.Info("site left the index; its trees are removed", "site", id)
}

// signal creates Dir/.ready/<id> (signalReady).
func (p *PoolPuller) signal(id string) error { return signalReady(p.Dir, id) }

// signalReady creates dir/.ready/<id>: a file written under a temporary name in the same directory, then renamed,
// so the server's one watch of that directory sees the whole name appear. The pool puller and a previews site's
// puller (previewlayout.go) signal the server so.
func signalReady(dir, id string) error {
	ready := filepath.Join(dir, ReadyDir)
	target, err := siteDir(ready, id)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(ready, ".tmp-")
	if err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := os.Rename(tmp.Name(), target); err != nil {
		_ = os.Remove(tmp.Name())
		return err
	}
	return nil
}

// Ready is /healthz's answer, the sidecar's startup and readiness probe and so a part of the pod's readiness:
// true once every site of the index has a tree here or a reported failure (its own, or the fetcher's for a site
// with no bundle), and from then on for the life of the process. A new pod joins the pool's slices only with every
// tree it must serve; a running one stays in them while a site added later is pulled: the pod's readiness is
// every pool site's, so a new site still being pulled (for as long as its first fetch takes) must not take the
// whole pool out of every site's slice. Whether a pod serves that site yet is the pool controller's to read from
// /sites, per site.
func (p *PoolPuller) Ready() bool {
	if p.ready.Load() {
		return true
	}
	if !p.Index.Loaded() {
		return false
	}
	sites := p.Index.Sites()
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.polled {
		return false
	}
	for id := range sites {
		st, ok := p.state[id]
		f, known := p.fetched[id]
		switch {
		case ok && (st.name != "" || st.pub.Error != ""):
		case known && f.Bundle == "" && f.Error != "":
		default:
			return false
		}
	}
	p.ready.Store(true)
	return true
}

// Handler serves the pool puller's port: GET /sites (what this pod has installed; ?wait=<etag> as the
// fetcher's), GET /healthz (Ready), GET /metrics.
func (p *PoolPuller) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /sites", p.table.serveList(p.WaitTimeout))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if !p.Ready() {
			http.Error(w, "not every site of the index has a tree or a reported failure", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", p.metrics.handler())
	return mux
}
