// Package contentagent is the two processes of content from Git (docs/design/git-content.md): the fetcher,
// which follows a repository once per site and publishes each checked tree as a digest-addressed bundle, and
// the puller, a sidecar of every server pod, which long-polls the fetcher and swaps each new bundle in whole.
// cmd/content-agent runs them as `content-agent fetch` and `content-agent pull`.
package contentagent

import (
	"encoding/hex"
	"time"
)

// Revision is the answer of GET /revision, on the fetcher (what it publishes) and on a puller (what its pod
// serves). The operator reads it into status.content.revision.
type Revision struct {
	// Digest is the hex SHA-256 of the bundle (GET /bundles/<digest>); "" while nothing was published.
	Digest string `json:"digest,omitempty"`
	// Size is the bundle's length in bytes.
	Size int64 `json:"size,omitempty"`
	// Files is the SHA-256 of the bundle's file list (GET /bundles/<digest>/files), which a puller checks it
	// against before it builds the tree from the files it has (filesinstall.go); "" when there is none.
	Files  string `json:"files,omitempty"`
	Commit string `json:"commit,omitempty"`
	// CommitTime is the commit's committer time.
	CommitTime time.Time `json:"commitTime,omitzero"`
	// Ref is the full ref the source's ref resolved to ("" for a pinned commit).
	Ref string `json:"ref,omitempty"`
	// LastError is the last fetch's (or pull's) failure, cleared by the next success. The tree above keeps
	// being served meanwhile.
	LastError *Failure `json:"lastError,omitempty"`
	// Deploys is the fetcher's history, newest fetched first (history.go); a puller keeps their trees. Absent
	// from a puller's answer.
	Deploys []Deploy `json:"deploys,omitempty"`
	// Pin is the commit the fetcher publishes in place of the ref's newest (POST /pin); "" when following the ref.
	Pin string `json:"pin,omitempty"`
	// Previews are the previews the fetcher publishes beside production (previews.go); absent from a puller's
	// answer and when the site has none.
	Previews []Preview `json:"previews,omitempty"`
	// PreviewsTag names the previews list (?previews= of the long poll; "" for none).
	PreviewsTag string `json:"previewsTag,omitempty"`
	// PreviewsSkipped counts the refs that would be previewed but for the cap (previews.Settings.Max).
	PreviewsSkipped int `json:"previewsSkipped,omitempty"`
}

// Failure is why the last attempt did not publish: Reason is a gitsource.Reason (a condition reason as is) or
// "Error" for a local failure (disk, the check not running).
type Failure struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// validDigest is true for a lower-case hex SHA-256: the only names /bundles/ answers, and the only ones a puller
// asks for.
func validDigest(s string) bool {
	return len(s) == 64 && validHex(s)
}

// validHex is true for lower-case hex of an even length.
func validHex(s string) bool {
	_, err := hex.DecodeString(s)
	return err == nil && s == lower(s)
}

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'F' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
