package contentagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// maxRevisionBytes bounds a /revision answer: a few hundred bytes of JSON plus an error message, the history, and
// up to previews.MaxMax previews with theirs (previews.go).
const maxRevisionBytes = 256 << 10

// A bundle longer than MaxBytes + tarOverhead + MaxEntries × entryTarOverhead is refused unread: beyond its
// files' bytes it holds, per entry, a 512-byte header, PAX records for a long name (a header and its blocks) and
// the padding of a file to 512 bytes; tarOverhead covers the end blocks and leaves room.
const (
	tarOverhead      = 64 << 20
	entryTarOverhead = 4 << 10
)

// Puller keeps Store.Served() on the fetcher's newest bundle: it long-polls FetcherURL/revision, downloads a
// new bundle, checks its SHA-256 while extracting it (gitsource.ExtractBundle) and flips Dir/current with
// Store.Install. Any failure keeps the tree served and retries with backoff. Before each flip it writes
// Dir/deploys.json, the kept trees for the server's skew protection (deploysfile.go).
type Puller struct {
	// FetcherURL is the fetcher's base URL (http://site-git.ns.svc:8080).
	FetcherURL string
	// Store's Dir is shared with the server, whose root is Store.Served(). No Check: the fetcher checked.
	Store *gitsource.Store
	// MaxBytes, MaxEntries and MaxDepth bound one bundle's tree as the fetcher's limits bound the tree it wrote
	// (gitsource.Limits); 0 means the gitsource defaults.
	MaxBytes   int64
	MaxEntries int
	MaxDepth   int
	// Client does the requests; its Timeout must exceed the fetcher's long-poll timeout (nil: a client with
	// no overall timeout, the requests are bounded by ctx and the fetcher's wait).
	Client *http.Client
	// MinBackoff and MaxBackoff bound the wait after a failure, doubled on each failure in a row.
	MinBackoff, MaxBackoff time.Duration
	Log                    *slog.Logger
	// After is the clock of the backoff and of the reload wait (time.After when nil).
	After func(time.Duration) <-chan time.Time
	// ServerAdmin is the server's admin base URL (http://127.0.0.1:9090). When set, the puller publishes at most
	// one tree per server reload: after a flip it waits until the server's hyperstatic_reloads_total (all
	// results) exceeds its value read just before the flip, or ReloadWait passes, before it flips again; and the
	// trees older than the replaced one are removed only then (Init sets Store.KeepOlder), since the server
	// still reads the replaced tree, and may read the one before it, until it has reloaded. Empty: each bundle
	// is flipped in as soon as it is installed.
	ServerAdmin string
	// ReloadWait bounds that wait (5 s when 0).
	ReloadWait time.Duration

	// Sites, when set, makes the puller lay out the server's --sites mode: production and the fetcher's previews
	// (previewlayout.go). The Store's Dir must then be Sites.ContentDir()/ProductionID.
	Sites *SitesLayout

	board   *board
	metrics *metrics
	// served are the previews installed, previewsHave the tag of the fetcher's list they follow (Run's goroutine).
	served       map[string]*servedPreview
	previewsHave string
	// accessNamed are the access files the index written last names (accessfiles.go): kept through the next
	// render, so a server still reading the shard before it finds its files.
	accessNamed []string
	// history is the commits of the fetcher's last deploys (at most MaxHistory): their trees are kept (the
	// Store's Retain), so a pin flips to one on disk. Only Run's goroutine uses it.
	history []string
}

// Init prepares the puller: what the Store serves already (a restarted container) is its starting point.
func (p *Puller) Init() error {
	if p.Client == nil {
		p.Client = &http.Client{}
	}
	lim := gitsource.Source{MaxBytes: p.MaxBytes, MaxEntries: p.MaxEntries, MaxDepth: p.MaxDepth}.Limits()
	p.MaxBytes, p.MaxEntries, p.MaxDepth = lim.MaxBytes, lim.MaxEntries, lim.MaxDepth
	if p.MinBackoff <= 0 {
		p.MinBackoff = time.Second
	}
	if p.MaxBackoff < p.MinBackoff {
		p.MaxBackoff = max(30*time.Second, p.MinBackoff)
	}
	if p.Log == nil {
		p.Log = slog.Default()
	}
	if p.After == nil {
		p.After = time.After
	}
	if p.ReloadWait <= 0 {
		p.ReloadWait = 5 * time.Second
	}
	if p.ServerAdmin != "" {
		p.ServerAdmin = strings.TrimSuffix(p.ServerAdmin, "/")
		p.Store.KeepOlder = true
	}
	p.Store.Retain = func() []string { return p.history }
	p.metrics = newMetrics("pull")
	cur, err := p.Store.Current()
	if err != nil {
		return err
	}
	if p.Sites != nil {
		if err := p.initLayout(); err != nil {
			return err
		}
	}
	p.board = newBoard(Revision{Commit: cur, Previews: p.servedPreviewsOrNil()})
	if cur != "" {
		p.metrics.setRevision(cur)
	}
	return nil
}

// Revision returns what this pod serves and a channel closed at its next change.
func (p *Puller) Revision() (Revision, <-chan struct{}) { return p.board.get() }

// Run follows the fetcher until ctx ends.
func (p *Puller) Run(ctx context.Context) {
	backoff := p.MinBackoff
	for ctx.Err() == nil {
		have, _ := p.board.get()
		err := p.step(ctx, have)
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			backoff = p.MinBackoff
			if have.LastError != nil {
				p.board.update(func(r *Revision) { r.LastError = nil })
			}
			continue
		}
		reason := string(gitsource.ReasonOf(err))
		if reason == "" {
			reason = "Error"
		}
		p.metrics.attempts.WithLabelValues(reason).Inc()
		p.board.update(func(r *Revision) { r.LastError = &Failure{Reason: reason, Message: err.Error(), Time: time.Now()} })
		p.Log.Warn("pull failed; the served tree is unchanged", "error", err, "retry_in", backoff)
		select {
		case <-p.After(backoff):
		case <-ctx.Done():
			return
		}
		backoff = min(2*backoff, p.MaxBackoff)
	}
}

// step waits for a revision other than have (digest or commit) and installs it.
func (p *Puller) step(ctx context.Context, have Revision) error {
	rev, err := p.poll(ctx, have)
	if err != nil {
		return err
	}
	p.history = historyTrees(rev.Deploys)
	if p.Sites != nil {
		if err := p.followPreviews(ctx, rev); err != nil {
			return err
		}
	}
	if rev.Digest == have.Digest && rev.Commit == have.Commit {
		return nil // the long poll timed out, or only the previews changed
	}
	cur, err := p.Store.Current()
	if err != nil {
		return err
	}
	flip := cur != rev.Commit // the same commit (a restarted fetcher or puller) is not downloaded again
	var before reloadMark
	if flip {
		if before, err = p.install(ctx, rev); err != nil {
			return err
		}
	}
	p.board.update(func(r *Revision) {
		*r = Revision{Digest: rev.Digest, Size: rev.Size, Commit: rev.Commit, CommitTime: rev.CommitTime, Ref: rev.Ref,
			Previews: r.Previews}
	})
	p.metrics.setRevision(rev.Commit)
	p.metrics.bundleSize.Set(float64(rev.Size))
	p.metrics.lastOK.Set(float64(time.Now().UnixNano()) / 1e9)
	if flip && p.Sites != nil {
		if err := signalReady(p.Sites.ContentDir(), ProductionID); err != nil {
			p.Log.Warn("signalling the server", "error", err)
		}
	}
	if flip {
		p.metrics.attempts.WithLabelValues("changed").Inc()
		p.Log.Info("installed", "commit", rev.Commit, "digest", rev.Digest)
		p.afterFlip(ctx, cur, before)
	}
	return nil
}

// afterFlip holds the next flip until the server has reloaded (or the bound), then removes the trees older than
// the replaced one, prev. Without ServerAdmin the Store has pruned already.
func (p *Puller) afterFlip(ctx context.Context, prev string, before reloadMark) {
	if p.ServerAdmin == "" {
		return
	}
	if !p.waitForReload(ctx, before) {
		p.Log.Info("no server reload seen after the flip; going on after the bound", "bound", p.ReloadWait,
			"counter_read_before", before.known)
	}
	if ctx.Err() != nil {
		return
	}
	if err := p.Store.Prune(prev); err != nil {
		p.Log.Warn("removing old trees", "error", err)
	}
}

// poll is GET /revision?wait=<digest>&commit=<commit> of what the puller has.
func (p *Puller) poll(ctx context.Context, have Revision) (Revision, error) {
	q := url.Values{"wait": {have.Digest}, "commit": {have.Commit}}
	if p.Sites != nil {
		q.Set("previews", p.previewsHave)
	}
	u := p.FetcherURL + "/revision?" + q.Encode()
	var rev Revision
	data, err := p.getAll(ctx, u, maxRevisionBytes, "the fetcher's revision")
	if err != nil {
		return rev, err
	}
	if err := json.Unmarshal(data, &rev); err != nil {
		return rev, fmt.Errorf("the fetcher's revision: %w", err)
	}
	if rev.Digest != "" && !validDigest(rev.Digest) {
		return rev, fmt.Errorf("the fetcher's revision names the digest %q", rev.Digest)
	}
	return rev, nil
}

// install installs the revision's tree: from its file list, linking what the tree it replaces holds, or from the
// whole bundle (installTree). With ServerAdmin, it returns the server's reload
// count read once the tree is written, just before the Store flips current to it.
func (p *Puller) install(ctx context.Context, rev Revision) (reloadMark, error) {
	var before reloadMark
	replaced, _ := p.Store.Current()
	mark := func() {
		// The list of kept trees that goes with the new one, before the flip that makes the server reload.
		list := deploysList(p.Store.Dir, rev.Deploys, rev.Commit, replaced, time.Now())
		if err := writeDeploys(p.Store.Dir, list); err != nil {
			p.Log.Warn("writing the deploys list; the server keeps the one before (skew protection)", "error", err)
		}
		if p.ServerAdmin != "" {
			n, err := p.reloads(ctx)
			before = reloadMark{count: n, known: err == nil}
		}
	}
	// A deploy of the history whose tree is on disk (a rollback, or back from one): a flip, no download.
	if _, err := os.Lstat(filepath.Join(p.Store.Dir, rev.Commit)); err == nil {
		mark()
		if ok, err := p.Store.Activate(rev.Commit); ok || err != nil {
			if ok {
				p.Log.Info("activated a kept tree", "commit", rev.Commit)
			}
			return before, err
		}
	}
	err := p.installTree(ctx, p.Store, rev.Commit, rev.Digest, rev.Files, rev.Size, []*gitsource.Store{p.Store}, mark)
	return before, err
}

// historyTrees returns the tree names of a fetcher's deploys a puller keeps: valid names, at most MaxHistory.
func historyTrees(deploys []Deploy) []string {
	var out []string
	for _, d := range deploys {
		if len(out) == MaxHistory {
			break
		}
		if gitsource.TreeName(d.Commit) {
			out = append(out, d.Commit)
		}
	}
	return out
}

// bundleLimit is the longest bundle of a tree within lim that a puller downloads.
func bundleLimit(lim gitsource.Limits) int64 {
	return lim.MaxBytes + tarOverhead + int64(lim.MaxEntries)*entryTarOverhead
}

// installBundle is a pod's verified install, the dedicated puller's and the pool puller's: it downloads the
// bundle at url (its length bounded by bundleLimit) and installs it as the tree name of store; ExtractBundle
// holds it to lim and checks the digest over every byte, and the Store discards the tree unless all of it was
// good. written, when set, runs once the tree is complete, just before the Store flips current to it.
func installBundle(ctx context.Context, client *http.Client, store *gitsource.Store, name, url, digest string,
	lim gitsource.Limits, written func()) error {
	limit := bundleLimit(lim)
	body, err := httpGet(ctx, client, url, limit)
	if err != nil {
		return err
	}
	defer body.Close()
	return store.Install(name, func(dir string) error {
		if err := gitsource.ExtractBundle(io.LimitReader(body, limit), dir, digest, lim); err != nil {
			return err
		}
		if written != nil {
			written()
		}
		return nil
	})
}

var errStatus = errors.New("unexpected status")

// get returns the body of a 200 answer whose announced length is at most limit.
func (p *Puller) get(ctx context.Context, u string, limit int64) (io.ReadCloser, error) {
	return httpGet(ctx, p.Client, u, limit)
}

// getAll returns the body of a 200 answer of at most limit bytes, what it is named in the errors.
func (p *Puller) getAll(ctx context.Context, u string, limit int64, what string) ([]byte, error) {
	body, err := p.get(ctx, u, limit)
	if err != nil {
		return nil, err
	}
	defer body.Close()
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", what, err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%s is over %d bytes", what, limit)
	}
	return data, nil
}

// httpGet returns the body of a 200 answer whose announced length is at most limit.
func httpGet(ctx context.Context, client *http.Client, u string, limit int64) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode != http.StatusOK || resp.ContentLength > limit {
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return nil, fmt.Errorf("GET %s: %d bytes announced, over the limit of %d", u, resp.ContentLength, limit)
		}
		return nil, fmt.Errorf("GET %s: %w %s", u, errStatus, resp.Status)
	}
	return resp.Body, nil
}

// Handler serves the puller's admin port: GET /revision (what this pod serves; ?wait= long-polls like the
// fetcher's), GET /healthz (200 once a tree is served: the startup probe that holds the server container back
// until there is something to serve), GET /metrics.
func (p *Puller) Handler(waitTimeout time.Duration) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /revision", serveRevision(p.board, p.After, waitTimeout))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		if rev, _ := p.board.get(); rev.Commit == "" {
			http.Error(w, "nothing served yet", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	})
	mux.Handle("GET /metrics", p.metrics.handler())
	return mux
}
