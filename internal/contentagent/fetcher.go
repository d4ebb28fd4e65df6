package contentagent

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/previews"
)

// Triggers of a fetch, as they appear in metrics, logs and Fetcher.OnSync.
const (
	TriggerStart    = "start"
	TriggerInterval = "interval"
	TriggerWebhook  = "webhook"
)

// stateFile, in the bundle directory, records the published Revision so a restarted fetcher (same volume)
// serves its last good bundle at once, before its first fetch answers.
const stateFile = "state.json"

// Fetcher follows one site's source: it syncs on start, every Interval and on an accepted webhook, and publishes
// each new tree as BundleDir/<sha256>.tar. A failed sync keeps the last bundle published and records why.
type Fetcher struct {
	// Source is what to follow; with SecretDir set, its Auth and CABundle are replaced at every attempt.
	Source gitsource.Source
	// SecretDir, when set, is the mounted credentials Secret (Flux's keys), read at every fetch attempt.
	SecretDir string
	// Store holds the fetched trees; its Check (the server's --check) runs before anything is published.
	Store     *gitsource.Store
	BundleDir string
	Interval  time.Duration
	// WebhookSecret authenticates POST /hooks (gitwebhook.Parse); empty: every delivery is refused.
	WebhookSecret []byte
	// WebhookSecretFile, when set, replaces WebhookSecret: the file is read at every delivery.
	WebhookSecretFile string
	// WebhookMinGap is the least time from the end of a fetch a webhook started to the start of the next one (0:
	// none). The pushes announced inside the gap are fetched once, at its end: a burst of webhooks costs the
	// cluster's shared egress address two fetches, not one each.
	WebhookMinGap time.Duration
	// WebhookTimeout bounds the reading of one webhook request, head and body (DefaultWebhookTimeout when 0).
	WebhookTimeout time.Duration
	// WaitTimeout bounds a long poll of GET /revision?wait=.
	WaitTimeout time.Duration
	// History is how many deploys (bundles) are kept and listed in /revision (DefaultHistory when 0, at most
	// MaxHistory).
	History int
	// PinTokenFile holds the bearer token POST /pin requires, read at every request; empty or unreadable: every
	// pin is refused (pin.go).
	PinTokenFile string
	// Previews, when enabled, makes the fetcher follow the site's pull requests and branches beside production
	// (previews.go); their trees go under PreviewDir.
	Previews   previews.Settings
	PreviewDir string
	// PreviewInterval is the previews' listing interval (Interval when 0): the tests give the two loops their own
	// timers; the command line sets none.
	PreviewInterval time.Duration
	// OnPreviews, when set, is called after every previews round with its trigger and the revision then published.
	OnPreviews func(trigger string, rev Revision)
	// StatusFile, when set, receives the Revision (with LastError) as JSON after every attempt.
	StatusFile string
	Log        *slog.Logger
	// After and Now are the clock (time.After, time.Now when nil): tests drive the interval themselves.
	After func(time.Duration) <-chan time.Time
	Now   func() time.Time
	// OnSync, when set, is called after every attempt with its trigger and the revision then published.
	OnSync func(trigger string, rev Revision)

	// mu serializes the changes of what is published: a fetch's new deploy and a pin.
	mu sync.Mutex
	// pushes holds one accepted webhook not yet taken by Run; inFlight, one token per delivery being handled.
	pushes   chan struct{}
	inFlight chan struct{}
	board    *board
	metrics  *metrics
	// previewEvents holds one accepted event for the previews' loop; previewsDone (guarded by previewMu) the refs
	// closed or expired at a commit (previews.go).
	previewEvents chan struct{}
	previewMu     sync.Mutex
	previewsDone  map[string]string
}

// Init prepares the bundle directory and loads the last published revision, if its bundle is still there.
// Call it once before Run, Handler or WebhookServer (WebhookHandler).
func (f *Fetcher) Init() error {
	if f.After == nil {
		f.After = time.After
	}
	if f.Now == nil {
		f.Now = time.Now
	}
	if f.Log == nil {
		f.Log = slog.Default()
	}
	if f.WaitTimeout <= 0 {
		f.WaitTimeout = 30 * time.Second
	}
	if f.WebhookTimeout <= 0 {
		f.WebhookTimeout = DefaultWebhookTimeout
	}
	if f.History <= 0 {
		f.History = DefaultHistory
	}
	f.History = min(f.History, MaxHistory)
	f.pushes = make(chan struct{}, 1)
	f.inFlight = make(chan struct{}, WebhookMaxInFlight)
	f.metrics = newMetrics("fetch")
	if err := os.MkdirAll(f.BundleDir, 0o755); err != nil {
		return err
	}
	var rev Revision
	if data, err := os.ReadFile(filepath.Join(f.BundleDir, stateFile)); err == nil {
		if json.Unmarshal(data, &rev) != nil || !validDigest(rev.Digest) || !exists(f.bundlePath(rev.Digest)) {
			rev = Revision{}
		}
	}
	rev = restoredHistory(rev, f.History, func(d string) bool { return validDigest(d) && exists(f.bundlePath(d)) })
	if rev.Pin != "" && indexOfDeploy(rev.Deploys, rev.Pin) < 0 {
		f.Log.Warn("the pinned deploy is no longer on disk; publishing the newest", "pin", rev.Pin)
		rev = publishing(rev, rev.Deploys, "", f.Now())
	}
	rev.LastError = nil
	if err := f.initPreviews(&rev); err != nil {
		return err
	}
	f.board = newBoard(rev)
	if rev.Digest != "" {
		f.metrics.setRevision(rev.Commit)
		f.metrics.bundleSize.Set(float64(rev.Size))
	}
	return nil
}

// Revision returns what is published now and a channel closed at its next change.
func (f *Fetcher) Revision() (Revision, <-chan struct{}) { return f.board.get() }

// Run syncs at once, then every Interval and on webhooks, until ctx ends. A webhook's fetch starts at once unless
// the gap after the previous one runs (WebhookMinGap); the pushes announced inside it are taken by one fetch at
// its end, or by an interval fetch that comes first. The interval counts from the last fetch of any kind.
func (f *Fetcher) Run(ctx context.Context) {
	if f.Previews.Enabled() {
		go f.runPreviews(ctx)
	}
	f.loop(ctx, f.Interval, f.pushes, f.sync)
}

// loop runs sync at once, then every Interval and on events (a webhook's), with the minimum gap between the
// fetches events start: production's loop and the previews' loop alike.
func (f *Fetcher) loop(ctx context.Context, interval time.Duration, events <-chan struct{}, sync func(context.Context, string)) {
	sync(ctx, TriggerStart)
	tick := f.After(interval)
	var gapEnd <-chan time.Time // set while the gap after a webhook's fetch runs
	pending := false            // a push announced inside the gap waits for its end
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick:
			sync(ctx, TriggerInterval)
			pending = false // this fetch started after every push announced so far: it saw them
		case <-events:
			if gapEnd != nil {
				pending = true
				f.metrics.coalesced.Inc()
				continue
			}
			sync(ctx, TriggerWebhook)
			gapEnd = f.gap()
		case <-gapEnd:
			gapEnd = nil
			if !pending {
				continue
			}
			pending = false
			sync(ctx, TriggerWebhook)
			gapEnd = f.gap()
		}
		tick = f.After(interval)
	}
}

// gap starts the minimum gap after a webhook's fetch (nil, a gap never ending, when there is none).
func (f *Fetcher) gap() <-chan time.Time {
	if f.WebhookMinGap <= 0 {
		return nil
	}
	return f.After(f.WebhookMinGap)
}

// notifyPush tells Run of an accepted push. When one is already waiting to be taken, this one adds nothing (the
// fetch that takes the first starts after both arrived, so it sees the newest commit) and is counted coalesced.
func (f *Fetcher) notifyPush() {
	select {
	case f.pushes <- struct{}{}:
	default:
		f.metrics.coalesced.Inc()
	}
}

func (f *Fetcher) sync(ctx context.Context, trigger string) {
	f.metrics.triggers.WithLabelValues(trigger).Inc()
	start := f.Now()
	result, err := f.syncOnce(ctx)
	f.metrics.duration.Observe(f.Now().Sub(start).Seconds())
	now := f.Now()
	rev := f.board.update(func(r *Revision) {
		if err == nil {
			r.LastError = nil
			return
		}
		reason := string(gitsource.ReasonOf(err))
		if reason == "" {
			reason = "Error"
		}
		result = reason
		r.LastError = &Failure{Reason: reason, Message: err.Error(), Time: now}
	})
	f.metrics.attempts.WithLabelValues(result).Inc()
	if err == nil {
		f.metrics.lastOK.Set(float64(now.UnixNano()) / 1e9)
		f.Log.Info("fetch", "trigger", trigger, "result", result, "commit", rev.Commit, "digest", rev.Digest)
	} else {
		f.Log.Warn("fetch failed; the last good bundle is still served", "trigger", trigger,
			"reason", result, "error", err, "commit", rev.Commit)
	}
	f.writeStatus(rev)
	if f.OnSync != nil {
		f.OnSync(trigger, rev)
	}
}

// syncOnce fetches and, when the commit changed (or nothing is published yet), writes and publishes its bundle.
func (f *Fetcher) syncOnce(ctx context.Context) (string, error) {
	src, err := f.source()
	if err != nil {
		return "", err
	}
	rev, changed, err := f.Store.Sync(ctx, src)
	if err != nil {
		return "", err
	}
	if have, _ := f.board.get(); !changed && len(have.Deploys) > 0 && have.Deploys[0].Commit == rev.Commit {
		return "unchanged", nil
	} else if i := indexOfDeploy(have.Deploys, rev.Commit); rev.Time.IsZero() && i >= 0 {
		rev.Time = have.Deploys[i].Committed // Sync does not fetch an unchanged commit again to learn its time
	}
	digest, size, files, err := f.writeBundle(filepath.Join(f.Store.Dir, rev.Commit))
	if err != nil {
		return "", fmt.Errorf("writing the bundle of %s: %w", rev.Commit, err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, _ := f.board.get()
	history := withDeploy(cur.Deploys, Deploy{Commit: rev.Commit, Bundle: digest, Size: size, Files: files, Committed: rev.Time,
		Ref: rev.Ref}, f.History, cur.Pin)
	if err := f.publish(publishing(cur, history, cur.Pin, f.Now())); err != nil {
		return "", err
	}
	f.pruneBundles(append(bundlesOf(history), cur.Digest)...)
	return "changed", nil
}

// publish records next in state.json, then publishes it (its LastError aside: the caller's attempt sets that).
// Call it with f.mu held.
func (f *Fetcher) publish(next Revision) error {
	state := next
	state.LastError = nil
	if err := writeJSON(filepath.Join(f.BundleDir, stateFile), state); err != nil {
		return err
	}
	f.board.update(func(r *Revision) {
		failure := r.LastError
		*r = next
		r.LastError = failure
	})
	f.metrics.setRevision(next.Commit)
	f.metrics.bundleSize.Set(float64(next.Size))
	return nil
}

func (f *Fetcher) writeBundle(tree string) (digest string, size int64, files string, err error) {
	return writeBundleWithFiles(f.BundleDir, tree)
}

func (f *Fetcher) bundlePath(digest string) string { return bundleFile(f.BundleDir, digest) }

// pruneBundles keeps the bundles of the history and the one published before the change: a puller that read the
// revision just before it can still download what it was told. Others go (an open download keeps its file until it ends).
func (f *Fetcher) pruneBundles(keep ...string) { pruneBundleFiles(f.BundleDir, f.Log, keep...) }

func (f *Fetcher) writeStatus(rev Revision) {
	if f.StatusFile == "" {
		return
	}
	if err := writeJSON(f.StatusFile, rev); err != nil {
		f.Log.Warn("writing the status file", "error", err)
	}
}

// writeJSON replaces path with v as JSON in one rename: a reader never sees half a file.
func writeJSON(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return writeFileAtomic(path, data)
}

// writeFileAtomic replaces path with data in one rename.
func writeFileAtomic(path string, data []byte) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

func exists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
