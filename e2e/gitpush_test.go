//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// gitRepo is one of the Git server's repositories as the test's pushes see it: a client repository in memory
// (internal/gittestserver: commits built object by object, pushed with go-git, no git binary) whose remote is the
// server's HTTPS port through the loopback port-forward.
type gitRepo struct {
	name string // e.g. "site.git"
	repo *gittestserver.Repo
	tb   *stepTB
	// auth is the client's basic auth; restartWithPassword's new password is set here in place, so the pushes
	// follow it without a new client repository (which would not hold the history).
	auth *githttp.BasicAuth
	// heads and trees are each branch's last pushed commit and its files.
	heads map[string]plumbing.Hash
	trees map[string]map[string]gittestserver.File
}

// stepTB is the testing.TB a gitRepo reports through: the test of the step that uses it. A client repository
// lives across the scenario's steps (subtests), and a failure must end the step that met it, not its parent.
type stepTB struct{ testing.TB }

func (g *gitServer) repo(t *testing.T, name string) *gitRepo {
	t.Helper()
	tb := &stepTB{t}
	auth := &githttp.BasicAuth{Username: gitUsername, Password: g.password}
	url := fmt.Sprintf("https://localhost:%d/%s", g.https.localPort, name)
	return &gitRepo{name: name, tb: tb, auth: auth, repo: gittestserver.NewRemoteRepo(tb, url, auth, g.caPEM),
		heads: map[string]plumbing.Hash{}, trees: map[string]map[string]gittestserver.File{}}
}

// push commits files (the whole tree) on branch, child of its last commit (a new branch's: of main's head), and
// pushes it; it returns the commit and how long the push took.
func (r *gitRepo) push(t *testing.T, branch, msg string, files map[string]gittestserver.File) (plumbing.Hash, time.Duration) {
	t.Helper()
	r.tb.TB = t
	var parents []plumbing.Hash
	if h, ok := r.heads[branch]; ok {
		parents = append(parents, h)
	} else if h, ok := r.heads["main"]; ok {
		// A new branch starts at main's head, as `git switch -c` makes one: a pull request's first commit has
		// production's as its parent, which the fetcher's kept store holds (internal/gitsource/objects.go).
		parents = append(parents, h)
	}
	c := r.repo.Commit(msg, files, parents...)
	start := time.Now()
	r.repo.Push("refs/heads/"+branch, c, false)
	took := time.Since(start)
	r.heads[branch], r.trees[branch] = c, files
	t.Logf("pushed %s to %s %s (%d files) in %s", c.String()[:12], r.name, branch, len(files), took.Round(time.Millisecond))
	return c, took
}

// change pushes branch's tree with some files replaced or added.
func (r *gitRepo) change(t *testing.T, branch, msg string, changed map[string]gittestserver.File) (plumbing.Hash, time.Duration) {
	t.Helper()
	files := maps.Clone(r.trees[branch])
	maps.Copy(files, changed)
	return r.push(t, branch, msg, files)
}

// repush pushes branch's last commit again: into a server restarted empty, the whole history goes.
func (r *gitRepo) repush(t *testing.T, branch string) {
	t.Helper()
	r.tb.TB = t
	r.repo.Push("refs/heads/"+branch, r.heads[branch], false)
}

// webhook is a forge's push webhook to one site's fetcher (Service <site>-git-webhook, port 80), sent from the
// test through a loopback port-forward, signed as GitHub signs it.
type webhook struct {
	pf     *portForward
	secret []byte
}

// pushEvent is the part of a GitHub push payload a receiver reads, with the fields around it a real delivery has.
type pushEvent struct {
	Ref        string `json:"ref"`
	Before     string `json:"before"`
	After      string `json:"after"`
	Created    bool   `json:"created"`
	Deleted    bool   `json:"deleted"`
	Forced     bool   `json:"forced"`
	Repository struct {
		Name     string `json:"name"`
		FullName string `json:"full_name"`
		Private  bool   `json:"private"`
		CloneURL string `json:"clone_url"`
		SSHURL   string `json:"ssh_url"`
		HTMLURL  string `json:"html_url"`
	} `json:"repository"`
	Pusher     map[string]string `json:"pusher"`
	HeadCommit struct {
		ID        string `json:"id"`
		Message   string `json:"message"`
		Timestamp string `json:"timestamp"`
	} `json:"head_commit"`
}

// githubPush is the payload GitHub sends for a push of after (over before) to branch of repo.
func githubPush(repo, branch string, before, after plumbing.Hash, msg string) []byte {
	var e pushEvent
	e.Ref, e.Before, e.After = "refs/heads/"+branch, before.String(), after.String()
	e.Created = before.IsZero()
	e.Repository.Name = strings.TrimSuffix(repo, ".git")
	e.Repository.FullName = "e2e/" + e.Repository.Name
	e.Repository.Private = true
	e.Repository.CloneURL = httpsURL(repo)
	e.Repository.SSHURL = "git@" + gitHost + ":" + repo
	e.Repository.HTMLURL = "https://" + gitHost + "/" + strings.TrimSuffix(repo, ".git")
	e.Pusher = map[string]string{"name": gitUsername, "email": "e2e@example.invalid"}
	e.HeadCommit.ID, e.HeadCommit.Message = after.String(), msg
	e.HeadCommit.Timestamp = time.Now().UTC().Format(time.RFC3339)
	body, _ := json.Marshal(e)
	return body
}

// send POSTs a push event as GitHub does (X-GitHub-Event, X-Hub-Signature-256 = HMAC-SHA256 of the body with
// the webhook secret) and returns the answer's status.
func (w *webhook) send(t *testing.T, body []byte) int {
	t.Helper()
	return w.sendSigned(t, body, w.secret)
}

// sendSigned is send with another key (a forged delivery).
func (w *webhook) sendSigned(t *testing.T, body, key []byte) int {
	t.Helper()
	mac := hmac.New(sha256.New, key)
	mac.Write(body)
	var status int
	err := withForward(t, w.pf, func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+w.pf.addr()+"/hooks", bytes.NewReader(body))
		if err != nil {
			return err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("User-Agent", "GitHub-Hookshot/e2e")
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("e2e-%d", time.Now().UnixNano()))
		req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		resp, err := (&http.Client{Timeout: 10 * time.Second}).Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
		status = resp.StatusCode
		return nil
	})
	if err != nil {
		t.Fatalf("webhook delivery: %v", err)
	}
	return status
}

// pushAndNotify pushes changed files on branch and at once delivers the push webhook, as a forge does; it fails
// unless the fetcher accepts the delivery (2xx). It returns the commit and when the push started.
func pushAndNotify(t *testing.T, r *gitRepo, hook *webhook, branch, msg string, changed map[string]gittestserver.File) (plumbing.Hash, time.Time) {
	t.Helper()
	before := r.heads[branch]
	start := time.Now()
	c, _ := r.change(t, branch, msg, changed)
	if st := hook.send(t, githubPush(r.name, branch, before, c, msg)); st/100 != 2 {
		t.Fatalf("the fetcher answered the push webhook with %d, want 2xx", st)
	}
	t.Logf("webhook for %s delivered %s after the push started", c.String()[:12], time.Since(start).Round(time.Millisecond))
	return c, start
}
