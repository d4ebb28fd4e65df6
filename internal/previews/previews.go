// Package previews decides which refs of a Git site's repository are previewed, and what each preview is called
// (issue 41, docs/design/deploys.md, decision 4). It is pure: the fetcher lists the remote's refs, hands them here
// with what it keeps now and the time, and fetches what Plan returns. The contract, which the fetcher, the
// pullers and the operator all rely on:
//
//   - Which refs. With PullRequests, every refs/pull/<N>/head (GitHub, Gitea) and refs/merge-requests/<N>/head
//     (GitLab); with Branches, every refs/heads/<branch> whose branch matches one of the patterns (path.Match:
//     `*` does not cross a `/`, so "feature/*" takes feature/login but not feature/a/b). The branch production
//     follows is never a preview, nor a ref longer than MaxRef. Nothing else (tags, other namespaces) is.
//   - Names. pr-<N> for refs/pull/<N>/head, mr-<N> for refs/merge-requests/<N>/head, and for a branch its slug:
//     lower case, every run of characters outside [a-z0-9] one `-`, trimmed of `-`, at most 24 characters; when
//     the slug is not the branch name itself (a `/`, upper case, truncation...) or looks like a request's name,
//     `-` and the first 6 hex digits of the SHA-256 of the full ref are appended. So a name is stable for the life
//     of its ref, two refs never share one, and every name is ValidName: a DNS label of at most 31 characters
//     with no `--`, which the hostname `<name>--<site>.<domain>` needs (the `--` then only separates the two).
//   - How many. At most Max at once. The previews kept now stay (a preview never loses its place to a newer
//     one); free places go to pull requests, highest number first, then branches by name. The rest are counted
//     (Plan's Skipped), not previewed.
//   - How long. A preview whose commit was first published more than TTL ago (0: no limit) expires; its ref at
//     that commit is not previewed again, but a new commit on it is (a push revives a stale preview). A closed
//     pull request (its webhook's word: the forges keep the ref after the close) is likewise not previewed at
//     the commit it was closed at; reopened, or at another commit, it is.
package previews

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"path"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"
)

// DefaultMax is the previews kept at once when Settings.Max is 0; MaxMax the most a site may ask for (each is a
// tree on every server pod's disk and an entry in /revision, which its readers bound to 256 KiB).
const (
	DefaultMax = 10
	MaxMax     = 50
)

// MaxRef is the longest ref previewed (the API's ref fields take 255 characters).
const MaxRef = 255

// Settings are the site's spec.previews, as the fetcher is given them.
type Settings struct {
	PullRequests bool
	// Branches are path.Match patterns over branch names (without refs/heads/).
	Branches []string
	// TTL is how long a commit stays previewed after it was first published (0: as long as its ref lives).
	TTL time.Duration
	// Max is the previews at once (DefaultMax when 0).
	Max int
}

// Enabled is true when some ref can be previewed.
func (s Settings) Enabled() bool { return s.PullRequests || len(s.Branches) > 0 }

// Validate refuses settings no fetcher can follow, naming the setting.
func (s Settings) Validate() error {
	for i, p := range s.Branches {
		if p == "" {
			return fmt.Errorf("branches[%d]: empty pattern", i)
		}
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("branches[%d]: %q: %w", i, p, err)
		}
	}
	if s.TTL < 0 {
		return fmt.Errorf("ttl: %s is negative", s.TTL)
	}
	if s.Max < 0 || s.Max > MaxMax {
		return fmt.Errorf("max: %d is not within 1-%d", s.Max, MaxMax)
	}
	return nil
}

func (s Settings) max() int {
	if s.Max == 0 {
		return DefaultMax
	}
	return s.Max
}

var (
	pullRef  = regexp.MustCompile(`^refs/pull/([1-9][0-9]{0,8})/head$`)
	mergeRef = regexp.MustCompile(`^refs/merge-requests/([1-9][0-9]{0,8})/head$`)
	// requestName is the shape of pr-N and mr-N, which a branch's slug must not take.
	requestName = regexp.MustCompile(`^(pr|mr)-[0-9]+$`)
	nameRE      = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,29}[a-z0-9])?$`)
	notSlug     = regexp.MustCompile(`[^a-z0-9]+`)
)

// maxSlug bounds a branch's slug; with "-" and 6 hex digits a name is at most 31 characters.
const maxSlug = 24

// ValidName is true for what Name can return: a DNS label of 1-31 characters without `--`. The pullers and the
// operator check every name the fetcher publishes with it before it reaches a hostname or a path.
func ValidName(name string) bool { return nameRE.MatchString(name) && !strings.Contains(name, "--") }

// Name is the preview name of ref under s, and whether ref is previewed at all. production is the full ref the
// site's branch resolves to, never a preview.
func (s Settings) Name(ref, production string) (string, bool) {
	if ref == production || len(ref) > MaxRef {
		return "", false
	}
	if m := pullRef.FindStringSubmatch(ref); m != nil && s.PullRequests {
		return "pr-" + m[1], true
	}
	if m := mergeRef.FindStringSubmatch(ref); m != nil && s.PullRequests {
		return "mr-" + m[1], true
	}
	branch, ok := strings.CutPrefix(ref, "refs/heads/")
	if !ok || !s.matches(branch) {
		return "", false
	}
	return branchName(ref, branch), true
}

func (s Settings) matches(branch string) bool {
	for _, p := range s.Branches {
		if ok, _ := path.Match(p, branch); ok {
			return true
		}
	}
	return false
}

// branchName is a branch's slug, with a digest of its ref when the slug lost anything.
func branchName(ref, branch string) string {
	slug := strings.Trim(notSlug.ReplaceAllString(strings.ToLower(branch), "-"), "-")
	exact := slug == branch && len(slug) <= maxSlug && !requestName.MatchString(slug) && !strings.Contains(slug, "--")
	if exact {
		return slug
	}
	slug = strings.ReplaceAll(slug, "--", "-")
	if len(slug) > maxSlug {
		slug = strings.TrimRight(slug[:maxSlug], "-")
	}
	sum := sha256.Sum256([]byte(ref))
	if slug == "" {
		return "b-" + hex.EncodeToString(sum[:])[:6]
	}
	return slug + "-" + hex.EncodeToString(sum[:])[:6]
}

// Candidate is a ref that may be previewed: its name, full ref and the commit the remote names.
type Candidate struct {
	Name, Ref, Commit string
}

// Kept is a preview the fetcher keeps now: the commit it publishes (or last tried) and since when.
type Kept struct {
	Name, Ref, Commit string
	// Since is when its commit was first published (zero: not published yet).
	Since time.Time
}

// Plan is what to preview next.
type Plan struct {
	// Previews are the candidates to keep or fetch, at most Max: those kept now first, in their order.
	Previews []Candidate
	// Expired are the kept previews whose TTL ended now: the fetcher records them (name → commit) with the
	// closed ones and passes both back as Done.
	Expired []Candidate
	// Skipped counts the candidates left out by Max.
	Skipped int
}

// PlanFor chooses the previews among refs (full name → commit, the remote's listing), given what is kept now,
// done (ref → the commit at which it was closed or expired: not previewed again at that commit) and now.
func (s Settings) PlanFor(refs map[string]string, production string, kept []Kept, done map[string]string, now time.Time) Plan {
	var cands []Candidate
	for ref, commit := range refs {
		if name, ok := s.Name(ref, production); ok && done[ref] != commit {
			cands = append(cands, Candidate{Name: name, Ref: ref, Commit: commit})
		}
	}
	sort.Slice(cands, func(i, j int) bool { return less(cands[i], cands[j]) })
	byRef := map[string]Candidate{}
	for _, c := range cands {
		byRef[c.Ref] = c
	}
	var plan Plan
	taken := map[string]bool{}
	for _, k := range kept {
		c, ok := byRef[k.Ref]
		if !ok {
			continue // its ref went, or it is done at this commit
		}
		if s.TTL > 0 && !k.Since.IsZero() && c.Commit == k.Commit && !now.Before(k.Since.Add(s.TTL)) {
			plan.Expired = append(plan.Expired, c)
			taken[c.Ref] = true
			continue
		}
		if len(plan.Previews) < s.max() {
			plan.Previews = append(plan.Previews, c)
			taken[c.Ref] = true
		}
	}
	for _, c := range cands {
		if taken[c.Ref] {
			continue
		}
		if len(plan.Previews) < s.max() {
			plan.Previews = append(plan.Previews, c)
		} else {
			plan.Skipped++
		}
	}
	return plan
}

// less orders candidates for free places: pull requests, highest number first (the newest), then branches by
// name.
func less(a, b Candidate) bool {
	an, aReq := requestNumber(a.Name)
	bn, bReq := requestNumber(b.Name)
	switch {
	case aReq != bReq:
		return aReq
	case aReq && an != bn:
		return an > bn
	}
	return a.Ref < b.Ref
}

func requestNumber(name string) (int, bool) {
	if !requestName.MatchString(name) {
		return 0, false
	}
	n, err := strconv.Atoi(name[3:])
	return n, err == nil
}
