// Package gitwebhook reads the push and pull-request webhooks of GitHub, Gitea and GitLab: it bounds the body it
// reads, checks the request is authentic (an HMAC-SHA256 of the body for GitHub and Gitea, the shared token for
// GitLab, both compared in constant time) before it parses a byte of JSON, and returns what a receiver needs to
// trigger a fetch: the repository's URLs, the ref pushed (or the pull request's ref), and the commit it now
// points at.
package gitwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
)

// DefaultMaxBytes bounds a webhook body when Parse is given 0. Push payloads list at most 20 commits (GitHub) or
// a configurable number (GitLab, 20 by default); 1 MiB holds them with room, and nothing larger is read.
const DefaultMaxBytes = 1 << 20

// Provider names the forge a webhook came from.
type Provider string

const (
	GitHub Provider = "github"
	Gitea  Provider = "gitea"
	GitLab Provider = "gitlab"
)

// Push is one authenticated push event.
type Push struct {
	Provider Provider
	// RepoURLs are the repository's addresses as the forge names them (HTTPS clone URL, SSH URL, web URL);
	// SameRepo compares one with a site's spec.content.git.url.
	RepoURLs []string
	// Ref is the full ref pushed (refs/heads/main, refs/tags/v1).
	Ref string
	// After is the commit the ref points at now; all zeros when the push deleted the ref (Deleted).
	After   string
	Deleted bool
}

// Kind classifies a refused webhook; Status gives the HTTP status to answer with.
type Kind string

const (
	// BadRequest: not a POST, not a known forge's push webhook format, or a body that does not parse.
	BadRequest Kind = "BadRequest"
	// BadSignature: the signature or token is missing or wrong (or no secret is configured: nothing is
	// accepted unauthenticated).
	BadSignature Kind = "BadSignature"
	// NotPush: an authentic event this package does not read (GitHub's ping, an issue comment...), or for Parse
	// one that is not a push: answer 202, do nothing.
	NotPush Kind = "NotPush"
	// TooLarge: the body is over the limit (or its Content-Length says so); it was not read further.
	TooLarge Kind = "TooLarge"
	// Timeout: the body did not arrive before the connection's read deadline (the receiver's bound of one request).
	Timeout Kind = "Timeout"
)

// Error is a refused webhook.
type Error struct {
	Kind Kind
	Msg  string
}

func (e *Error) Error() string { return string(e.Kind) + ": " + e.Msg }

// Status is the HTTP status for the answer: a forge shows it in its delivery log.
func (e *Error) Status() int {
	switch e.Kind {
	case BadSignature:
		return http.StatusUnauthorized
	case NotPush:
		return http.StatusAccepted
	case TooLarge:
		return http.StatusRequestEntityTooLarge
	case Timeout:
		return http.StatusRequestTimeout
	}
	return http.StatusBadRequest
}

func fail(k Kind, format string, args ...any) *Error {
	return &Error{Kind: k, Msg: fmt.Sprintf(format, args...)}
}

// KindOf returns the Kind of a Parse error ("" for nil or another error).
func KindOf(err error) Kind {
	var e *Error
	if errors.As(err, &e) {
		return e.Kind
	}
	return ""
}

// Event is one authenticated delivery this package reads: a push, or a pull (merge) request's change. Exactly one
// of the two is set.
type Event struct {
	Push        *Push
	PullRequest *PullRequest
}

// Parse reads and authenticates r (a forge's webhook delivery) with secret, reading at most maxBytes of body
// (DefaultMaxBytes when 0), and returns its push; any other authentic event is NotPush.
func Parse(r *http.Request, secret []byte, maxBytes int64) (Push, error) {
	ev, err := parseEvent(r, secret, maxBytes, false)
	if err != nil {
		return Push{}, err
	}
	return *ev.Push, nil
}

// ParseEvent reads and authenticates r like Parse and returns its push or pull-request event. The forge is told
// by its event header; Gitea also sends GitHub's headers, so its own are looked at first.
func ParseEvent(r *http.Request, secret []byte, maxBytes int64) (Event, error) {
	return parseEvent(r, secret, maxBytes, true)
}

// parseEvent reads pull-request events only when pulls is set; otherwise they are NotPush unparsed, as every
// event but a push was before previews.
func parseEvent(r *http.Request, secret []byte, maxBytes int64, pulls bool) (Event, error) {
	if r.Method != http.MethodPost {
		return Event{}, fail(BadRequest, "method %s: webhooks are POSTed", r.Method)
	}
	if len(secret) == 0 {
		return Event{}, fail(BadSignature, "no webhook secret is configured: nothing is accepted unauthenticated")
	}
	var provider Provider
	var event string
	switch {
	case r.Header.Get("X-Gitea-Event") != "":
		provider, event = Gitea, r.Header.Get("X-Gitea-Event")
	case r.Header.Get("X-Gitlab-Event") != "":
		provider, event = GitLab, r.Header.Get("X-Gitlab-Event")
	case r.Header.Get("X-GitHub-Event") != "":
		provider, event = GitHub, r.Header.Get("X-GitHub-Event")
	default:
		return Event{}, fail(BadRequest, "no X-GitHub-Event, X-Gitea-Event or X-Gitlab-Event header")
	}
	body, err := readBounded(r.Body, r.ContentLength, maxBytes)
	if err != nil {
		return Event{}, err
	}
	if err := authenticate(provider, r.Header, body, secret); err != nil {
		return Event{}, err
	}
	if provider == GitHub && strings.HasPrefix(r.Header.Get("Content-Type"), "application/x-www-form-urlencoded") {
		// GitHub's other content type: the JSON is the form field "payload"; the signature covers the raw body.
		form, err := url.ParseQuery(string(body))
		if err != nil {
			return Event{}, fail(BadRequest, "form body: %v", err)
		}
		body = []byte(form.Get("payload"))
	}
	switch {
	case provider == GitLab && (event == "Push Hook" || event == "Tag Push Hook"):
		p, err := parseGitLab(body)
		return Event{Push: &p}, err
	case pulls && provider == GitLab && event == "Merge Request Hook":
		pr, err := parseGitLabMergeRequest(body)
		return Event{PullRequest: &pr}, err
	case provider != GitLab && event == "push":
		p, err := parseGitHubLike(provider, body)
		return Event{Push: &p}, err
	case pulls && provider != GitLab && event == "pull_request":
		pr, err := parseGitHubLikePullRequest(provider, body)
		return Event{PullRequest: &pr}, err
	}
	return Event{}, fail(NotPush, "%s event %q", provider, event)
}

// readBounded reads the whole body if it is at most maxBytes long, and stops reading at maxBytes+1 otherwise. A
// body whose declared length (-1: unknown) is over the limit is refused before a byte of it is read.
func readBounded(body io.Reader, declared, maxBytes int64) ([]byte, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if declared > maxBytes {
		return nil, fail(TooLarge, "Content-Length %d is over %d bytes", declared, maxBytes)
	}
	b, err := io.ReadAll(io.LimitReader(body, maxBytes+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		return nil, fail(Timeout, "the body did not arrive in time (%d bytes read)", len(b))
	}
	if err != nil {
		return nil, fail(BadRequest, "reading the body: %v", err)
	}
	if int64(len(b)) > maxBytes {
		return nil, fail(TooLarge, "the body is over %d bytes", maxBytes)
	}
	return b, nil
}

// authenticate checks the forge's proof that the sender knows the secret, in constant time.
func authenticate(p Provider, h http.Header, body, secret []byte) error {
	switch p {
	case GitLab:
		// GitLab sends the secret itself (over the TLS the user terminates in front of the receiver).
		token := h.Get("X-Gitlab-Token")
		if token == "" || subtle.ConstantTimeCompare([]byte(token), secret) != 1 {
			return fail(BadSignature, "X-Gitlab-Token is missing or wrong")
		}
		return nil
	case Gitea:
		return checkHMAC(h.Get("X-Gitea-Signature"), "", "X-Gitea-Signature", body, secret)
	default:
		return checkHMAC(h.Get("X-Hub-Signature-256"), "sha256=", "X-Hub-Signature-256", body, secret)
	}
}

// checkHMAC compares a hex HMAC-SHA256 of body (after prefix) with the one computed with secret.
func checkHMAC(sig, prefix, header string, body, secret []byte) error {
	hexSig, ok := strings.CutPrefix(sig, prefix)
	if sig == "" || !ok {
		return fail(BadSignature, "%s is missing or not %sHEX", header, prefix)
	}
	got, err := hex.DecodeString(hexSig)
	if err != nil {
		return fail(BadSignature, "%s is not hex", header)
	}
	mac := hmac.New(sha256.New, secret)
	mac.Write(body)
	if !hmac.Equal(got, mac.Sum(nil)) {
		return fail(BadSignature, "%s does not match the body and the secret", header)
	}
	return nil
}
