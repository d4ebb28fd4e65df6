package gitrevision

import (
	"fmt"
	"time"

	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// The fetcher's deploy history in its /revision (docs/design/deploys.md): checked like every other field, since
// the fetcher runs the tenant's repository. A malformed entry refuses the whole answer (as a malformed commit
// does); more than MaxDeploys entries are cut to the newest MaxDeploys.

// MaxDeploys is the most deploys taken from a fetcher: the CRD's maximum of spec.content.git.history.
const MaxDeploys = 20

// Deploy is one deploy of the fetcher's history.
type Deploy struct {
	Commit string
	// Bundle is the deploy's bundle digest (64 hex digits).
	Bundle string
	Size   int64
	// Committed, FirstServed and LastServed are zero when the fetcher does not say.
	Committed, FirstServed, LastServed time.Time
}

// deployAnswer is one entry of /revision's deploys: internal/contentagent's Deploy, field for field.
type deployAnswer struct {
	Commit      string    `json:"commit"`
	Bundle      string    `json:"bundle"`
	Size        int64     `json:"size"`
	Files       string    `json:"files,omitempty"` // the bundle's file list, for the pullers: the operator ignores it
	Committed   time.Time `json:"committed,omitzero"`
	Ref         string    `json:"ref,omitempty"`
	FirstServed time.Time `json:"firstServed,omitzero"`
	LastServed  time.Time `json:"lastServed,omitzero"`
}

// parseDeploys checks raw's history and pin into rev.
func parseDeploys(rev *Revision, raw answer) error {
	if raw.Pin != "" && !hex(raw.Pin, 40) {
		return fmt.Errorf("pin %q is not 40 lower-case hex digits", podtext.Clean(raw.Pin, 80))
	}
	rev.Pin = raw.Pin
	seen := map[string]bool{}
	for i, d := range raw.Deploys {
		switch {
		case !hex(d.Commit, 40):
			return fmt.Errorf("deploy %d: commit %q is not 40 lower-case hex digits", i, podtext.Clean(d.Commit, 80))
		case !hex(d.Bundle, 64):
			return fmt.Errorf("deploy %d: bundle %q is not 64 lower-case hex digits", i, podtext.Clean(d.Bundle, 80))
		case d.Size < 0 || d.Size > maxSize:
			return fmt.Errorf("deploy %d: size %d is not a bundle size", i, d.Size)
		case seen[d.Commit]:
			return fmt.Errorf("deploy %d: commit %s is listed twice", i, d.Commit)
		}
		seen[d.Commit] = true
		if len(rev.Deploys) < MaxDeploys {
			rev.Deploys = append(rev.Deploys, Deploy{Commit: d.Commit, Bundle: d.Bundle, Size: d.Size,
				Committed: d.Committed, FirstServed: d.FirstServed, LastServed: d.LastServed})
		}
	}
	return nil
}

// HasDeploy says commit is a deploy of the fetcher's history.
func (r Revision) HasDeploy(commit string) bool {
	for _, d := range r.Deploys {
		if d.Commit == commit {
			return true
		}
	}
	return false
}
