package contentagent

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/previews"
)

// The fetcher's previews (issue 41, docs/design/deploys.md, decision 4): besides production, a site with
// Fetcher.Previews follows its pull requests and the branches matching its patterns, each as its own checked
// bundle, listed in GET /revision's previews. internal/previews decides which refs and their names; this file
// fetches them. What it holds to:
//
//   - Production is never touched. Previews run in their own loop (runPreviews), their trees under PreviewDir/
//     <name>, their bundles under BundleDir/previews (pruned apart from production's, so neither side's pruning
//     can remove the other's bundle), and they change only the Previews fields of the published revision.
//   - One listing per round: every interval, and at once (within the webhook gap) on an authentic pull-request
//     event or a push to a previewed branch, one ls-remote lists every ref; each preview whose ref moved is
//     fetched at depth 1, checked with the production's --check and bundled.
//   - A commit that fails (the check, a size limit, the fetch) is not published: the preview keeps its last good
//     bundle, or has none, and its error says why; the same commit is not fetched again (a push brings the next).
//   - A preview goes when its ref goes, when its pull request is closed (the forge keeps the ref: the webhook's
//     word is remembered in BundleDir/previews/done.json with the commit closed at), after its TTL, and never more
//     than Max are kept.
//   - Bounds: at most previews.MaxMax entries, an error message at most previewMessageBytes, so /revision stays
//     within what its readers take (maxRevisionBytes).

// Preview is one preview in GET /revision.
type Preview struct {
	// Name is previews.ValidName: its hostname is <name>--<site>.<domain>.
	Name string `json:"name"`
	// Ref is the full ref it follows (refs/pull/42/head, refs/heads/feature/login).
	Ref string `json:"ref"`
	// Commit, Bundle, Size: what is published ("" while nothing is: a first commit that failed).
	Commit string `json:"commit,omitempty"`
	Bundle string `json:"bundle,omitempty"`
	Size   int64  `json:"size,omitempty"`
	// Files is the SHA-256 of the bundle's file list (Revision.Files).
	Files string `json:"files,omitempty"`
	// Since is when Commit was first published.
	Since time.Time `json:"since,omitzero"`
	// Error is the last attempt's failure: a commit that failed is not published (FailedCommit names it).
	Error        *Failure `json:"error,omitempty"`
	FailedCommit string   `json:"failedCommit,omitempty"`
}

// previewMessageBytes bounds a preview's error message (a --check's output is up to 4 KiB; 100 previews of it
// would pass what /revision's readers take).
const previewMessageBytes = 256

// previewsDir is the subdirectory of BundleDir holding the previews' bundles and done.json.
const previewsDir = "previews"

func (f *Fetcher) previewBundleDir() string { return filepath.Join(f.BundleDir, previewsDir) }

// initPreviews restores the previews of state.json whose bundle is still on disk, and the done list.
func (f *Fetcher) initPreviews(rev *Revision) error {
	f.previewEvents = make(chan struct{}, 1)
	f.previewsDone = map[string]string{}
	if !f.Previews.Enabled() {
		rev.Previews, rev.PreviewsSkipped, rev.PreviewsTag = nil, 0, ""
		return nil
	}
	if err := os.MkdirAll(f.previewBundleDir(), 0o755); err != nil {
		return err
	}
	if data, err := os.ReadFile(filepath.Join(f.previewBundleDir(), "done.json")); err == nil {
		_ = json.Unmarshal(data, &f.previewsDone) // unreadable: a closed request may come back until its TTL
	}
	rev.Previews = slices.DeleteFunc(rev.Previews, func(p Preview) bool {
		return !previews.ValidName(p.Name) || p.Bundle != "" && !exists(bundleFile(f.previewBundleDir(), p.Bundle))
	})
	rev.PreviewsTag = previewsTag(rev.Previews)
	return nil
}

// runPreviews follows the previews until ctx ends: at once, every Interval and on webhooks, as Run does.
func (f *Fetcher) runPreviews(ctx context.Context) {
	interval := f.PreviewInterval
	if interval <= 0 {
		interval = f.Interval
	}
	f.loop(ctx, interval, f.previewEvents, func(ctx context.Context, trigger string) {
		f.syncPreviews(ctx, trigger)
		if f.OnPreviews != nil {
			rev, _ := f.board.get()
			f.OnPreviews(trigger, rev)
		}
	})
}

// notifyPreviews tells runPreviews of an accepted pull-request event or push to a previewed branch.
func (f *Fetcher) notifyPreviews() {
	select {
	case f.previewEvents <- struct{}{}:
	default:
		f.metrics.coalesced.Inc()
	}
}

// pullRequestClosed remembers that the request's ref at head is done (closed), or forgets it (reopened).
func (f *Fetcher) pullRequestClosed(ref, head string, closed bool) {
	f.previewMu.Lock()
	defer f.previewMu.Unlock()
	if closed {
		f.previewsDone[ref] = head
	} else {
		delete(f.previewsDone, ref)
	}
	f.writeDone()
}

// writeDone records the done list; call with previewMu held.
func (f *Fetcher) writeDone() {
	if err := writeJSON(filepath.Join(f.previewBundleDir(), "done.json"), f.previewsDone); err != nil {
		f.Log.Warn("writing the previews' done list", "error", err)
	}
}

// syncPreviews is one round: list the refs, plan, fetch what moved, publish the list.
func (f *Fetcher) syncPreviews(ctx context.Context, trigger string) {
	f.metrics.triggers.WithLabelValues("previews-" + trigger).Inc()
	src, err := f.source()
	var refs gitsource.Refs
	if err == nil {
		refs, err = gitsource.ListRefs(ctx, src)
	}
	if err != nil {
		f.Log.Warn("listing the refs for the previews; the previews published stay", "error", err)
		return
	}
	listed := make(map[string]string, len(refs))
	for name, h := range refs {
		listed[name] = h.String()
	}
	cur, _ := f.board.get()
	kept := make([]previews.Kept, 0, len(cur.Previews))
	for _, p := range cur.Previews {
		kept = append(kept, previews.Kept{Name: p.Name, Ref: p.Ref, Commit: p.Commit, Since: p.Since})
	}
	f.previewMu.Lock()
	plan := f.Previews.PlanFor(listed, f.productionRef(), kept, f.previewsDone, f.Now())
	for _, c := range plan.Expired {
		f.previewsDone[c.Ref] = c.Commit
	}
	for ref := range f.previewsDone {
		if _, ok := listed[ref]; !ok {
			delete(f.previewsDone, ref) // the ref is gone: a new one of that name is a new request or branch
		}
	}
	f.writeDone()
	f.previewMu.Unlock()

	next := make([]Preview, 0, len(plan.Previews))
	for _, c := range plan.Previews {
		next = append(next, f.syncPreview(ctx, src, c, findPreview(cur.Previews, c.Name)))
	}
	for _, p := range cur.Previews {
		if findPreview(next, p.Name) == nil {
			_ = os.RemoveAll(filepath.Join(f.PreviewDir, p.Name))
			f.Log.Info("preview removed", "name", p.Name, "ref", p.Ref)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	rev, _ := f.board.get()
	rev.Previews, rev.PreviewsSkipped, rev.PreviewsTag = next, plan.Skipped, previewsTag(next)
	if err := f.publish(rev); err != nil {
		f.Log.Warn("publishing the previews", "error", err)
		return
	}
	keep := make([]string, 0, len(next))
	for _, p := range next {
		keep = append(keep, p.Bundle)
	}
	pruneBundleFiles(f.previewBundleDir(), f.Log, keep...)
}

// syncPreview brings one preview to the commit its ref names, or says why not; have is what it published before.
func (f *Fetcher) syncPreview(ctx context.Context, src gitsource.Source, c previews.Candidate, have *Preview) Preview {
	p := Preview{Name: c.Name, Ref: c.Ref}
	if have != nil && have.Ref == c.Ref {
		p = *have
	}
	if p.Commit == c.Commit && p.Bundle != "" || p.FailedCommit == c.Commit && p.Error != nil && lasting(p.Error.Reason) {
		return p // published, or refused at this commit already: nothing to do until the ref moves
	}
	// LinkFrom: a preview's tree is mostly production's; those files are linked, not written again (a link to a
	// tree production prunes meanwhile fails, and the file is written). Objects: production's kept Git objects, so
	// the fetch transfers what the preview changed.
	store := &gitsource.Store{Dir: filepath.Join(f.PreviewDir, c.Name), Check: f.Store.Check, LinkFrom: f.Store,
		Objects: f.Store.Objects}
	src.Ref = c.Ref
	rev, _, err := store.SyncTo(ctx, src, gitsource.Target{Ref: c.Ref, Commit: plumbing.NewHash(c.Commit)})
	var digest, files string
	var size int64
	if err == nil {
		digest, size, files, err = writeBundleWithFiles(f.previewBundleDir(), filepath.Join(store.Dir, rev.Commit))
	}
	if err != nil {
		reason := string(gitsource.ReasonOf(err))
		if reason == "" {
			reason = "Error"
		}
		msg := err.Error()
		if len(msg) > previewMessageBytes {
			msg = msg[:previewMessageBytes]
		}
		p.Error, p.FailedCommit = &Failure{Reason: reason, Message: msg, Time: f.Now()}, c.Commit
		f.Log.Warn("preview not published", "name", c.Name, "ref", c.Ref, "commit", c.Commit, "reason", reason, "error", err)
		return p
	}
	p.Commit, p.Bundle, p.Size, p.Files, p.Since, p.Error, p.FailedCommit = rev.Commit, digest, size, files, f.Now(), nil, ""
	f.Log.Info("preview published", "name", c.Name, "ref", c.Ref, "commit", rev.Commit, "bundle", digest)
	return p
}

// lasting is true for a failure the same commit will fail again with (its content); others (the network, the
// credentials) are tried again next round.
func lasting(reason string) bool {
	return reason == string(gitsource.InvalidContent) || reason == string(gitsource.TooLarge)
}

// productionRef is the full ref production follows ("" for a commit).
func (f *Fetcher) productionRef() string {
	ref := f.Source.Ref
	switch {
	case fullHash.MatchString(ref):
		return ""
	case len(ref) > 5 && ref[:5] == "refs/":
		return ref
	}
	return "refs/heads/" + ref
}

func findPreview(ps []Preview, name string) *Preview {
	for i := range ps {
		if ps[i].Name == name {
			return &ps[i]
		}
	}
	return nil
}

// previewsTag names a list of previews for the long poll (?previews=): any change of a name, ref, bundle, commit
// or error changes it.
func previewsTag(ps []Preview) string {
	if len(ps) == 0 {
		return ""
	}
	h := sha256.New()
	_ = json.NewEncoder(h).Encode(ps)
	return hex.EncodeToString(h.Sum(nil))[:16]
}
