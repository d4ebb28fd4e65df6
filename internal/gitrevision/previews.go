package gitrevision

import (
	"fmt"
	"strings"
	"time"

	"hyperstatic.dev/hyperstatic/internal/podtext"
	"hyperstatic.dev/hyperstatic/internal/previews"
)

// The previews in a /revision (docs/design/deploys.md, decision 4): the fetcher's (what it publishes) and a
// puller's (what its pod serves). Checked like every other field, since both processes run the tenant's
// repository: a name must be previews.ValidName (it becomes a hostname label and a status key), a ref a plain
// refs/ name, commits and bundles hex, names unique. A malformed entry refuses the whole answer; more than
// previews.MaxMax entries are cut.

// Preview is one checked preview.
type Preview struct {
	Name, Ref string
	// Commit and Bundle are what is published or served ("" for a preview whose first commit failed).
	Commit, Bundle string
	// Since is when Commit was first published (the fetcher's; zero from a puller).
	Since time.Time
	// Failure is the fetcher's last failure for it, its reason one of the operator's (ConditionReason).
	Failure *Failure
	// FailedCommit is the commit that failed (40 hex), "" when none.
	FailedCommit string
}

type previewAnswer struct {
	Name         string    `json:"name"`
	Ref          string    `json:"ref"`
	Commit       string    `json:"commit,omitempty"`
	Bundle       string    `json:"bundle,omitempty"`
	Size         int64     `json:"size,omitempty"`
	Files        string    `json:"files,omitempty"`
	Since        time.Time `json:"since,omitzero"`
	Error        *failure  `json:"error,omitempty"`
	FailedCommit string    `json:"failedCommit,omitempty"`
}

// parsePreviews checks raw's previews into rev.
func parsePreviews(rev *Revision, raw answer) error {
	if raw.PreviewsSkipped < 0 {
		return fmt.Errorf("previewsSkipped %d is negative", raw.PreviewsSkipped)
	}
	rev.PreviewsSkipped, rev.PreviewsTag = raw.PreviewsSkipped, podtext.Clean(raw.PreviewsTag, 64)
	seen := map[string]bool{}
	for i, p := range raw.Previews {
		switch {
		case !previews.ValidName(p.Name):
			return fmt.Errorf("preview %d: name %q is not a preview name", i, podtext.Clean(p.Name, 80))
		case seen[p.Name]:
			return fmt.Errorf("preview %d: name %s is listed twice", i, p.Name)
		case !previewRef(p.Ref):
			return fmt.Errorf("preview %s: ref %q is not a full ref", p.Name, podtext.Clean(p.Ref, 80))
		case (p.Commit == "") != (p.Bundle == ""):
			return fmt.Errorf("preview %s: a commit without a bundle, or the other way", p.Name)
		case p.Commit != "" && (!hex(p.Commit, 40) || !hex(p.Bundle, 64)):
			return fmt.Errorf("preview %s: commit or bundle is not lower-case hex", p.Name)
		case p.FailedCommit != "" && !hex(p.FailedCommit, 40):
			return fmt.Errorf("preview %s: failedCommit is not 40 lower-case hex digits", p.Name)
		}
		seen[p.Name] = true
		if len(rev.Previews) == previews.MaxMax {
			continue
		}
		pv := Preview{Name: p.Name, Ref: p.Ref, Commit: p.Commit, Bundle: p.Bundle, Since: p.Since, FailedCommit: p.FailedCommit}
		if f := p.Error; f != nil {
			pv.Failure = &Failure{Reason: ConditionReason(f.Reason), Message: podtext.Clean(strings.TrimSpace(f.Message), podtext.MaxStatusText), Time: f.Time}
		}
		rev.Previews = append(rev.Previews, pv)
	}
	return nil
}

// previewRef: a ref under refs/, printable ASCII without spaces, at most previews.MaxRef bytes.
func previewRef(ref string) bool {
	if len(ref) > previews.MaxRef || !strings.HasPrefix(ref, "refs/") {
		return false
	}
	for i := range len(ref) {
		if c := ref[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}
