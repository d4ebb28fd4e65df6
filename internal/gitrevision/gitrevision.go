// Package gitrevision reads what a Git site's content-agent processes say on GET /revision: the fetcher (the
// commit it published, and why the last fetch failed) and each server pod's puller (the commit that pod serves).
// The StaticSite controller turns it into status.content.revision and the ContentAvailable condition.
//
// Both processes run in the tenant's namespace, from the tenant's repository and Secrets, so nothing they answer
// is trusted (internal/podtext): no redirect is followed, the body is bounded, every field is checked (a commit
// is 40 hex digits, a digest 64, a ref a plain refs/ name, a failure reason one the fetcher can give, mapped to
// the operator's own reason names) and the failure message is escaped and bounded before a status or event holds
// it.
package gitrevision

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// Path is the endpoint both processes answer.
const Path = "/revision"

// MaxBytes is the most of a /revision answer read: a few hundred bytes of JSON, a bounded failure message, the
// history and the previews (the puller refuses a fetcher's answer over the same 256 KiB).
const MaxBytes = 256 << 10

// maxSize bounds a bundle size taken from a pod: far above the CRD's 16Gi maxSize plus tar headers.
const maxSize = 1 << 40

// maxRef bounds a ref's length (Git allows long names; the API's ref field takes 255 characters).
const maxRef = 255

// Revision is a checked /revision answer.
type Revision struct {
	// Digest is the published bundle's hex SHA-256; "" while nothing is published (then Commit is "" too).
	Digest string
	// Size is the bundle's length in bytes: the files and their tar headers.
	Size int64
	// Commit is the full (40 hex digits) hash of the commit published or served.
	Commit string
	// CommitTime is the commit's committer time (zero when the process does not know it).
	CommitTime time.Time
	// Ref is the full ref the commit was fetched from ("" for a pinned commit).
	Ref string
	// Failure is why the last attempt did not publish (the fetcher) or install (a puller); nil after a success.
	Failure *Failure
	// Deploys is the fetcher's history, newest fetched first, checked (deploys.go); none from a puller.
	Deploys []Deploy
	// Pin is the commit the fetcher publishes in place of the ref's newest ("" when it follows the ref).
	Pin string
	// Previews are the fetcher's previews, or those a pod serves, checked (previews.go); PreviewsSkipped the
	// refs left out by the cap; PreviewsTag the fetcher's name of the list, for the long poll.
	Previews        []Preview
	PreviewsSkipped int
	PreviewsTag     string
}

// Published says a commit is there: the fetcher published one, or the pod serves one.
func (r Revision) Published() bool { return r.Digest != "" }

// Failure is a failed attempt, its reason one of the operator's (v1alpha1.ReasonGit*).
type Failure struct {
	// Reason is v1alpha1.ReasonGit<gitsource reason> for a reason the fetcher can give, else
	// v1alpha1.ReasonGitFetchFailed (a local failure, or a name the operator does not know).
	Reason string
	// Message is the process's message, escaped and at most podtext.MaxStatusText bytes.
	Message string
	// Time is when the attempt failed.
	Time time.Time
}

// reasons maps the fetcher's reasons (internal/gitsource's Reason values, spelled here so that the operator does
// not link go-git; the tests hold them to gitsource's constants) to the ContentAvailable reasons.
var reasons = map[string]string{
	"Unreachable":        v1alpha1.ReasonGitUnreachable,
	"AuthFailed":         v1alpha1.ReasonGitAuthFailed,
	"RepositoryNotFound": v1alpha1.ReasonGitRepositoryNotFound,
	"RefNotFound":        v1alpha1.ReasonGitRefNotFound,
	"TooLarge":           v1alpha1.ReasonGitTooLarge,
	"InvalidContent":     v1alpha1.ReasonGitInvalidContent,
	"InvalidSource":      v1alpha1.ReasonGitInvalidSource,
	"Unsupported":        v1alpha1.ReasonGitUnsupported,
}

// answer is the JSON of /revision: internal/contentagent's Revision and Failure, field for field (the tests hold
// the two together), declared here so that the operator does not link the agent and go-git.
type answer struct {
	Digest          string          `json:"digest,omitempty"`
	Size            int64           `json:"size,omitempty"`
	Files           string          `json:"files,omitempty"` // the bundle's file list, for the pullers
	Commit          string          `json:"commit,omitempty"`
	CommitTime      time.Time       `json:"commitTime,omitzero"`
	Ref             string          `json:"ref,omitempty"`
	LastError       *failure        `json:"lastError,omitempty"`
	Deploys         []deployAnswer  `json:"deploys,omitempty"`
	Pin             string          `json:"pin,omitempty"`
	Previews        []previewAnswer `json:"previews,omitempty"`
	PreviewsSkipped int             `json:"previewsSkipped,omitempty"`
	PreviewsTag     string          `json:"previewsTag,omitempty"`
}

// failure is contentagent's Failure.
type failure struct {
	Reason  string    `json:"reason"`
	Message string    `json:"message"`
	Time    time.Time `json:"time"`
}

// ConditionReason is the ContentAvailable reason of a fetcher's failure reason: its Git-prefixed name when the
// fetcher can give it, else GitFetchFailed.
func ConditionReason(reason string) string {
	if r, ok := reasons[reason]; ok {
		return r
	}
	return v1alpha1.ReasonGitFetchFailed
}

// Parse checks an answer of /revision: JSON of contentagent.Revision, at most MaxBytes.
func Parse(data []byte) (Revision, error) {
	if len(data) > MaxBytes {
		return Revision{}, fmt.Errorf("the answer is over %d bytes", MaxBytes)
	}
	var raw answer
	if err := json.Unmarshal(data, &raw); err != nil {
		return Revision{}, fmt.Errorf("the answer is not a revision: %w", err)
	}
	rev := Revision{Digest: raw.Digest, Size: raw.Size, Commit: raw.Commit, CommitTime: raw.CommitTime, Ref: raw.Ref}
	switch {
	case rev.Digest == "" && rev.Commit == "":
		if rev.Size != 0 || rev.Ref != "" {
			return Revision{}, errors.New("the answer has a size or ref without a commit")
		}
		rev.CommitTime = time.Time{}
	case !hex(rev.Digest, 64):
		return Revision{}, fmt.Errorf("digest %q is not 64 lower-case hex digits", podtext.Clean(rev.Digest, 80))
	case !hex(rev.Commit, 40):
		return Revision{}, fmt.Errorf("commit %q is not 40 lower-case hex digits", podtext.Clean(rev.Commit, 80))
	case rev.Size < 0 || rev.Size > maxSize:
		return Revision{}, fmt.Errorf("size %d is not a bundle size", rev.Size)
	case rev.Ref != "" && !validRef(rev.Ref):
		return Revision{}, fmt.Errorf("ref %q is not a full branch or tag name", podtext.Clean(rev.Ref, 80))
	}
	if f := raw.LastError; f != nil {
		rev.Failure = &Failure{
			Reason:  ConditionReason(f.Reason),
			Message: podtext.Clean(strings.TrimSpace(f.Message), podtext.MaxStatusText),
			Time:    f.Time,
		}
	}
	if err := parseDeploys(&rev, raw); err != nil {
		return Revision{}, err
	}
	if err := parsePreviews(&rev, raw); err != nil {
		return Revision{}, err
	}
	return rev, nil
}

// hex says s is n lower-case hex digits.
func hex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// validRef: refs/heads/<name> or refs/tags/<name>, printable ASCII without spaces, at most maxRef bytes.
func validRef(ref string) bool {
	if len(ref) > maxRef || (!strings.HasPrefix(ref, "refs/heads/") && !strings.HasPrefix(ref, "refs/tags/")) {
		return false
	}
	for i := range len(ref) {
		if c := ref[i]; c <= ' ' || c >= 0x7f {
			return false
		}
	}
	return true
}

// Reader reads /revision of the content-agent process listening on port of a pod. The operator uses HTTPReader;
// tests point it at real in-process fetchers and pullers.
type Reader interface {
	Read(ctx context.Context, pod *corev1.Pod, port int) (Revision, error)
}

// HTTPReader reads http://<podIP>:<port>/revision, at once (Read) or as a long poll (Wait).
type HTTPReader struct {
	Client *http.Client
	// WaitClient makes the long polls: its timeout is above the process's own wait (30 s).
	WaitClient *http.Client
}

// NewHTTPReader returns a reader with a short timeout, so a pod that does not answer cannot stall a reconcile, and
// a long-poll client whose timeout is above the process's wait.
func NewHTTPReader() *HTTPReader {
	return &HTTPReader{Client: &http.Client{Timeout: 2 * time.Second}, WaitClient: &http.Client{Timeout: waitClientTimeout}}
}

// waitClientTimeout bounds a long poll: above the content-agent's 30 s wait, so its own timeout ends a quiet poll.
const waitClientTimeout = 45 * time.Second

// Read implements Reader. It never follows a redirect and reads at most MaxBytes.
func (h *HTTPReader) Read(ctx context.Context, pod *corev1.Pod, port int) (Revision, error) {
	return h.get(ctx, h.Client, pod, port, "")
}

// Wait implements Waiter with the process's long poll: ?wait=<digest>&commit=<commit>&failed=<time>&previews=<tag>
// answers when any of the four differs, or when the process's wait ends (then with have's equal). Bounded like Read.
func (h *HTTPReader) Wait(ctx context.Context, pod *corev1.Pod, port int, have Revision) (Revision, error) {
	q := url.Values{"wait": {have.Digest}, "commit": {have.Commit}, "failed": {failureTime(have.Failure)},
		"previews": {have.PreviewsTag}}
	c := h.WaitClient
	if c == nil {
		c = &http.Client{Timeout: waitClientTimeout}
	}
	return h.get(ctx, c, pod, port, "?"+q.Encode())
}

func (h *HTTPReader) get(ctx context.Context, c *http.Client, pod *corev1.Pod, port int, query string) (Revision, error) {
	if pod.Status.PodIP == "" {
		return Revision{}, fmt.Errorf("pod %s has no IP yet", pod.Name)
	}
	u := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + Path + query
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return Revision{}, err
	}
	resp, err := podtext.NoRedirects(c).Do(req)
	if err != nil {
		return Revision{}, fmt.Errorf("GET %s of pod %s: %w", Path, pod.Name, err)
	}
	// Closed without draining: a hostile body is not read to its end.
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Revision{}, fmt.Errorf("GET %s of pod %s: HTTP %d", Path, pod.Name, resp.StatusCode)
	}
	return readAnswer(resp, "GET "+Path, pod)
}

// readAnswer reads and checks a revision answer of at most MaxBytes (an announced longer one is refused unread);
// errors name what was asked (e.g. "GET /revision") and the pod.
func readAnswer(resp *http.Response, what string, pod *corev1.Pod) (Revision, error) {
	if resp.ContentLength > MaxBytes {
		return Revision{}, fmt.Errorf("%s of pod %s: Content-Length %d is over the limit of %d bytes", what, pod.Name, resp.ContentLength, MaxBytes)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	if err != nil {
		return Revision{}, fmt.Errorf("%s of pod %s: %w", what, pod.Name, err)
	}
	rev, err := Parse(data)
	if err != nil {
		return Revision{}, fmt.Errorf("%s of pod %s: %w", what, pod.Name, err)
	}
	return rev, nil
}
