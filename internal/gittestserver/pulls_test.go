package gittestserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/storage/memory"

	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
)

// lsRemote lists the refs the server advertises (what a fetcher's ls-remote sees).
func lsRemote(t *testing.T, url string) map[string]plumbing.Hash {
	t.Helper()
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := rem.List(&git.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]plumbing.Hash{}
	for _, r := range refs {
		out[r.Name().String()] = r.Hash()
	}
	return out
}

// A pull request's ref is written by the forge: it is advertised, fetched at depth 1 like a branch, moved by an
// update, kept after the close (as GitHub, Gitea and GitLab keep it), removed only by the forge's cleanup, and a
// client's push to it is refused with nothing changed.
func TestPullRequestRefs(t *testing.T) {
	s, base := Start(t, "", "", "")
	r := s.NewRepo(t, base, "site.git", nil)
	c1 := r.Commit("main", map[string]File{"index.html": Regular("main")})
	r.Push("refs/heads/main", c1, false)
	c2 := r.Commit("pr", map[string]File{"index.html": Regular("pr one")}, c1)
	r.Push("refs/heads/feature", c2, false)

	for _, forge := range []gitwebhook.Provider{gitwebhook.GitHub, gitwebhook.Gitea, gitwebhook.GitLab} {
		ref := PullRef(forge, 7)
		if err := s.Pull("site.git", PullEvent{Forge: forge, Action: Opened, Number: 7, Head: c2}); err != nil {
			t.Fatal(err)
		}
		if got := lsRemote(t, r.URL)[ref]; got != c2 {
			t.Fatalf("%s: %s advertised at %s, want %s", forge, ref, got, c2)
		}
		repo, err := fetch(r.URL, nil, 1, "+"+ref+":refs/heads/pr")
		if err != nil {
			t.Fatalf("%s: fetching %s: %v", forge, ref, err)
		}
		if _, err := repo.CommitObject(c2); err != nil {
			t.Fatalf("%s: the request's head was not fetched: %v", forge, err)
		}
		if err := s.DeletePullRef("site.git", forge, 7); err != nil {
			t.Fatal(err)
		}
	}
	if got := PullRef(gitwebhook.GitLab, 3); got != "refs/merge-requests/3/head" {
		t.Fatalf("GitLab's ref: %s", got)
	}

	if err := s.Pull("site.git", PullEvent{Forge: gitwebhook.GitHub, Action: Opened, Number: 1, Head: c2}); err != nil {
		t.Fatal(err)
	}
	c3 := r.Commit("pr two", map[string]File{"index.html": Regular("pr two")}, c2)
	if err := s.Pull("site.git", PullEvent{Forge: gitwebhook.GitHub, Action: Updated, Number: 1, Head: c3}); err == nil {
		t.Fatal("a commit not pushed yet was accepted as the request's head")
	}
	r.Push("refs/heads/feature", c3, false)
	if err := s.Pull("site.git", PullEvent{Forge: gitwebhook.GitHub, Action: Updated, Number: 1, Head: c3}); err != nil {
		t.Fatal(err)
	}
	if got := lsRemote(t, r.URL)["refs/pull/1/head"]; got != c3 {
		t.Fatalf("after the update refs/pull/1/head is %s, want %s", got, c3)
	}
	if err := s.Pull("site.git", PullEvent{Forge: gitwebhook.GitHub, Action: Closed, Number: 1, Head: c3}); err != nil {
		t.Fatal(err)
	}
	if got := lsRemote(t, r.URL)["refs/pull/1/head"]; got != c3 {
		t.Fatalf("closing removed or moved the ref (%s): the forges keep it", got)
	}

	// A client's push to the forge's ref is refused, and the ref stays.
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference("refs/pull/1/head", c1)); err != nil {
		t.Fatal(err)
	}
	err := r.repo.Push(&git.PushOptions{RemoteName: "origin", Force: true,
		RefSpecs: []config.RefSpec{"+refs/pull/1/head:refs/pull/1/head"}})
	if err == nil || !strings.Contains(err.Error(), "hidden ref") {
		t.Fatalf("a push to refs/pull/1/head: %v, want refused as a hidden ref", err)
	}
	if got := lsRemote(t, r.URL)["refs/pull/1/head"]; got != c3 {
		t.Fatalf("the refused push moved the ref to %s", got)
	}

	if err := s.DeletePullRef("site.git", gitwebhook.GitHub, 1); err != nil {
		t.Fatal(err)
	}
	if _, ok := lsRemote(t, r.URL)["refs/pull/1/head"]; ok {
		t.Fatal("the forge's cleanup left the ref")
	}
}

// The contract between the test server's pull-request events and internal/gitwebhook, the receiver's parser: each
// forge's format, authenticated its way, reads back as the request, its ref, head and state; another secret is
// refused; Parse, the push-only reader, leaves the events alone.
func TestPullRequestEventsParse(t *testing.T) {
	const repoURL = "http://git.example.test/site.git"
	secret := []byte("s3cret")
	head := plumbing.NewHash("7b2e9d6c0a8f4e1d3c5b7a9f2e4d6c8b0a1f3e5d")
	var got []gitwebhook.Event
	var errs []error
	var pushOnly []gitwebhook.Kind
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Has("push-only") {
			_, err := gitwebhook.Parse(r, secret, 0)
			pushOnly = append(pushOnly, gitwebhook.KindOf(err))
			return
		}
		ev, err := gitwebhook.ParseEvent(r, secret, 0)
		got, errs = append(got, ev), append(errs, err)
		if err != nil {
			w.WriteHeader(http.StatusUnauthorized)
		}
	}))
	defer recv.Close()

	ctx := context.Background()
	cases := []struct {
		forge  gitwebhook.Provider
		action Action
		word   string
		closed bool
		ref    string
	}{
		{gitwebhook.GitHub, Opened, "opened", false, "refs/pull/42/head"},
		{gitwebhook.GitHub, Updated, "synchronize", false, "refs/pull/42/head"},
		{gitwebhook.GitHub, Closed, "closed", true, "refs/pull/42/head"},
		{gitwebhook.Gitea, Opened, "opened", false, "refs/pull/42/head"},
		{gitwebhook.Gitea, Updated, "synchronized", false, "refs/pull/42/head"},
		{gitwebhook.Gitea, Closed, "closed", true, "refs/pull/42/head"},
		{gitwebhook.GitLab, Opened, "open", false, "refs/merge-requests/42/head"},
		{gitwebhook.GitLab, Updated, "update", false, "refs/merge-requests/42/head"},
		{gitwebhook.GitLab, Closed, "close", true, "refs/merge-requests/42/head"},
		{gitwebhook.GitLab, Reopened, "reopen", false, "refs/merge-requests/42/head"},
	}
	for i, c := range cases {
		ev := PullEvent{Forge: c.forge, Action: c.action, Number: 42, Head: head, Branch: "feature", RepoURL: repoURL}
		status, err := ev.Deliver(ctx, recv.Client(), Hook{URL: recv.URL, Secret: secret})
		if err != nil || status != http.StatusOK || errs[i] != nil {
			t.Fatalf("%s %s: status %d, %v, parse %v", c.forge, c.action, status, err, errs[i])
		}
		pr := got[i].PullRequest
		if pr == nil || got[i].Push != nil {
			t.Fatalf("%s %s: parsed as %+v", c.forge, c.action, got[i])
		}
		if pr.Provider != c.forge || pr.Number != 42 || pr.Ref != c.ref || pr.Head != head.String() ||
			pr.Action != c.word || pr.Closed != c.closed || !pr.SameRepo(repoURL) || pr.SameRepo("http://git.example.test/other.git") {
			t.Fatalf("%s %s: parsed %+v", c.forge, c.action, pr)
		}
		// Signed with another secret: refused before a byte of JSON is read.
		status, err = ev.Deliver(ctx, recv.Client(), Hook{URL: recv.URL, Secret: []byte("other")})
		if err != nil || status != http.StatusUnauthorized || gitwebhook.KindOf(errs[len(errs)-1]) != gitwebhook.BadSignature {
			t.Fatalf("%s %s with another secret: status %d, %v, %v", c.forge, c.action, status, err, errs[len(errs)-1])
		}
		got, errs = got[:i+1], errs[:i+1]
		if _, err := ev.Deliver(ctx, recv.Client(), Hook{URL: recv.URL + "?push-only", Secret: secret}); err != nil {
			t.Fatal(err)
		}
	}
	for i, k := range pushOnly {
		if k != gitwebhook.NotPush {
			t.Fatalf("Parse (push only) read event %d as %q, want NotPush", i, k)
		}
	}
}
