package gitsource

import (
	"testing"

	"golang.org/x/crypto/ssh/knownhosts"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// Over SSH with a Flux-format Secret (identity, known_hosts): the pinned host key and the authorised client key
// fetch; another host key or another client key fail with AuthFailed and nothing is published.
func TestSSH(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	r := srv.NewRepo(t, base, "site.git", nil)
	c1 := r.Commit("v1", site("v1"))
	r.Push("refs/heads/main", c1, false)
	keys := gts.NewSSHKeys(t)
	addr := srv.StartSSH(t, keys)
	url := "ssh://git@" + addr + "/site.git"
	pinned := []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, keys.Host.PublicKey()) + "\n")
	other := gts.NewSSHKeys(t)

	for _, tc := range []struct {
		name       string
		identity   []byte
		knownHosts []byte
		want       Reason
	}{
		{"pinned host, authorised key", keys.ClientPEM, pinned, ""},
		{"another host key", keys.ClientPEM, []byte(knownhosts.Line([]string{knownhosts.Normalize(addr)}, other.Host.PublicKey()) + "\n"), AuthFailed},
		{"a key the server does not know", other.ClientPEM, pinned, AuthFailed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth, err := AuthFromSecret(url, map[string][]byte{SecretIdentity: tc.identity, SecretKnownHosts: tc.knownHosts})
			if err != nil {
				t.Fatal(err)
			}
			s := newStore(t)
			rev, _, err := s.Sync(t.Context(), Source{URL: url, Ref: "main", Auth: auth})
			if ReasonOf(err) != tc.want || (tc.want == "") != (err == nil) {
				t.Fatalf("got %v (reason %q), want reason %q", err, ReasonOf(err), tc.want)
			}
			if tc.want != "" {
				return
			}
			if rev.Commit != c1.String() {
				t.Fatalf("served %s, want %s", rev.Commit, c1)
			}
			wantTree(t, served(t, s), site("v1"))
		})
	}
}
