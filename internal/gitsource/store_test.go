package gitsource

import (
	"crypto/rand"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/transport/http"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// site is a small site whose every file says which version it belongs to, so a mix of two commits shows.
func site(version string) map[string]gts.File {
	return map[string]gts.File{
		"index.html":          gts.Regular(version + ":index"),
		"docs/guide.html":     gts.Regular(version + ":guide"),
		"docs/api/index.html": gts.Regular(version + ":api"),
		"assets/app.css":      gts.Regular(version + ":css"),
	}
}

// with returns files plus more (a copy).
func with(files map[string]gts.File, more map[string]gts.File) map[string]gts.File {
	out := map[string]gts.File{}
	for k, v := range files {
		out[k] = v
	}
	for k, v := range more {
		out[k] = v
	}
	return out
}

// newRepo starts a Git server with no auth and returns a client repository pushing to site.git on it.
func newRepo(t *testing.T) *gts.Repo {
	t.Helper()
	s, base := gts.Start(t, "", "", "")
	return s.NewRepo(t, base, "site.git", nil)
}

// newStore is a Store in a fresh directory that keeps its object store beside it, as the fetcher's does: every
// test of a Store also runs the incremental fetches (objects.go).
func newStore(t *testing.T) *Store {
	t.Helper()
	dir := t.TempDir()
	return &Store{Dir: filepath.Join(dir, "content"), Objects: &Objects{Dir: filepath.Join(dir, "objects")}}
}

// servingV1 pushes site("v1") to refs/heads/<branch> of a fresh server and has a fresh Store serve it.
func servingV1(t *testing.T, branch string, maxBytes int64) (*gts.Repo, *Store, plumbing.Hash, Source) {
	t.Helper()
	r := newRepo(t)
	s := newStore(t)
	c1 := r.Commit("v1", site("v1"))
	r.Push("refs/heads/"+branch, c1, false)
	src := Source{URL: r.URL, Ref: branch, MaxBytes: maxBytes}
	mustSync(t, s, src)
	return r, s, c1, src
}

// mustSync syncs and fails the test on error.
func mustSync(t *testing.T, s *Store, src Source) (Revision, bool) {
	t.Helper()
	rev, changed, err := s.Sync(t.Context(), src)
	if err != nil {
		t.Fatalf("Sync(%s): %v", src.Ref, err)
	}
	return rev, changed
}

// readFS reads every regular file under fsys (following links), path → content.
func readFS(t *testing.T, fsys fs.FS) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if st, err := fs.Stat(fsys, p); err == nil && st.IsDir() { // a link to a directory: read what it holds
			sub, err := fs.Sub(fsys, p)
			if err != nil {
				return err
			}
			for q, data := range readFS(t, sub) {
				out[p+"/"+q] = data
			}
			return nil
		}
		b, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		out[p] = string(b)
		return nil
	})
	if err != nil {
		t.Fatalf("walking the served tree: %v", err)
	}
	return out
}

// served reads the tree the Store serves now.
func served(t *testing.T, s *Store) map[string]string {
	t.Helper()
	return readFS(t, os.DirFS(s.Served()))
}

// wantVersion checks every file of tree comes from version and that the tree has exactly the paths of want.
func wantTree(t *testing.T, got map[string]string, want map[string]gts.File) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("served %d files %v, want %d", len(got), keys(got), len(want))
	}
	for p, f := range want {
		if got[p] != f.Data {
			t.Fatalf("%s: served %q, want %q", p, got[p], f.Data)
		}
	}
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// wantReason checks err is an *Error with reason r and that the store still serves commit keep.
func wantReason(t *testing.T, s *Store, err error, r Reason, keep plumbing.Hash) {
	t.Helper()
	if ReasonOf(err) != r {
		t.Fatalf("got error %v (reason %q), want reason %s", err, ReasonOf(err), r)
	}
	cur, cerr := s.Current()
	if cerr != nil || cur != keep.String() {
		t.Fatalf("after the failure the store serves %q (%v), want the last good %s", cur, cerr, keep)
	}
}

// A branch is followed: a new commit pushed on it is fetched and served; an unchanged branch fetches nothing;
// the replaced tree stays one generation and older ones are removed.
func TestFollowsABranchAcrossNewCommits(t *testing.T) {
	r := newRepo(t)
	s := newStore(t)
	c1 := r.Commit("v1", site("v1"))
	r.Push("refs/heads/main", c1, false)
	src := Source{URL: r.URL, Ref: "main"}

	rev, changed := mustSync(t, s, src)
	if !changed || rev.Commit != c1.String() || rev.Ref != "refs/heads/main" || rev.Time.IsZero() {
		t.Fatalf("first sync: %+v changed=%t, want %s on refs/heads/main with its time", rev, changed, c1)
	}
	wantTree(t, served(t, s), site("v1"))
	if _, changed := mustSync(t, s, src); changed {
		t.Fatal("a sync with the branch unchanged published again")
	}

	v2 := site("v2")
	delete(v2, "assets/app.css") // a file removed by the new commit must be gone, not left over
	c2 := r.Commit("v2", v2, c1)
	r.Push("refs/heads/main", c2, false)
	if rev, _ := mustSync(t, s, src); rev.Commit != c2.String() {
		t.Fatalf("after a push: serving %s, want %s", rev.Commit, c2)
	}
	wantTree(t, served(t, s), v2)

	c3 := r.Commit("v3", site("v3"), c2)
	r.Push("refs/heads/main", c3, false)
	mustSync(t, s, src)
	wantTree(t, served(t, s), site("v3"))
	for commit, present := range map[plumbing.Hash]bool{c1: false, c2: true, c3: true} {
		_, err := os.Stat(filepath.Join(s.Dir, commit.String()))
		if (err == nil) != present {
			t.Errorf("tree of %s present=%t, want %t (current and previous kept, older removed)", commit, err == nil, present)
		}
	}
	leftovers, _ := filepath.Glob(filepath.Join(s.Dir, ".*"))
	if len(leftovers) != 0 {
		t.Errorf("scratch directories left behind: %v", leftovers)
	}
}

// A tag (annotated, so it must be peeled) serves its commit while the branch moves on; a commit hash serves that
// commit.
func TestTagAndCommitHash(t *testing.T) {
	r := newRepo(t)
	c1 := r.Commit("v1", site("v1"))
	r.Push("refs/heads/main", c1, false)
	r.Tag("v1.0", c1)
	c2 := r.Commit("v2", site("v2"), c1)
	r.Push("refs/heads/main", c2, false)

	tagged := newStore(t)
	if rev, _ := mustSync(t, tagged, Source{URL: r.URL, Ref: "v1.0"}); rev.Commit != c1.String() || rev.Ref != "refs/tags/v1.0" {
		t.Fatalf("tag v1.0: %+v, want %s via refs/tags/v1.0", rev, c1)
	}
	wantTree(t, served(t, tagged), site("v1"))

	pinned := newStore(t)
	if rev, _ := mustSync(t, pinned, Source{URL: r.URL, Ref: c1.String()}); rev.Commit != c1.String() {
		t.Fatalf("commit %s: served %s", c1, rev.Commit)
	}
	wantTree(t, served(t, pinned), site("v1"))
}

// A force-push that replaces the branch's history is taken like any new commit; a commit hash the force-push
// left unreachable fails with RefNotFound and the last good tree keeps serving.
func TestForcePush(t *testing.T) {
	r := newRepo(t)
	c1 := r.Commit("v1", site("v1"))
	c2 := r.Commit("v2", site("v2"), c1)
	r.Push("refs/heads/main", c2, false)
	branch, pinned := newStore(t), newStore(t)
	mustSync(t, branch, Source{URL: r.URL, Ref: "main"})
	mustSync(t, pinned, Source{URL: r.URL, Ref: c2.String()})

	rewritten := r.Commit("rewritten", site("v3"), c1) // c2 is dropped from the history
	r.Push("refs/heads/main", rewritten, true)
	if rev, _ := mustSync(t, branch, Source{URL: r.URL, Ref: "main"}); rev.Commit != rewritten.String() {
		t.Fatalf("after a force-push: serving %s, want %s", rev.Commit, rewritten)
	}
	wantTree(t, served(t, branch), site("v3"))

	// The pinned store already serves c2: Sync does not fetch again. A fresh store must fetch and be refused.
	fresh := newStore(t)
	_, _, err := fresh.Sync(t.Context(), Source{URL: r.URL, Ref: c2.String()})
	if ReasonOf(err) != RefNotFound {
		t.Fatalf("fetching a commit a force-push left behind: %v, want RefNotFound", err)
	}
	wantTree(t, served(t, pinned), site("v2"))
}

// A branch that disappears fails with RefNotFound, the last good commit keeps serving, and the branch's return
// is taken with no other change.
func TestDeletedRef(t *testing.T) {
	r, s, c1, src := servingV1(t, "preview", 0)

	r.Delete("refs/heads/preview")
	_, _, err := s.Sync(t.Context(), src)
	wantReason(t, s, err, RefNotFound, c1)
	wantTree(t, served(t, s), site("v1"))

	c2 := r.Commit("v2", site("v2"), c1)
	r.Push("refs/heads/preview", c2, false)
	if rev, _ := mustSync(t, s, src); rev.Commit != c2.String() {
		t.Fatalf("after the branch came back: serving %s, want %s", rev.Commit, c2)
	}
}

// A private repository: no credentials or wrong ones fail with AuthFailed (the store keeps what it had);
// Flux-format Secrets with basic auth or a bearer token work.
func TestCredentials(t *testing.T) {
	srv, base := gts.Start(t, "reader", "s3cret", "tok-123")
	r := srv.NewRepo(t, base, "private.git", &http.BasicAuth{Username: "reader", Password: "s3cret"})
	c1 := r.Commit("v1", site("v1"))
	r.Push("refs/heads/main", c1, false)

	for _, tc := range []struct {
		name   string
		secret map[string][]byte
		want   Reason
	}{
		{"no secret", nil, AuthFailed},
		{"wrong password", map[string][]byte{"username": []byte("reader"), "password": []byte("nope")}, AuthFailed},
		{"wrong token", map[string][]byte{"bearerToken": []byte("nope")}, AuthFailed},
		{"basic", map[string][]byte{"username": []byte("reader"), "password": []byte("s3cret")}, ""},
		{"bearer", map[string][]byte{"bearerToken": []byte("tok-123")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, err := AuthFromSecret(r.URL, tc.secret)
			if err != nil {
				t.Fatal(err)
			}
			s := newStore(t)
			_, _, err = s.Sync(t.Context(), Source{URL: r.URL, Ref: "main", Auth: auth})
			if ReasonOf(err) != tc.want || (tc.want == "") != (err == nil) {
				t.Fatalf("got %v, want reason %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Fatalf("the error shows the password: %v", err)
			}
		})
	}
}

// The size limit holds for the packfile (incompressible content: the fetch is cut while it arrives) and for
// the written tree (content that compresses well gets through the pack but not onto the disk).
func TestSizeLimit(t *testing.T) {
	r, s, small, src := servingV1(t, "main", 1<<20)

	noise := make([]byte, 2<<20)
	if _, err := rand.Read(noise); err != nil {
		t.Fatal(err)
	}
	big := r.Commit("noise", with(site("v2"), map[string]gts.File{"video.bin": gts.Regular(string(noise))}), small)
	r.Push("refs/heads/main", big, false)
	_, _, err := s.Sync(t.Context(), src)
	wantReason(t, s, err, TooLarge, small)
	if !strings.Contains(err.Error(), "fetch") {
		t.Errorf("a 2 MiB incompressible file should be stopped in the fetch, got: %v", err)
	}

	zeros := strings.Repeat("\x00", 3<<20)
	wide := r.Commit("zeros", with(site("v3"), map[string]gts.File{"zeros.bin": gts.Regular(zeros)}), small)
	r.Push("refs/heads/main", wide, true)
	_, _, err = s.Sync(t.Context(), src)
	wantReason(t, s, err, TooLarge, small)
	if !strings.Contains(err.Error(), "served tree") {
		t.Errorf("3 MiB of zeros should pass the fetch and be stopped writing the tree, got: %v", err)
	}
	wantTree(t, served(t, s), site("v1"))
}

// What cannot be served as committed is refused with InvalidContent, the last good tree serving: a submodule,
// an LFS pointer, links out of the tree (plainly, absolutely, and through another link), a link to nothing.
func TestRefusedContent(t *testing.T) {
	lfs := "version https://git-lfs.github.com/spec/v1\noid sha256:4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393\nsize 12345\n"
	for name, tc := range map[string]struct {
		extra map[string]gts.File
		says  string
	}{
		"submodule":       {map[string]gts.File{"themes/base": gts.Submodule("0123456789abcdef0123456789abcdef01234567"), ".gitmodules": gts.Regular("[submodule \"themes/base\"]\n")}, "submodule"},
		"lfs pointer":     {map[string]gts.File{"images/hero.png": gts.Regular(lfs)}, "LFS"},
		"link up and out": {map[string]gts.File{"docs/passwd": gts.Symlink("../../etc/passwd")}, "outside"},
		"absolute link":   {map[string]gts.File{"passwd": gts.Symlink("/etc/passwd")}, "outside"},
		// Lexically docs/../here/../current is "current", inside; on disk "here" is the tree itself, so the link
		// climbs to the Store's directory and its existing `current` link: only the resolution on disk sees it.
		"out through a link":    {map[string]gts.File{"here": gts.Symlink("."), "docs/escape": gts.Symlink("../here/../current")}, "resolves outside"},
		"link to nothing":       {map[string]gts.File{"docs/missing": gts.Symlink("nothing.html")}, "points to nothing"},
		"link loop":             {map[string]gts.File{"a": gts.Symlink("b"), "b": gts.Symlink("a")}, "does not resolve"},
		"link to a parent file": {map[string]gts.File{"docs/up": gts.Symlink("../../index.html")}, "outside"},
	} {
		t.Run(name, func(t *testing.T) {
			r, s, good, _ := servingV1(t, "main", 0)
			bad := r.Commit(name, with(site("v2"), tc.extra), good)
			r.Push("refs/heads/main", bad, false)
			_, _, err := s.Sync(t.Context(), Source{URL: r.URL, Ref: "main"})
			wantReason(t, s, err, InvalidContent, good)
			if !strings.Contains(err.Error(), bad.String()) || !strings.Contains(err.Error(), tc.says) {
				t.Errorf("the error should name the commit and say %q: %v", tc.says, err)
			}
			wantTree(t, served(t, s), site("v1"))
		})
	}
}

// Links that stay in the tree are kept as links and served; a submodule outside the served path does not
// matter.
func TestLinksInsideAndPathSelection(t *testing.T) {
	r := newRepo(t)
	s := newStore(t)
	files := map[string]gts.File{
		"README.md":              gts.Regular("not served"),
		"themes/base":            gts.Submodule("0123456789abcdef0123456789abcdef01234567"),
		"public/index.html":      gts.Regular("home"),
		"public/docs/index.html": gts.Regular("docs"),
		"public/latest":          gts.Symlink("docs"),
		"public/docs/home.html":  gts.Symlink("../index.html"),
	}
	c := r.Commit("site", files)
	r.Push("refs/heads/main", c, false)
	mustSync(t, s, Source{URL: r.URL, Ref: "main", Path: "/public/"})
	got := served(t, s)
	want := map[string]string{"index.html": "home", "docs/index.html": "docs", "latest/index.html": "docs", "docs/home.html": "home", "latest/home.html": "home"}
	if len(got) != len(want) {
		t.Fatalf("served %v, want %v", got, want)
	}
	for p, data := range want {
		if got[p] != data {
			t.Fatalf("%s: %q, want %q", p, got[p], data)
		}
	}
	if target, err := os.Readlink(filepath.Join(s.Served(), "latest")); err != nil || target != "docs" {
		t.Fatalf("latest: link %q (%v), want a link to docs", target, err)
	}

	missing := newStore(t)
	_, _, err := missing.Sync(t.Context(), Source{URL: r.URL, Ref: "main", Path: "site"})
	if ReasonOf(err) != InvalidContent {
		t.Fatalf("a path the commit lacks: %v, want InvalidContent", err)
	}
	if _, _, err := missing.Sync(t.Context(), Source{URL: r.URL, Ref: "main", Path: "../up"}); ReasonOf(err) != InvalidSource {
		t.Fatalf("a path climbing out: %v, want InvalidSource", err)
	}
}

// The swap is one rename of the current link: at the last moment before it the link still names the whole old
// tree while the new one is complete beside it; a reader that resolved the link before the swap keeps reading
// the old tree, whole, through its handle; one that resolves it after reads the new tree, whole. Once the old
// tree is pruned (two swaps later) the old handle's reads fail: they never return another commit's bytes.
func TestSwapNeverMixesCommits(t *testing.T) {
	r, s, c1, src := servingV1(t, "main", 0)

	// A reader holding the tree it resolved: a directory handle (openat-style), as the server's loader does.
	old, err := os.OpenRoot(s.Served())
	if err != nil {
		t.Fatal(err)
	}
	defer old.Close()

	c2 := r.Commit("v2", site("v2"), c1)
	r.Push("refs/heads/main", c2, false)
	checked := false
	s.beforeSwap = func(tree string) {
		checked = true
		wantTree(t, served(t, s), site("v1"))              // current still names all of v1...
		wantTree(t, readFS(t, os.DirFS(tree)), site("v2")) // ...while all of v2 is ready
	}
	mustSync(t, s, src)
	if !checked {
		t.Fatal("the swap hook did not run")
	}
	s.beforeSwap = nil
	wantTree(t, readFS(t, old.FS()), site("v1"))
	wantTree(t, served(t, s), site("v2"))

	c3 := r.Commit("v3", site("v3"), c2)
	r.Push("refs/heads/main", c3, false)
	mustSync(t, s, src)
	for p := range site("v1") {
		b, err := old.ReadFile(p)
		if err == nil && !strings.HasPrefix(string(b), "v1:") {
			t.Fatalf("%s through the old handle: %q, another commit's bytes", p, b)
		}
		if err == nil {
			t.Fatalf("%s: the v1 tree should have been pruned two swaps later", p)
		}
	}
	wantTree(t, served(t, s), site("v3"))
}

// The content check (the server's --check in production) refuses a commit: InvalidContent, old tree serving.
func TestCheckRefusesACommit(t *testing.T) {
	r, s, c1, src := servingV1(t, "main", 0)
	s.Check = func(dir string) error {
		if _, err := os.Stat(filepath.Join(dir, "_redirects")); err == nil {
			return errors.New("_redirects:1: bad rule")
		}
		return nil
	}
	c2 := r.Commit("v2", with(site("v2"), map[string]gts.File{"_redirects": gts.Regular("/a\n")}), c1)
	r.Push("refs/heads/main", c2, false)
	_, _, err := s.Sync(t.Context(), src)
	wantReason(t, s, err, InvalidContent, c1)
	if !strings.Contains(err.Error(), "_redirects:1") {
		t.Fatalf("the check's message is lost: %v", err)
	}
}

// No server at the address: Unreachable. A server without that repository: RepositoryNotFound.
func TestUnreachableAndMissingRepository(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close() // nothing listens there any more: connection refused
	_, _, err = newStore(t).Sync(t.Context(), Source{URL: "http://" + addr + "/site.git", Ref: "main"})
	if ReasonOf(err) != Unreachable {
		t.Fatalf("closed port: %v, want Unreachable", err)
	}

	_, base := gts.Start(t, "", "", "")
	_, _, err = newStore(t).Sync(t.Context(), Source{URL: base + "/nope.git", Ref: "main"})
	if ReasonOf(err) != RepositoryNotFound {
		t.Fatalf("missing repository: %v, want RepositoryNotFound", err)
	}
}

// With KeepOlder, publishing keeps every tree (a server may read the previous one until it reloads, and the
// caller knows when that is); Prune then removes all but the current one and the one named, and leftovers.
func TestKeepOlderThenPrune(t *testing.T) {
	s := &Store{Dir: filepath.Join(t.TempDir(), "content"), KeepOlder: true}
	commits := []string{strings.Repeat("a", 40), strings.Repeat("b", 40), strings.Repeat("c", 40)}
	for _, c := range commits {
		err := s.Install(c, func(dir string) error { return os.WriteFile(filepath.Join(dir, "index.html"), []byte(c), 0o644) })
		if err != nil {
			t.Fatal(err)
		}
	}
	present := func() map[string]bool {
		out := map[string]bool{}
		for _, c := range commits {
			_, err := os.Stat(filepath.Join(s.Dir, c))
			out[c[:1]] = err == nil
		}
		return out
	}
	if got := present(); !got["a"] || !got["b"] || !got["c"] {
		t.Fatalf("trees present %v after three installs with KeepOlder, want all", got)
	}
	if err := os.Mkdir(filepath.Join(s.Dir, ".stage-left"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := s.Prune(commits[1]); err != nil {
		t.Fatal(err)
	}
	if got := present(); got["a"] || !got["b"] || !got["c"] {
		t.Errorf("trees present %v after Prune(b), want b and c", got)
	}
	if leftovers, _ := filepath.Glob(filepath.Join(s.Dir, ".stage-*")); len(leftovers) != 0 {
		t.Errorf("Prune left %v", leftovers)
	}
	if cur, _ := s.Current(); cur != commits[2] {
		t.Errorf("current is %s, want %s", cur, commits[2])
	}
}
