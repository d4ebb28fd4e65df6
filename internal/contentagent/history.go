package contentagent

import (
	"slices"
	"time"
)

// The fetcher's deploy history (docs/design/deploys.md, decision 1): the last History bundles it fetched, newest
// first, each still downloadable at /bundles/<digest>, listed in GET /revision and kept in state.json across a
// container restart. A pin (pin.go) publishes one of them in place of the ref's newest; a puller keeps the trees
// of the same deploys, so a rollback on a pod is a flip to a tree already on its disk.

// DefaultHistory is the number of deploys a fetcher keeps when Fetcher.History is 0 (the CRD's default too);
// MaxHistory is the most it keeps (the CRD's maximum) and the most a puller takes from a fetcher's list.
const (
	DefaultHistory = 5
	MaxHistory     = 20
)

// Deploy is one checked bundle of the site: the tree of one commit, named by its digest.
type Deploy struct {
	Commit string `json:"commit"`
	// Bundle is the bundle's digest (GET /bundles/<bundle>); two commits with the same tree share one.
	Bundle string `json:"bundle"`
	Size   int64  `json:"size"`
	// Files is the SHA-256 of the bundle's file list (GET /bundles/<bundle>/files); "" when it has none (a
	// state written before the lists existed).
	Files string `json:"files,omitempty"`
	// Committed is the commit's committer time.
	Committed time.Time `json:"committed,omitzero"`
	// Ref is the full ref it was fetched from.
	Ref string `json:"ref,omitempty"`
	// FirstServed is when the fetcher first published it (zero: fetched while a pin held, never published).
	FirstServed time.Time `json:"firstServed,omitzero"`
	// LastServed is when another deploy replaced it; zero while it is published, or if it never was.
	LastServed time.Time `json:"lastServed,omitzero"`
}

// withDeploy returns history with d as its newest entry (an entry of the same commit moves to the front, keeping
// its times), at most n long; the entry of keep (the pinned commit) is never dropped, the oldest others are.
func withDeploy(history []Deploy, d Deploy, n int, keep string) []Deploy {
	if i := indexOfDeploy(history, d.Commit); i >= 0 {
		d.FirstServed, d.LastServed = history[i].FirstServed, history[i].LastServed
		history = slices.Delete(slices.Clone(history), i, i+1)
	}
	out := append([]Deploy{d}, history...)
	for len(out) > n {
		drop := len(out) - 1
		if out[drop].Commit == keep && drop > 0 {
			drop--
		}
		out = slices.Delete(out, drop, drop+1)
	}
	return out
}

func indexOfDeploy(history []Deploy, commit string) int {
	return slices.IndexFunc(history, func(d Deploy) bool { return d.Commit == commit })
}

// published is the deploy to publish: the pinned one, else the newest; ok is false when there is none.
func published(history []Deploy, pin string) (Deploy, bool) {
	if pin != "" {
		if i := indexOfDeploy(history, pin); i >= 0 {
			return history[i], true
		}
	}
	if len(history) == 0 {
		return Deploy{}, false
	}
	return history[0], true
}

// publishing returns rev publishing the deploy of history (with pin) that published picks, and the history with
// its served times updated at now: the deploy published before (rev.Commit) ends, the new one starts unless it
// had started and never ended. LastError is kept.
func publishing(rev Revision, history []Deploy, pin string, now time.Time) Revision {
	history = slices.Clone(history)
	d, ok := published(history, pin)
	if !ok {
		rev.Deploys, rev.Pin = history, pin
		return rev
	}
	if prev := indexOfDeploy(history, rev.Commit); d.Commit != rev.Commit && prev >= 0 {
		history[prev].LastServed = now
	}
	if i := indexOfDeploy(history, d.Commit); d.Commit != rev.Commit || history[i].FirstServed.IsZero() {
		if history[i].FirstServed.IsZero() {
			history[i].FirstServed = now
		}
		history[i].LastServed = time.Time{}
	}
	return Revision{Digest: d.Bundle, Size: d.Size, Files: d.Files, Commit: d.Commit, CommitTime: d.Committed, Ref: d.Ref,
		LastError: rev.LastError, Deploys: history, Pin: pin, Previews: rev.Previews, PreviewsSkipped: rev.PreviewsSkipped, PreviewsTag: rev.PreviewsTag}
}

// bundlesOf returns the digests of history's bundles: the ones the fetcher keeps on disk.
func bundlesOf(history []Deploy) []string {
	out := make([]string, 0, len(history))
	for _, d := range history {
		out = append(out, d.Bundle)
	}
	return out
}

// restoredHistory is rev as read from state.json by a restarted fetcher: its deploys whose bundle is still on
// disk (have), at most n; a state written before the history existed gives one deploy, the published one. The
// published fields are rev's own (Init drops a pin whose deploy is gone).
func restoredHistory(rev Revision, n int, have func(digest string) bool) Revision {
	if len(rev.Deploys) == 0 && rev.Digest != "" {
		rev.Deploys = []Deploy{{Commit: rev.Commit, Bundle: rev.Digest, Size: rev.Size, Committed: rev.CommitTime, Ref: rev.Ref}}
	}
	kept := make([]Deploy, 0, len(rev.Deploys))
	for _, d := range rev.Deploys {
		if len(kept) < n && have(d.Bundle) && indexOfDeploy(kept, d.Commit) < 0 {
			kept = append(kept, d)
		}
	}
	rev.Deploys = kept
	if len(kept) == 0 {
		return Revision{}
	}
	return rev
}
