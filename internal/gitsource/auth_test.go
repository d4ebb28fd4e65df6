package gitsource

import (
	"net"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// The Secret's keys, as Flux reads them, give the right credentials; what would be a guess or a leak is refused.
func TestAuthFromSecret(t *testing.T) {
	key, hostLine, hostKey, otherHostKey := sshMaterial(t)
	for _, tc := range []struct {
		name, url string
		data      map[string][]byte
		want      string // "basic", "bearer", "ssh", "none", or "" for an InvalidSource error
	}{
		{"anonymous", "https://git.example.com/site.git", nil, "none"},
		{"basic", "https://git.example.com/site.git", map[string][]byte{"username": []byte("u"), "password": []byte("p")}, "basic"},
		{"bearer", "https://git.example.com/site.git", map[string][]byte{"bearerToken": []byte("t")}, "bearer"},
		{"both kinds", "https://git.example.com/site.git", map[string][]byte{"username": []byte("u"), "password": []byte("p"), "bearerToken": []byte("t")}, ""},
		{"user without password", "https://git.example.com/site.git", map[string][]byte{"username": []byte("u")}, ""},
		{"credentials over plain http", "http://git.example.com/site.git", map[string][]byte{"bearerToken": []byte("t")}, ""},
		{"ssh", "ssh://git@git.example.com/org/site.git", map[string][]byte{"identity": key, "known_hosts": hostLine}, "ssh"},
		{"scp-like ssh", "git@git.example.com:org/site.git", map[string][]byte{"identity": key, "known_hosts": hostLine}, "ssh"},
		{"ssh without known_hosts", "ssh://git@git.example.com/org/site.git", map[string][]byte{"identity": key}, ""},
		{"ssh with a bad key", "ssh://git@git.example.com/org/site.git", map[string][]byte{"identity": []byte("nope"), "known_hosts": hostLine}, ""},
		{"unsupported scheme", "ftp://git.example.com/site.git", map[string][]byte{"password": []byte("p")}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, err := AuthFromSecret(tc.url, tc.data)
			if tc.want == "" {
				if ReasonOf(err) != InvalidSource {
					t.Fatalf("got %v, %v; want an InvalidSource error", auth, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch a := auth.(type) {
			case nil:
				if tc.want != "none" {
					t.Fatalf("no credentials, want %s", tc.want)
				}
			case *http.BasicAuth:
				if tc.want != "basic" || a.Username != "u" || a.Password != "p" {
					t.Fatalf("basic auth %+v, want %s", a, tc.want)
				}
			case *http.TokenAuth:
				if tc.want != "bearer" || a.Token != "t" {
					t.Fatalf("token auth, want %s", tc.want)
				}
			case *gitssh.PublicKeys:
				if tc.want != "ssh" || a.User != "git" {
					t.Fatalf("ssh keys for %q, want %s", a.User, tc.want)
				}
				addr := &net.TCPAddr{IP: net.IPv4(192, 0, 2, 1), Port: 22}
				if err := a.HostKeyCallback("git.example.com:22", addr, hostKey); err != nil {
					t.Fatalf("the pinned host key was refused: %v", err)
				}
				if err := a.HostKeyCallback("git.example.com:22", addr, otherHostKey); err == nil {
					t.Fatal("a host key not in known_hosts was accepted")
				}
			default:
				t.Fatalf("unexpected %T", auth)
			}
		})
	}
}

// sshMaterial returns a PEM private key, a known_hosts line for git.example.com, its host key, and another key.
func sshMaterial(t *testing.T) (key, hostLine []byte, host, other ssh.PublicKey) {
	t.Helper()
	keys, others := gts.NewSSHKeys(t), gts.NewSSHKeys(t)
	host = keys.Host.PublicKey()
	return keys.ClientPEM, []byte(knownhosts.Line([]string{"git.example.com"}, host) + "\n"), host, others.Host.PublicKey()
}
