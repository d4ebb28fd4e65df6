package contentagent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/metadata"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

// PoolFetcher is `content-agent pool-fetch`: one process per pool that keeps a checked bundle for every site of
// the pool's index (docs/design/pools.md). Git sites (public repositories) are polled at their interval, with
// jitter, at most Concurrency fetches at once; ConfigMap sites are built from their mirrors in Namespace when a
// mirror changes (a metadata watch: the mirrors' data is read only while a site is built, never cached). Each site
// has Dir/<id>/trees (a gitsource.Store) and Dir/<id>/bundles (its current and previous bundle, and state.json);
// a site leaving the index loses both. A failure keeps the last good bundle and is reported in GET /sites.
type PoolFetcher struct {
	Index *IndexDir
	Dir   string
	// Namespace holds the ConfigMap sites' mirrors; Kube reads them (nil: ConfigMap sites fail), Metadata
	// watches them (nil: not watched; a site is built when the index changes it or Trigger is called).
	Namespace string
	Kube      *ConfigMapReader
	Metadata  metadata.Interface
	// CheckServer is the server binary whose --check each new tree must pass ("" for none); CheckTimeout bounds it.
	CheckServer  string
	CheckTimeout time.Duration
	// Concurrency bounds the sites fetched or built at once (4 when 0).
	Concurrency int
	// WaitTimeout bounds the long polls of /sites and /sites/<id>/revision (30 s when 0).
	WaitTimeout time.Duration
	// IndexEvery is how often the index directory is checked for a change (2 s when 0); Tick how often the
	// sites due for a poll are queued (1 s when 0).
	IndexEvery, Tick time.Duration
	// MinInterval is the shortest poll interval a site may ask for (10 s when 0; a negative value: none).
	MinInterval time.Duration
	Log         *slog.Logger
	// OnAttempt, when set, is called after each site's attempt with what the site then publishes.
	OnAttempt func(PoolSite)

	mu      sync.Mutex
	sites   map[string]*fetchSite
	mirrors map[string][]string // mirror ConfigMap name → ids of the sites built from it
	owners  map[string][]string // bundle digest → ids of the sites whose current or previous bundle it is
	cleaned bool                // directories of sites not in the first index read were removed
	queue   *workQueue
	table   *siteTable
	metrics *poolMetrics
}

// fetchSite is the fetcher's state of one site. Its content is on disk; only these few fields are in memory.
type fetchSite struct {
	def poolindex.Site
	// key is what the Store depends on (source, limits): a change starts the site's trees afresh.
	key     string
	due     time.Time // next poll of a Git site; zero: none planned
	running bool
	// gone: the site left the index while its attempt ran; the attempt's end removes it. reset: the key changed.
	// again: something changed while the attempt ran; it runs once more.
	gone, reset, again bool
	pub                PoolSite
	bundles            []string // the current and the previous bundle, newest first
}

// poolState is Dir/<id>/bundles/state.json: what a restarted fetcher serves at once.
type poolState struct {
	Commit string `json:"commit"`
	Bundle string `json:"bundle"`
	Size   int64  `json:"size"`
	// Key is the site's siteKey when the bundle was made: a source changed while the fetcher was down is
	// fetched at once, not at the end of a spread-out first interval.
	Key string `json:"key"`
}

// Init prepares the fetcher; call it once before Run and Handler.
func (p *PoolFetcher) Init() error {
	if p.Log == nil {
		p.Log = slog.Default()
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
	if p.Tick <= 0 {
		p.Tick = time.Second
	}
	if p.MinInterval == 0 {
		p.MinInterval = 10 * time.Second
	}
	if p.CheckTimeout <= 0 {
		p.CheckTimeout = 2 * time.Minute
	}
	if p.Index.Log == nil {
		p.Index.Log = p.Log
	}
	p.sites = map[string]*fetchSite{}
	p.mirrors = map[string][]string{}
	p.owners = map[string][]string{}
	p.queue = newWorkQueue()
	p.table = newSiteTable()
	p.metrics = newPoolMetrics("fetch", p.table, p.queue.len, func() int { return len(p.Index.Refused()) })
	return os.MkdirAll(p.Dir, 0o755)
}

// Run follows the index, the sites' sources and the mirrors until ctx ends.
func (p *PoolFetcher) Run(ctx context.Context) {
	p.queue.run(ctx, p.Concurrency, p.attempt)
	if p.Metadata != nil {
		go p.watchMirrors(ctx)
	}
	go p.Index.Watch(ctx, p.IndexEvery, p.reconcile)
	t := time.NewTicker(p.Tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			p.schedule(now)
		}
	}
}

// Sites returns what GET /sites answers now.
func (p *PoolFetcher) Sites() PoolSites {
	body, _, _ := p.table.list()
	var s PoolSites
	_ = json.Unmarshal(body, &s)
	return s
}

// Trigger queues an attempt of site id now (a Git site's fetch, a ConfigMap site's build).
func (p *PoolFetcher) Trigger(id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if s, ok := p.sites[id]; ok && !s.gone {
		p.queueLocked(id, s)
	}
}

func (p *PoolFetcher) queueLocked(id string, s *fetchSite) {
	if s.running {
		s.again = true
		return
	}
	p.queue.add(id)
}

// siteKey is what a site's trees depend on: a change of source or limits starts its Store afresh (its bundles
// stay, and are served until the new source gives one).
func siteKey(def poolindex.Site) string {
	data, _ := json.Marshal(struct {
		L poolindex.Limits
		C poolindex.Content
	}{def.Limits, def.Content})
	return string(data)
}

// interval is a Git site's poll interval: its own, at least MinInterval, 1 min when it does not parse.
func (p *PoolFetcher) interval(def poolindex.Site) time.Duration {
	d := time.Minute
	if g := def.Content.Git; g != nil {
		if v, err := time.ParseDuration(g.Interval); err == nil && v > 0 {
			d = v
		}
	}
	return max(d, p.MinInterval)
}

// jitter spreads d by ±10 %, so sites added together do not poll together forever.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*0.2-0.1)*float64(d))
}

// reconcile applies the index: new sites are restored from disk or queued, changed ones start afresh, departed
// ones are deleted (their trees and bundles).
func (p *PoolFetcher) reconcile() {
	sites := p.Index.Sites()
	now := time.Now()
	var remove []string
	p.mu.Lock()
	mirrors := map[string][]string{}
	for id, def := range sites {
		dir, err := siteDir(p.Dir, id)
		if err != nil {
			p.Log.Error("site refused", "error", err)
			continue
		}
		for _, c := range def.Content.ConfigMaps {
			mirrors[c.Name] = append(mirrors[c.Name], id)
		}
		s, ok := p.sites[id]
		if !ok {
			s = &fetchSite{def: def, key: siteKey(def), pub: PoolSite{ID: id}}
			sameSource := p.restoreLocked(id, s, dir)
			p.sites[id] = s
			if sameSource && def.Content.Git != nil {
				// Served already (a restart): polls are spread over one interval rather than all at once.
				s.due = now.Add(time.Duration(rand.Float64() * float64(p.interval(def))))
			} else {
				p.queueLocked(id, s)
			}
			p.table.set(s.pub)
			continue
		}
		if s.gone { // back before its departing attempt ended: its bundles are served again
			s.gone = false
			for _, d := range s.bundles {
				p.owners[d] = append(p.owners[d], id)
			}
		}
		s.def = def
		if key := siteKey(def); key != s.key {
			s.key, s.reset = key, true
			p.queueLocked(id, s)
		}
		p.table.set(s.pub)
	}
	p.mirrors = mirrors
	for id, s := range p.sites {
		if _, ok := sites[id]; ok {
			continue
		}
		p.table.remove(id)
		p.dropOwnersLocked(id, s.bundles...)
		if s.running {
			s.gone = true
			continue
		}
		delete(p.sites, id)
		remove = append(remove, id)
	}
	if !p.cleaned {
		p.cleaned = true
		if entries, err := os.ReadDir(p.Dir); err == nil {
			for _, e := range entries {
				if _, ok := sites[e.Name()]; !ok && !strings.HasPrefix(e.Name(), ".") {
					remove = append(remove, e.Name())
				}
			}
		}
	}
	p.mu.Unlock()
	p.removeSites(remove)
}

// removeSites deletes the directories of sites that left the index.
func (p *PoolFetcher) removeSites(ids []string) {
	for _, id := range ids {
		dir, err := siteDir(p.Dir, id)
		if err != nil {
			continue
		}
		if err := os.RemoveAll(dir); err != nil {
			p.Log.Warn("removing a departed site", "site", id, "error", err)
		} else {
			p.Log.Info("site left the index; its trees and bundles are removed", "site", id)
		}
	}
}

// restoreLocked serves the bundle a previous run published, when its file is still there, and says whether it
// was made from the site's present source and limits.
func (p *PoolFetcher) restoreLocked(id string, s *fetchSite, dir string) bool {
	data, err := os.ReadFile(filepath.Join(dir, "bundles", stateFile))
	if err != nil {
		return false
	}
	var st poolState
	if json.Unmarshal(data, &st) != nil || !validDigest(st.Bundle) || !exists(bundleFile(filepath.Join(dir, "bundles"), st.Bundle)) {
		return false
	}
	s.pub = PoolSite{ID: id, Commit: st.Commit, Bundle: st.Bundle, Size: st.Size}
	s.bundles = []string{st.Bundle}
	p.owners[st.Bundle] = append(p.owners[st.Bundle], id)
	if st.Key != s.key {
		s.reset = true
		return false
	}
	return true
}

func (p *PoolFetcher) dropOwnersLocked(id string, digests ...string) {
	for _, d := range digests {
		ids := slices.DeleteFunc(p.owners[d], func(x string) bool { return x == id })
		if len(ids) == 0 {
			delete(p.owners, d)
		} else {
			p.owners[d] = ids
		}
	}
}

// schedule queues the Git sites whose poll is due.
func (p *PoolFetcher) schedule(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for id, s := range p.sites {
		if !s.running && !s.gone && !s.due.IsZero() && !now.Before(s.due) && !p.queue.has(id) {
			s.due = time.Time{}
			p.queue.add(id)
		}
	}
}

// mirrorChanged queues the sites built from mirror `name`.
func (p *PoolFetcher) mirrorChanged(name string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, id := range p.mirrors[name] {
		if s, ok := p.sites[id]; ok && !s.gone {
			p.queueLocked(id, s)
		}
	}
}

// job is what one attempt needs, copied out of the site's state so the attempt runs without the lock.
type job struct {
	id    string
	dir   string
	def   poolindex.Site
	reset bool
	cur   PoolSite
}

// outcome is an attempt's result: a new bundle (changed), the same (unchanged), or err.
type outcome struct {
	commit, bundle string
	size           int64
	changed        bool
	err            error
}

// attempt fetches or builds one site (a worker of the queue).
func (p *PoolFetcher) attempt(ctx context.Context, id string) {
	p.mu.Lock()
	s, ok := p.sites[id]
	if !ok || s.gone || s.running {
		p.mu.Unlock()
		return
	}
	dir, err := siteDir(p.Dir, id)
	if err != nil {
		p.mu.Unlock()
		return
	}
	j := job{id: id, dir: dir, def: s.def, reset: s.reset, cur: s.pub}
	s.running, s.reset, s.again = true, false, false
	p.mu.Unlock()

	kind := "git"
	p.metrics.inFlight.Inc()
	start := time.Now()
	var out outcome
	if j.def.Content.Git != nil {
		out = p.fetchGit(ctx, j)
	} else {
		kind = "configmap"
		out = p.buildConfigMaps(ctx, j)
	}
	p.metrics.duration.Observe(time.Since(start).Seconds())
	p.metrics.inFlight.Dec()
	result := "unchanged"
	switch {
	case out.err != nil:
		result = reasonOf(out.err)
	case out.changed:
		result = "changed"
	}
	p.metrics.attempts.WithLabelValues(kind, result).Inc()

	p.mu.Lock()
	s.running = false
	if s.gone {
		delete(p.sites, id)
		p.mu.Unlock()
		p.removeSites([]string{id})
		return
	}
	if out.err == nil {
		s.pub.Error = ""
		if out.changed || s.pub.Commit != out.commit {
			previous := s.bundles
			s.bundles = []string{out.bundle}
			if len(previous) > 0 && previous[0] != out.bundle {
				s.bundles = append(s.bundles, previous[0])
			}
			p.dropOwnersLocked(id, previous...)
			for _, d := range s.bundles {
				p.owners[d] = append(p.owners[d], id)
			}
			s.pub.Commit, s.pub.Bundle, s.pub.Size = out.commit, out.bundle, out.size
		}
	} else {
		s.pub.Error = result + ": " + out.err.Error()
	}
	switch {
	case j.def.Content.Git != nil:
		s.due = time.Now().Add(jitter(p.interval(s.def)))
	case out.err != nil:
		s.due = time.Now().Add(jitter(time.Minute)) // a missing mirror may be created without an event we see
	}
	pub := s.pub
	p.table.set(pub)
	if s.again || s.reset {
		p.queue.add(id)
	}
	p.mu.Unlock()
	if out.err != nil {
		p.Log.Warn("site attempt failed; its last good bundle is still served", "site", id, "error", out.err,
			"bundle", pub.Bundle)
	} else if out.changed {
		p.Log.Info("site published", "site", id, "commit", pub.Commit, "bundle", pub.Bundle)
	}
	if p.OnAttempt != nil {
		p.OnAttempt(pub)
	}
}

// reasonOf is an error's gitsource reason, "Error" for any other.
func reasonOf(err error) string {
	if r := gitsource.ReasonOf(err); r != "" {
		return string(r)
	}
	return "Error"
}

// limits are a pool site's tree limits as gitsource applies them: maxBytes, maxFiles as the most entries.
func limits(def poolindex.Site) gitsource.Limits {
	return gitsource.Source{MaxBytes: def.Limits.MaxBytes, MaxEntries: int(min(def.Limits.MaxFiles, 1<<31-1))}.Limits()
}

// store is the site's Store of trees, with the server's check under the site's limits.
func (p *PoolFetcher) store(j job) (*gitsource.Store, error) {
	trees := filepath.Join(j.dir, "trees")
	if j.reset {
		if err := os.RemoveAll(trees); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Join(j.dir, "bundles"), 0o755); err != nil {
		return nil, err
	}
	st := &gitsource.Store{Dir: trees}
	if p.CheckServer != "" {
		lim := limits(j.def)
		st.Check = ServerCheck(p.CheckServer, p.CheckTimeout, lim.MaxEntries, lim.MaxDepth)
	}
	return st, nil
}

// publish bundles the tree of commit and records it; the bundles kept are this one and the one it replaces.
func (p *PoolFetcher) publish(j job, tree, commit string) outcome {
	bundles := filepath.Join(j.dir, "bundles")
	digest, size, err := writeBundleFile(bundles, tree)
	if err != nil {
		return outcome{err: fmt.Errorf("writing the bundle of %s: %w", commit, err)}
	}
	if err := writeJSON(filepath.Join(bundles, stateFile), poolState{Commit: commit, Bundle: digest, Size: size, Key: siteKey(j.def)}); err != nil {
		return outcome{err: err}
	}
	pruneBundleFiles(bundles, p.Log, digest, j.cur.Bundle)
	return outcome{commit: commit, bundle: digest, size: size, changed: digest != j.cur.Bundle}
}

// fetchGit syncs a Git site's Store and bundles a new commit.
func (p *PoolFetcher) fetchGit(ctx context.Context, j job) outcome {
	st, err := p.store(j)
	if err != nil {
		return outcome{err: err}
	}
	g, lim := j.def.Content.Git, limits(j.def)
	src := gitsource.Source{URL: g.URL, Ref: g.Ref, Path: g.Path, MaxBytes: lim.MaxBytes, MaxEntries: lim.MaxEntries}
	rev, changed, err := st.Sync(ctx, src)
	if err != nil {
		return outcome{err: err}
	}
	if !changed && rev.Commit == j.cur.Commit && j.cur.Bundle != "" {
		return outcome{commit: j.cur.Commit, bundle: j.cur.Bundle, size: j.cur.Size}
	}
	return p.publish(j, filepath.Join(st.Dir, rev.Commit), rev.Commit)
}
