package gittestserver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	"github.com/go-git/go-git/v5/storage/memory"
)

// pushTwo pushes two commits on main and returns them (first, second).
func pushTwo(t *testing.T, s *Server, base string, auth transport.AuthMethod) (*Repo, plumbing.Hash, plumbing.Hash) {
	t.Helper()
	r := s.NewRepo(t, base, "site.git", auth)
	c1 := r.Commit("one", map[string]File{"index.html": Regular("one")})
	c2 := r.Commit("two", map[string]File{"index.html": Regular("two"), "a/b.txt": Regular("b")}, c1)
	r.Push("refs/heads/main", c2, false)
	return r, c1, c2
}

func fetch(url string, auth transport.AuthMethod, depth int, spec string) (*git.Repository, error) {
	repo, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		return nil, err
	}
	rem, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}})
	if err != nil {
		return nil, err
	}
	return repo, rem.Fetch(&git.FetchOptions{Auth: auth, Depth: depth, RefSpecs: []config.RefSpec{config.RefSpec(spec)}, Tags: git.NoTags})
}

// A depth-1 fetch gets the tip commit and its tree, and not its parent: the server honours the depth.
func TestShallowFetchSendsOnlyTheTip(t *testing.T) {
	s, base := Start(t, "", "", "")
	r, c1, c2 := pushTwo(t, s, base, nil)
	repo, err := fetch(r.URL, nil, 1, "refs/heads/main:refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	c, err := repo.CommitObject(c2)
	if err != nil {
		t.Fatalf("the tip is missing: %v", err)
	}
	if _, err := c.File("a/b.txt"); err != nil {
		t.Fatalf("the tip's tree is incomplete: %v", err)
	}
	if _, err := repo.CommitObject(c1); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Fatalf("the parent was sent on a depth-1 fetch (err %v)", err)
	}
	full, err := fetch(r.URL, nil, 0, "refs/heads/main:refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := full.CommitObject(c1); err != nil {
		t.Fatalf("a full fetch lacks the parent: %v", err)
	}
}

// A commit is fetched by its hash while reachable, and refused ("not our ref") once a force-push left it behind.
func TestWantOfACommitMustBeReachable(t *testing.T) {
	s, base := Start(t, "", "", "")
	r, c1, c2 := pushTwo(t, s, base, nil)
	if _, err := fetch(r.URL, nil, 1, c1.String()+":refs/heads/pinned"); err != nil {
		t.Fatalf("fetching a reachable commit by hash: %v", err)
	}
	other := r.Commit("other", map[string]File{"x": Regular("x")})
	r.Push("refs/heads/main", other, true)
	_, err := fetch(r.URL, nil, 1, c2.String()+":refs/heads/pinned")
	if err == nil {
		t.Fatal("an unreachable commit was served")
	}
	if !strings.Contains(err.Error(), "not our ref") {
		t.Fatalf("want the server's \"not our ref\", got %v", err)
	}
}

// With credentials configured, a fetch without them or with wrong ones is refused, with the right ones served.
func TestBasicAndBearerAuth(t *testing.T) {
	s, base := Start(t, "user", "secret", "tok")
	good := &http.BasicAuth{Username: "user", Password: "secret"}
	r, _, _ := pushTwo(t, s, base, good)
	for name, auth := range map[string]transport.AuthMethod{
		"none":         nil,
		"wrong":        &http.BasicAuth{Username: "user", Password: "nope"},
		"wrong bearer": &http.TokenAuth{Token: "nope"},
	} {
		if _, err := fetch(r.URL, auth, 1, "refs/heads/main:refs/heads/main"); !errors.Is(err, transport.ErrAuthenticationRequired) {
			t.Errorf("%s: got %v, want ErrAuthenticationRequired", name, err)
		}
	}
	for name, auth := range map[string]transport.AuthMethod{"basic": good, "bearer": &http.TokenAuth{Token: "tok"}} {
		if _, err := fetch(r.URL, auth, 1, "refs/heads/main:refs/heads/main"); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// git's own client fetches at a depth in two stateless requests: the first (wants, deepen, flush, no "done")
// must be answered with the shallow lines alone, or git reads the rest as the next answer and fails ("expected
// shallow list"); the second, with "done", gets the shallow lines, a NAK and the packfile.
func TestStatelessDepthRoundsAsGitSendsThem(t *testing.T) {
	s, base := Start(t, "", "", "")
	r, _, c2 := pushTwo(t, s, base, nil)
	var req bytes.Buffer
	enc := pktline.NewEncoder(&req)
	if err := enc.Encodef("want %s ofs-delta agent=git/2.39.5\n", c2); err != nil {
		t.Fatal(err)
	}
	if err := enc.Encodef("deepen 1\n"); err != nil {
		t.Fatal(err)
	}
	if err := enc.Flush(); err != nil {
		t.Fatal(err)
	}
	first := post(t, r.URL, req.Bytes())
	want := fmt.Sprintf("%04xshallow %s\n0000", 4+len("shallow \n")+40, c2)
	if first != want {
		t.Fatalf("first round answered %q, want only the shallow lines %q", first, want)
	}
	if err := enc.EncodeString("done\n"); err != nil {
		t.Fatal(err)
	}
	second := post(t, r.URL, req.Bytes())
	if !strings.HasPrefix(second, want+"0008NAK\nPACK") {
		t.Fatalf("second round answered %q..., want the shallow lines, NAK, then the packfile", second[:min(len(second), 120)])
	}
}

func post(t *testing.T, repoURL string, body []byte) string {
	t.Helper()
	resp, err := nethttp.Post(repoURL+"/git-upload-pack", "application/x-git-upload-pack-request", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
