package gitwebhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
)

const (
	secret = "It's a Secret to Everybody"
	after  = "7b2e9d6c0a8f4e1d3c5b7a9f2e4d6c8b0a1f3e5d"
)

// Payloads in each forge's format (trimmed of fields this package does not read, but shaped as sent).
const gitHubPushBody = `{
  "ref": "refs/heads/main",
  "before": "1f0e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6",
  "after": "` + after + `",
  "created": false, "deleted": false, "forced": false, "base_ref": null,
  "compare": "https://github.com/example/site/compare/1f0e2d3c4b5a...7b2e9d6c0a8f",
  "commits": [{"id": "` + after + `", "message": "Update index", "timestamp": "2026-11-27T12:00:00Z",
    "author": {"name": "A", "email": "a@example.com"}, "added": [], "removed": [], "modified": ["index.html"]}],
  "head_commit": {"id": "` + after + `", "message": "Update index"},
  "repository": {"id": 1, "name": "site", "full_name": "example/site", "private": true,
    "html_url": "https://github.com/example/site", "clone_url": "https://github.com/example/site.git",
    "ssh_url": "git@github.com:example/site.git", "git_url": "git://github.com/example/site.git", "default_branch": "main"},
  "pusher": {"name": "a", "email": "a@example.com"},
  "sender": {"login": "a", "id": 2}
}`

const gitHubDelete = `{"ref": "refs/heads/preview", "before": "` + after + `",
  "after": "0000000000000000000000000000000000000000", "created": false, "deleted": true, "forced": false,
  "commits": [], "head_commit": null,
  "repository": {"html_url": "https://github.com/example/site", "clone_url": "https://github.com/example/site.git",
    "ssh_url": "git@github.com:example/site.git"}}`

const gitHubPing = `{"zen": "Keep it logically awesome.", "hook_id": 3, "hook": {"type": "Repository", "events": ["push"]}}`

const giteaPush = `{
  "ref": "refs/tags/v1.2.0", "before": "0000000000000000000000000000000000000000", "after": "` + after + `",
  "compare_url": "", "commits": [], "total_commits": 0, "head_commit": null,
  "repository": {"id": 5, "owner": {"login": "docs"}, "name": "site", "full_name": "docs/site", "private": true,
    "html_url": "https://gitea.example.com/docs/site", "ssh_url": "git@gitea.example.com:docs/site.git",
    "clone_url": "https://gitea.example.com/docs/site.git", "default_branch": "main"},
  "pusher": {"login": "docs"}, "sender": {"login": "docs"}
}`

const gitLabPushBody = `{
  "object_kind": "push", "event_name": "push",
  "before": "1f0e2d3c4b5a69788796a5b4c3d2e1f0a9b8c7d6", "after": "` + after + `",
  "ref": "refs/heads/main", "ref_protected": true, "checkout_sha": "` + after + `",
  "user_id": 4, "user_name": "A", "user_username": "a", "project_id": 15,
  "project": {"id": 15, "name": "site", "web_url": "https://gitlab.example.com/group/site",
    "git_ssh_url": "git@gitlab.example.com:group/site.git", "git_http_url": "https://gitlab.example.com/group/site.git",
    "path_with_namespace": "group/site", "default_branch": "main"},
  "commits": [{"id": "` + after + `", "message": "Update", "timestamp": "2026-11-27T12:00:00+00:00"}],
  "total_commits_count": 1,
  "repository": {"name": "site", "url": "git@gitlab.example.com:group/site.git", "homepage": "https://gitlab.example.com/group/site"}
}`

const gitLabMergeRequest = `{"object_kind": "merge_request", "event_type": "merge_request",
  "project": {"web_url": "https://gitlab.example.com/group/site"}, "object_attributes": {"iid": 1, "state": "opened"}}`

func sign(prefix, body string) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(body))
	return prefix + hex.EncodeToString(mac.Sum(nil))
}

func request(body string, headers map[string]string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, "/hooks/site", strings.NewReader(body))
	r.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		r.Header.Set(k, v)
	}
	return r
}

func TestParse(t *testing.T) {
	form := "payload=" + url.QueryEscape(gitHubPushBody)
	for _, tc := range []struct {
		name    string
		req     *http.Request
		secret  string
		max     int64
		want    Kind // "" for a push
		ref     string
		deleted bool
		repo    string
	}{
		{name: "github push", req: request(gitHubPushBody, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("sha256=", gitHubPushBody)}),
			ref: "refs/heads/main", repo: "https://github.com/example/site"},
		{name: "github push, form-encoded", req: request(form, map[string]string{"Content-Type": "application/x-www-form-urlencoded",
			"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("sha256=", form)}), ref: "refs/heads/main", repo: "git@github.com:example/site.git"},
		{name: "github branch deleted", req: request(gitHubDelete, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("sha256=", gitHubDelete)}),
			ref: "refs/heads/preview", deleted: true, repo: "https://github.com/example/site.git"},
		{name: "github wrong signature", req: request(gitHubPushBody, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("sha256=", gitHubPushBody+" ")}), want: BadSignature},
		{name: "github signature without prefix", req: request(gitHubPushBody, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("", gitHubPushBody)}), want: BadSignature},
		{name: "github no signature", req: request(gitHubPushBody, map[string]string{"X-GitHub-Event": "push"}), want: BadSignature},
		{name: "github old sha1 signature only", req: request(gitHubPushBody, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature": "sha1=0000"}), want: BadSignature},
		{name: "github ping", req: request(gitHubPing, map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": sign("sha256=", gitHubPing)}), want: NotPush},
		{name: "unsigned ping is not even a ping", req: request(gitHubPing, map[string]string{"X-GitHub-Event": "ping"}), want: BadSignature},
		{name: "gitea tag push (with GitHub's headers too)", req: request(giteaPush, map[string]string{"X-Gitea-Event": "push", "X-GitHub-Event": "push",
			"X-Gitea-Signature": sign("", giteaPush), "X-Hub-Signature-256": "sha256=00"}), ref: "refs/tags/v1.2.0", repo: "https://gitea.example.com/docs/site.git"},
		{name: "gitea wrong signature", req: request(giteaPush, map[string]string{"X-Gitea-Event": "push", "X-Gitea-Signature": sign("", "{}")}), want: BadSignature},
		{name: "gitlab push", req: request(gitLabPushBody, map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret}),
			ref: "refs/heads/main", repo: "ssh://git@gitlab.example.com/group/site"},
		{name: "gitlab wrong token", req: request(gitLabPushBody, map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": secret[:len(secret)-1]}), want: BadSignature},
		{name: "gitlab no token", req: request(gitLabPushBody, map[string]string{"X-Gitlab-Event": "Push Hook"}), want: BadSignature},
		{name: "gitlab merge request", req: request(gitLabMergeRequest, map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": secret}), want: NotPush},
		{name: "over the size limit", req: request(gitHubPushBody, map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("sha256=", gitHubPushBody)}), max: 100, want: TooLarge},
		{name: "no secret configured", req: request(gitLabPushBody, map[string]string{"X-Gitlab-Event": "Push Hook", "X-Gitlab-Token": ""}), secret: "-", want: BadSignature},
		{name: "unknown sender", req: request(gitHubPushBody, map[string]string{"X-Hub-Signature-256": sign("sha256=", gitHubPushBody)}), want: BadRequest},
		{name: "signed garbage", req: request("{", map[string]string{"X-GitHub-Event": "push", "X-Hub-Signature-256": sign("sha256=", "{")}), want: BadRequest},
		{name: "GET", req: httptest.NewRequest(http.MethodGet, "/hooks/site", nil), want: BadRequest},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := []byte(secret)
			if tc.secret == "-" {
				s = nil
			}
			p, err := Parse(tc.req, s, tc.max)
			if tc.want != "" {
				if KindOf(err) != tc.want {
					t.Fatalf("got %+v, %v; want a %s error", p, err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			wantAfter := after
			if tc.deleted {
				wantAfter = zeroCommit
			}
			if p.Ref != tc.ref || p.After != wantAfter || p.Deleted != tc.deleted {
				t.Fatalf("got %+v, want ref %s after %s deleted %t", p, tc.ref, wantAfter, tc.deleted)
			}
			if !p.SameRepo(tc.repo) {
				t.Fatalf("push for %v does not match %s", p.RepoURLs, tc.repo)
			}
			if p.SameRepo("https://github.com/example/other.git") || p.SameRepo("https://evil.example/example/site.git") {
				t.Fatalf("push for %v matches another repository", p.RepoURLs)
			}
		})
	}
}

// The body is read only up to the limit (plus one byte to tell): a huge body is not read whole.
func TestReadStopsAtTheLimit(t *testing.T) {
	body := &countingReader{left: 10 << 20}
	r := httptest.NewRequest(http.MethodPost, "/", body)
	r.Header.Set("X-GitHub-Event", "push")
	_, err := Parse(r, []byte(secret), 1024)
	if KindOf(err) != TooLarge {
		t.Fatalf("got %v, want TooLarge", err)
	}
	if body.read > 1025+32<<10 { // io.ReadAll's buffer may ask for a little more; far from 10 MiB
		t.Fatalf("read %d bytes of a 10 MiB body with a 1 KiB limit", body.read)
	}
}

// A Content-Length over the limit is refused before a byte of the body is read: a sender cannot make the receiver
// hold the limit's worth of body just by announcing it.
func TestDeclaredLengthOverTheLimitReadsNothing(t *testing.T) {
	body := &countingReader{left: 10 << 20}
	r := httptest.NewRequest(http.MethodPost, "/", body)
	r.ContentLength = 10 << 20
	r.Header.Set("X-GitHub-Event", "push")
	_, err := Parse(r, []byte(secret), 1024)
	if KindOf(err) != TooLarge || body.read != 0 {
		t.Fatalf("got %v after reading %d bytes, want TooLarge with nothing read", err, body.read)
	}
}

// A body cut by the connection's read deadline is a Timeout (408), told apart from a malformed one in the metrics.
func TestBodyPastTheDeadlineIsATimeout(t *testing.T) {
	r := httptest.NewRequest(http.MethodPost, "/", io.MultiReader(strings.NewReader(`{"ref":`), deadlineReader{}))
	r.Header.Set("X-GitHub-Event", "push")
	_, err := Parse(r, []byte(secret), 0)
	var e *Error
	if !errors.As(err, &e) || e.Kind != Timeout || e.Status() != http.StatusRequestTimeout {
		t.Fatalf("got %v, want a Timeout answered 408", err)
	}
}

// deadlineReader fails as a socket read does once its deadline has passed.
type deadlineReader struct{}

func (deadlineReader) Read([]byte) (int, error) {
	return 0, &net.OpError{Op: "read", Net: "tcp", Err: os.ErrDeadlineExceeded}
}

type countingReader struct{ left, read int }

func (c *countingReader) Read(p []byte) (int, error) {
	if c.left == 0 {
		return 0, nil
	}
	n := min(len(p), c.left)
	for i := range p[:n] {
		p[i] = 'x'
	}
	c.left -= n
	c.read += n
	return n, nil
}
