package gittestserver

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/storage/memory"

	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// Serve with a certificate and key from files (what e2e/cmd/gitserver's -tls-cert and -tls-key name) answers Git
// over HTTPS: a client trusting the CA pushes and lists, one that does not is refused by its TLS check, and
// plain HTTP to the port gets no Git answer.
func TestServeHTTPSFromFiles(t *testing.T) {
	ca := testcerts.NewCA(t)
	certPEM, keyPEM := ca.Issue(t, testcerts.Options{}, "localhost")
	dir := t.TempDir()
	certFile, keyFile := filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	for name, data := range map[string][]byte{certFile: certPEM, keyFile: keyPEM} {
		if err := os.WriteFile(name, data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := New(t.TempDir(), "", "", "")
	if err := s.Serve(nil, certFile, ""); err == nil || !strings.Contains(err.Error(), "both") {
		t.Fatalf("a certificate without its key: %v, want refused", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	go func() { _ = s.Serve(l, certFile, keyFile) }()
	_, port, _ := net.SplitHostPort(l.Addr().String())

	if _, err := git.PlainInit(filepath.Join(s.Root, "site.git"), true); err != nil {
		t.Fatal(err)
	}
	url := "https://localhost:" + port + "/site.git"
	r := NewRemoteRepo(t, url, nil, ca.PEM)
	c := r.Commit("v1", map[string]File{"index.html": Regular("v1")})
	r.Push("refs/heads/main", c, false)

	list := func(url string, caPEM []byte) error {
		rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
		refs, err := rem.List(&git.ListOptions{CABundle: caPEM})
		if err != nil {
			return err
		}
		// The advertisement's order is not fixed (HEAD, a symbolic ref, may come first): find main by name.
		for _, ref := range refs {
			if ref.Name() == "refs/heads/main" && ref.Hash() == c {
				return nil
			}
		}
		t.Errorf("listed %v, want main at %s", refs, c)
		return nil
	}
	if err := list(url, ca.PEM); err != nil {
		t.Fatalf("listing over HTTPS with the CA: %v", err)
	}
	if err := list(url, nil); err == nil || !strings.Contains(err.Error(), "x509") {
		t.Errorf("listing without the CA: %v, want a certificate error", err)
	}
	if err := list("http://localhost:"+port+"/site.git", nil); err == nil {
		t.Error("plain HTTP to the HTTPS port was answered")
	}
}
