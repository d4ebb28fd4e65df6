package gittestserver

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/pktline"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// client is a go-git repository (in memory) that fetches main at depth 1 again and again, keeping its objects
// and sending a have for what it holds: what a fetcher keeping its object store does.
type client struct {
	t    *testing.T
	s    *Server
	url  string
	repo *git.Repository
}

func newClient(t *testing.T, s *Server, url string) *client {
	t.Helper()
	repo, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
		t.Fatal(err)
	}
	return &client{t: t, s: s, url: url, repo: repo}
}

// fetch fetches branch at depth and returns what the server sent for it.
func (c *client) fetch(branch string, depth int) UploadStats {
	c.t.Helper()
	before := c.s.Uploads()
	err := c.repo.Fetch(&git.FetchOptions{Depth: depth, Tags: git.NoTags,
		RefSpecs: []config.RefSpec{config.RefSpec("+refs/heads/" + branch + ":refs/remotes/origin/" + branch)}})
	if err != nil {
		c.t.Fatalf("fetching %s: %v", branch, err)
	}
	return c.s.Uploads().Sub(before)
}

// wantFiles checks the client holds commit with exactly files (every blob readable).
func (c *client) wantFiles(commit plumbing.Hash, files map[string]File) {
	c.t.Helper()
	co, err := c.repo.CommitObject(commit)
	if err != nil {
		c.t.Fatalf("commit %s: %v", commit, err)
	}
	n := 0
	iter, err := co.Files()
	if err != nil {
		c.t.Fatal(err)
	}
	err = iter.ForEach(func(f *object.File) error {
		n++
		got, err := f.Contents()
		if err != nil {
			return fmt.Errorf("%s: %w", f.Name, err)
		}
		if got != files[f.Name].Data {
			return fmt.Errorf("%s holds %q, want %q", f.Name, got, files[f.Name].Data)
		}
		return nil
	})
	if err != nil || n != len(files) {
		c.t.Fatalf("commit %s: %d files (want %d): %v", commit, n, len(files), err)
	}
}

// pages are n files, each with its own content.
func pages(n int, version string) map[string]File {
	out := map[string]File{}
	for i := range n {
		out[fmt.Sprintf("docs/page%02d.html", i)] = Regular(fmt.Sprintf("%s page %d", version, i))
	}
	return out
}

// A client holding a commit (a depth-1 clone) fetches its one-page child: at depth 1 the server sends all 23
// objects however the have is answered, as git's upload-pack does for a client without thin packs (the commit sent
// has no parent in the walk); at depth 2 the have is the new commit's parent, and only the commit, the trees on
// the page's path and the page are sent. Before, this server sent all 23 at depth 2 too.
func TestHavesSaveWhatTheParentHolds(t *testing.T) {
	s, base := Start(t, "", "", "")
	r := s.NewRepo(t, base, "site.git", nil)
	files := pages(20, "v1")
	c1 := r.Commit("one", files)
	r.Push("refs/heads/main", c1, false)
	atDepth1, atDepth2 := newClient(t, s, r.URL), newClient(t, s, r.URL)
	if got := atDepth1.fetch("main", 1); got.Objects != 1+2+20 {
		t.Fatalf("the first fetch sent %d objects, want the commit, 2 trees and 20 blobs", got.Objects)
	}
	atDepth2.fetch("main", 1)
	files["docs/page07.html"] = Regular("v2 page 7")
	c2 := r.Commit("two", files, c1)
	r.Push("refs/heads/main", c2, false)
	if got := atDepth1.fetch("main", 1); got.Objects != 1+2+20 {
		t.Fatalf("at depth 1 the server sent %d objects, want all 23 (as git does without thin packs)", got.Objects)
	}
	if got := atDepth2.fetch("main", 2); got.Packs != 1 || got.Objects != 4 {
		t.Fatalf("at depth 2 the server sent %+v, want one pack of 4 objects (commit, root tree, docs/, the page)", got)
	}
	atDepth2.wantFiles(c2, files)
}

// A pull request based on the parent of the client's (shallow) commit gets that parent and its tree sent: the
// client's shallow line bounds what its have reaches. With IgnoreClientShallows the parent counts as the client's
// and its tree is left out (the client lacks it); with IgnoreHaves everything is sent. The fetcher's fallbacks
// are tested against both faults.
func TestHavesStopAtTheClientsShallowsAndFaults(t *testing.T) {
	s, base := Start(t, "", "", "")
	r := s.NewRepo(t, base, "site.git", nil)
	c1 := r.Commit("one", map[string]File{"a": Regular("old a"), "b": Regular("b")})
	c2 := r.Commit("two", map[string]File{"a": Regular("new a"), "b": Regular("b")}, c1)
	r.Push("refs/heads/main", c2, false)
	right, faulty := newClient(t, s, r.URL), newClient(t, s, r.URL)
	right.fetch("main", 1)
	faulty.fetch("main", 1)
	pr := map[string]File{"a": Regular("old a"), "b": Regular("b"), "c": Regular("c")}
	head := r.Commit("pr", pr, c1)
	r.Push("refs/heads/pr", head, false)

	if got := right.fetch("pr", 2); got.Objects != 7 {
		t.Fatalf("sent %d objects, want 7 (both commits, both trees, a, b, c)", got.Objects)
	}
	right.wantFiles(head, pr)

	s.SetFaults(Faults{IgnoreClientShallows: true})
	if got := faulty.fetch("pr", 2); got.Objects != 3 {
		t.Fatalf("walking past the shallow commit sent %d objects, want 3 (commit, tree, c: not the old a)", got.Objects)
	}
	if _, err := faulty.repo.BlobObject(plumbing.ComputeHash(plumbing.BlobObject, []byte("old a"))); !errors.Is(err, plumbing.ErrObjectNotFound) {
		t.Fatalf("the old a reached the client (err %v): the fault did not happen", err)
	}

	s.SetFaults(Faults{IgnoreHaves: true})
	next := with(pr, "d", "d")
	r.Push("refs/heads/pr", r.Commit("four", next, head), false)
	if got := right.fetch("pr", 2); got.Objects != 2+2+4 {
		t.Fatalf("ignoring the haves sent %d objects, want all 8 (both commits, both trees, 4 blobs)", got.Objects)
	}
}

func with(files map[string]File, name, data string) map[string]File {
	out := map[string]File{name: Regular(data)}
	for k, v := range files {
		if k != name {
			out[k] = v
		}
	}
	return out
}

// Over HTTP (stateless) the first have the repository holds is ACKed and the pack follows "done" with no NAK; a
// have it does not hold gets a NAK, then "done" another, as git's upload-pack answers without multi_ack.
func TestStatelessHavesAreAnsweredAsGitDoes(t *testing.T) {
	s, base := Start(t, "", "", "")
	r, c1, c2 := pushTwo(t, s, base, nil)
	request := func(haves ...string) string {
		var req bytes.Buffer
		enc := pktline.NewEncoder(&req)
		for _, line := range []string{fmt.Sprintf("want %s ofs-delta\n", c2), fmt.Sprintf("shallow %s\n", c1), "deepen 1\n"} {
			if err := enc.EncodeString(line); err != nil {
				t.Fatal(err)
			}
		}
		_ = enc.Flush()
		for _, h := range haves {
			_ = enc.Encodef("have %s\n", h)
		}
		_ = enc.Flush()
		_ = enc.EncodeString("done\n")
		return post(t, r.URL, req.Bytes())
	}
	shallow := fmt.Sprintf("%04xshallow %s\n0000", 4+len("shallow \n")+40, c2)
	unknown := strings.Repeat("ab", 20)
	if got := request(unknown, c1.String()); !strings.HasPrefix(got, fmt.Sprintf("%s0031ACK %s\nPACK", shallow, c1)) {
		t.Fatalf("with a common have: %q..., want the shallow lines, one ACK, then the pack", got[:min(len(got), 160)])
	}
	if got := request(unknown); !strings.HasPrefix(got, shallow+"0008NAK\n0008NAK\nPACK") {
		t.Fatalf("with no common have: %q..., want a NAK for the flush, one for done, then the pack", got[:min(len(got), 160)])
	}
}
