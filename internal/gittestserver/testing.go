package gittestserver

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	mathrand "math/rand/v2"
	"net"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
	"golang.org/x/crypto/ssh"

	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// Start serves a fresh directory of repositories on loopback for the length of the test and returns the server
// and its base URL (http://127.0.0.1:port).
func Start(t testing.TB, username, password, bearerToken string) (*Server, string) {
	t.Helper()
	s := New(t.TempDir(), username, password, bearerToken)
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return s, ts.URL
}

// StartTLS is Start over HTTPS: the server's certificate, for the name localhost, is signed by a CA made for the
// test, returned as PEM (what a site's Secret holds as ca.crt). The base URL is https://localhost:port, and the
// Repos of NewRepo trust that CA for their pushes.
func StartTLS(t testing.TB, username, password, bearerToken string) (s *Server, baseURL string, caPEM []byte) {
	t.Helper()
	s = New(t.TempDir(), username, password, bearerToken)
	ca := testcerts.NewCA(t)
	certPEM, keyPEM := ca.Issue(t, testcerts.Options{}, "localhost")
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(s)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes the tests make fail on purpose
	ts.StartTLS()
	t.Cleanup(ts.Close)
	s.repoCA = ca.PEM
	_, port, err := net.SplitHostPort(ts.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	return s, "https://localhost:" + port, ca.PEM
}

// File is one entry of a commit built by Repo.Commit: a regular file, a symbolic link or a submodule.
type File struct {
	Mode filemode.FileMode
	// Data is the file's content or the link's target; for a submodule, the commit it pins (hex).
	Data string
}

// Regular, Symlink and Submodule build the entries of a commit.
func Regular(data string) File   { return File{Mode: filemode.Regular, Data: data} }
func Symlink(target string) File { return File{Mode: filemode.Symlink, Data: target} }
func Submodule(commit string) File {
	return File{Mode: filemode.Submodule, Data: commit}
}

// Repo is a client-side repository (in memory) whose commits the test pushes to a bare repository of the server.
// Commits are built object by object, not through a worktree, so a test can make any tree a forge could hold:
// links that point anywhere, submodule entries, files of any size.
type Repo struct {
	t    testing.TB
	repo *git.Repository
	// URL is the bare repository's address on the server.
	URL  string
	auth transport.AuthMethod
	// clock is the commit time, a fixed start advanced one second per commit: commits are reproducible.
	clock time.Time
	// caBundle (PEM) is trusted besides the system's roots when pushing over https (NewRemoteRepo).
	caBundle []byte
}

// NewRepo creates the bare repository Root/name on the server and a client repository pushing to it with auth.
func (s *Server) NewRepo(t testing.TB, baseURL, name string, auth transport.AuthMethod) *Repo {
	t.Helper()
	if _, err := git.PlainInit(filepath.Join(s.Root, name), true); err != nil {
		t.Fatalf("creating the bare repository %s: %v", name, err)
	}
	local, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	url := baseURL + "/" + name
	if _, err := local.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}}); err != nil {
		t.Fatal(err)
	}
	return &Repo{t: t, repo: local, URL: url, auth: auth, caBundle: s.repoCA, clock: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
}

// Commit stores a commit holding exactly files (path → entry) with the given parents, and returns its hash.
func (r *Repo) Commit(msg string, files map[string]File, parents ...plumbing.Hash) plumbing.Hash {
	r.t.Helper()
	tree := r.tree("", files)
	r.clock = r.clock.Add(time.Second)
	sig := object.Signature{Name: "Test", Email: "test@example.invalid", When: r.clock}
	c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: tree, ParentHashes: parents}
	return r.store(c)
}

// tree stores the tree of the entries under dir ("" for the root) and returns its hash.
func (r *Repo) tree(dir string, files map[string]File) plumbing.Hash {
	children := map[string]bool{}
	var entries []object.TreeEntry
	for p, f := range files {
		rel := p
		if dir != "" {
			var ok bool
			if rel, ok = strings.CutPrefix(p, dir+"/"); !ok {
				continue
			}
		}
		if name, _, nested := strings.Cut(rel, "/"); nested {
			if !children[name] {
				children[name] = true
				entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: r.tree(join(dir, name), files)})
			}
			continue
		}
		h := plumbing.NewHash(f.Data)
		if f.Mode != filemode.Submodule {
			h = r.blob(f.Data)
		}
		entries = append(entries, object.TreeEntry{Name: rel, Mode: f.Mode, Hash: h})
	}
	// Git orders entries by name, a directory's name compared as if it ended in "/".
	sort.Slice(entries, func(i, j int) bool { return sortKey(entries[i]) < sortKey(entries[j]) })
	return r.store(&object.Tree{Entries: entries})
}

func sortKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

func join(dir, name string) string {
	if dir == "" {
		return name
	}
	return dir + "/" + name
}

func (r *Repo) blob(data string) plumbing.Hash {
	obj := r.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	w, err := obj.Writer()
	if err != nil {
		r.t.Fatal(err)
	}
	if _, err := w.Write([]byte(data)); err != nil {
		r.t.Fatal(err)
	}
	_ = w.Close()
	h, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

func (r *Repo) store(o interface {
	Encode(plumbing.EncodedObject) error
}) plumbing.Hash {
	obj := r.repo.Storer.NewEncodedObject()
	if err := o.Encode(obj); err != nil {
		r.t.Fatal(err)
	}
	h, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		r.t.Fatal(err)
	}
	return h
}

// Push sets the local ref (e.g. "refs/heads/main" or "refs/tags/v1") to commit and pushes it; force allows a
// non-fast-forward update (a force-push).
func (r *Repo) Push(ref string, commit plumbing.Hash, force bool) {
	r.t.Helper()
	name := plumbing.ReferenceName(ref)
	if err := r.repo.Storer.SetReference(plumbing.NewHashReference(name, commit)); err != nil {
		r.t.Fatal(err)
	}
	spec := config.RefSpec(ref + ":" + ref)
	if force {
		spec = "+" + spec
	}
	err := r.repo.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{spec}, Auth: r.auth, Force: force, CABundle: r.caBundle})
	if err != nil {
		r.t.Fatalf("pushing %s to %s: %v", ref, commit, err)
	}
}

// Delete removes ref from the server.
func (r *Repo) Delete(ref string) {
	r.t.Helper()
	err := r.repo.Push(&git.PushOptions{RemoteName: "origin", RefSpecs: []config.RefSpec{config.RefSpec(":" + ref)}, Auth: r.auth, CABundle: r.caBundle})
	if err != nil {
		r.t.Fatalf("deleting %s: %v", ref, err)
	}
}

// Tag stores an annotated tag object named name pointing at commit, and pushes refs/tags/<name> to it.
func (r *Repo) Tag(name string, commit plumbing.Hash) plumbing.Hash {
	r.t.Helper()
	sig := object.Signature{Name: "Test", Email: "test@example.invalid", When: r.clock}
	h := r.store(&object.Tag{Name: name, Tagger: sig, Message: name, TargetType: plumbing.CommitObject, Target: commit})
	r.Push("refs/tags/"+name, h, false)
	return h
}

// SSHKeys are a test's SSH material: the server's host key and the one client key it accepts.
type SSHKeys struct {
	Host       ssh.Signer
	HostPEM    []byte // the host's private key, PEM (what the in-cluster server's GIT_SSH_HOST_KEY holds)
	ClientPEM  []byte // the client's private key, PEM (a Secret's `identity`)
	Client     ssh.Signer
	Authorized ssh.PublicKey
}

// NewSSHKeys generates fresh ed25519 host and client keys.
func NewSSHKeys(t testing.TB) SSHKeys {
	t.Helper()
	signer := func() (ssh.Signer, []byte) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		block, err := ssh.MarshalPrivateKey(priv, "")
		if err != nil {
			t.Fatal(err)
		}
		s, err := ssh.NewSignerFromKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		return s, pem.EncodeToMemory(block)
	}
	host, hostPEM := signer()
	client, clientPEM := signer()
	return SSHKeys{Host: host, HostPEM: hostPEM, Client: client, ClientPEM: clientPEM, Authorized: client.PublicKey()}
}

// StartSSH serves the server's repositories over SSH on loopback for the length of the test and returns the
// address (host:port); a repository is at ssh://git@ADDR/name.
func (s *Server) StartSSH(t testing.TB, keys SSHKeys) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() { _ = s.ServeSSH(l, SSHConfig(keys.Host, keys.Authorized)) }()
	return l.Addr().String()
}

// DocsSizedTree returns a commit's files shaped like the Python docs (1,065 files, 67 MB: the real site the e2e
// suite serves), for benchmarks: base64 of seeded random bytes under library/sectionNN/pageNNNN.html. Base64 noise
// compresses far worse than HTML, so the pack and the transfer are an upper bound of the real site's.
func DocsSizedTree() map[string]File {
	const files, total = 1065, 67 << 20
	rng := mathrand.New(mathrand.NewPCG(1, 2))
	tree := map[string]File{}
	raw := make([]byte, total/files*3/4)
	for i := range files {
		for j := range raw {
			raw[j] = byte(rng.Uint32())
		}
		tree[fmt.Sprintf("library/section%02d/page%04d.html", i%40, i)] = Regular(base64.StdEncoding.EncodeToString(raw))
	}
	return tree
}

// TreeBomb stores a commit whose tree holds index.html and bomb/, where bomb/ is levels trees each naming the
// tree below fanout times and the last naming one empty blob fanout times: fanout^levels empty files under
// fanout^(levels-1) + … + fanout directories, from levels+2 tree objects and one blob (a pack of a few KB).
// Names are fixed-width ("d0007", "f0042"), so each tree's entries are in Git's order as built.
func (r *Repo) TreeBomb(msg string, levels, fanout int, parents ...plumbing.Hash) plumbing.Hash {
	r.t.Helper()
	below, mode, prefix := r.blob(""), filemode.Regular, "f"
	for range levels {
		entries := make([]object.TreeEntry, fanout)
		for i := range entries {
			entries[i] = object.TreeEntry{Name: fmt.Sprintf("%s%04d", prefix, i), Mode: mode, Hash: below}
		}
		below, mode, prefix = r.store(&object.Tree{Entries: entries}), filemode.Dir, "d"
	}
	root := r.store(&object.Tree{Entries: []object.TreeEntry{
		{Name: "bomb", Mode: filemode.Dir, Hash: below},
		{Name: "index.html", Mode: filemode.Regular, Hash: r.blob(msg)},
	}})
	r.clock = r.clock.Add(time.Second)
	sig := object.Signature{Name: "Test", Email: "test@example.invalid", When: r.clock}
	return r.store(&object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: root, ParentHashes: parents})
}
