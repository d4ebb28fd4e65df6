package gitsource

import (
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport/http"

	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// A forge behind an internal CA (the test Git server over HTTPS, its certificate signed by a CA of the test): the
// Secret's ca.crt makes the fetch verify; without it, or with another CA, the fetch fails as Unreachable and says
// to use ca.crt; basic auth works over it, and wrong credentials are still AuthFailed (TLS passed, auth checked).
func TestFetchOverHTTPSWithTheSecretsCA(t *testing.T) {
	srv, base, caPEM := gts.StartTLS(t, "reader", "s3cret", "")
	r := srv.NewRepo(t, base, "site.git", &http.BasicAuth{Username: "reader", Password: "s3cret"})
	c1 := r.Commit("v1", site("v1"))
	r.Push("refs/heads/main", c1, false)

	public, publicBase, publicCA := gts.StartTLS(t, "", "", "")
	pr := public.NewRepo(t, publicBase, "site.git", nil)
	pc := pr.Commit("public", site("public"))
	pr.Push("refs/heads/main", pc, false)

	otherCA := testcerts.NewCA(t).PEM
	creds := func(password string, ca []byte) map[string][]byte {
		data := map[string][]byte{SecretUsername: []byte("reader"), SecretPassword: []byte(password)}
		if ca != nil {
			data[SecretCACert] = ca
		}
		return data
	}
	for _, tc := range []struct {
		name   string
		url    string
		data   map[string][]byte
		commit string
		want   Reason
		says   []string // in the error message
	}{
		{"basic auth and the CA", r.URL, creds("s3cret", caPEM), c1.String(), "", nil},
		{"only ca.crt, public repository", pr.URL, map[string][]byte{SecretCACert: publicCA}, pc.String(), "", nil},
		{"no CA", r.URL, creds("s3cret", nil), "", Unreachable, []string{"unknown authority", `"ca.crt"`, "x509"}},
		{"another CA", r.URL, creds("s3cret", otherCA), "", Unreachable, []string{"neither the system's CAs nor the Secret's \"ca.crt\""}},
		{"the CA, a wrong password", r.URL, creds("wrong", caPEM), "", AuthFailed, []string{"credentials were refused"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Source{URL: tc.url, Ref: "main"}.WithSecret(tc.data)
			if err != nil {
				t.Fatal(err)
			}
			s := newStore(t)
			rev, _, err := s.Sync(t.Context(), src)
			if ReasonOf(err) != tc.want || (tc.want == "") != (err == nil) {
				t.Fatalf("got %v (reason %q), want reason %q", err, ReasonOf(err), tc.want)
			}
			for _, part := range tc.says {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("the message %q does not say %q", err, part)
				}
			}
			if tc.want != "" {
				if cur, _ := s.Current(); cur != "" {
					t.Errorf("a failed fetch published %s", cur)
				}
				t.Logf("%s: %v", ReasonOf(err), err)
				return
			}
			if rev.Commit != tc.commit {
				t.Fatalf("served %s, want %s", rev.Commit, tc.commit)
			}
		})
	}
}

// ca.crt is for https:// alone, must hold a certificate, and sits beside the credentials; the rest of the
// Secret's rules are AuthFromSecret's.
func TestWithSecretCACert(t *testing.T) {
	ca := testcerts.NewCA(t).PEM
	key, hostLine, _, _ := sshMaterial(t)
	for _, tc := range []struct {
		name, url string
		data      map[string][]byte
		ok        bool
	}{
		{"https, ca.crt alone", "https://git.example.com/site.git", map[string][]byte{"ca.crt": ca}, true},
		{"https, ca.crt and a token", "https://git.example.com/site.git", map[string][]byte{"ca.crt": ca, "bearerToken": []byte("t")}, true},
		{"https, an empty ca.crt is none", "https://git.example.com/site.git", map[string][]byte{"ca.crt": {}}, true},
		{"https, ca.crt without a certificate", "https://git.example.com/site.git", map[string][]byte{"ca.crt": []byte("not PEM")}, false},
		{"ssh with ca.crt", "ssh://git@git.example.com/site.git", map[string][]byte{"ca.crt": ca, "identity": key, "known_hosts": hostLine}, false},
		{"http with ca.crt", "http://git.example.com/site.git", map[string][]byte{"ca.crt": ca}, false},
		{"loopback http with ca.crt", "http://127.0.0.1:8080/site.git", map[string][]byte{"ca.crt": ca}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src, err := Source{URL: tc.url, Ref: "main"}.WithSecret(tc.data)
			if !tc.ok {
				if ReasonOf(err) != InvalidSource || !strings.Contains(err.Error(), `"ca.crt"`) {
					t.Fatalf("got %v, want InvalidSource naming ca.crt", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if string(src.CABundle) != string(tc.data["ca.crt"]) {
				t.Errorf("CABundle %q, want the Secret's ca.crt", src.CABundle)
			}
			if _, hasToken := tc.data["bearerToken"]; hasToken != (src.Auth != nil) {
				t.Errorf("Auth %v for %v", src.Auth, tc.data)
			}
		})
	}
}
