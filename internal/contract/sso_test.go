package contract

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/sso"
	"hyperstatic.dev/hyperstatic/internal/ssokeys"
	"hyperstatic.dev/hyperstatic/internal/ssosite"
)

// ssoSite is a site with a signIn rule for group eng under /about/, through a route or on its Service.
func ssoSite(routed bool) *v1alpha1.StaticSite {
	s := site(v1alpha1.ServerSpec{Access: &v1alpha1.AccessSpec{
		SSO:   &v1alpha1.SSOSpec{IssuerURL: "https://dex.example.com", ClientID: "docs", SecretName: "docs-sso"},
		Rules: []v1alpha1.AccessRule{{PathPrefix: "/about/", SignIn: &v1alpha1.SignIn{Groups: []string{"eng"}}}},
	}})
	s.Spec.Hostnames = []v1alpha1.Hostname{"docs.example.com"}
	if routed {
		s.Spec.Route = &v1alpha1.RouteSpec{IngressClassName: new(string)}
	}
	return s
}

// writeSSOValue lays out what the pod's projected site-value volume holds: site.json and the session keys beside it.
func writeSSOValue(t *testing.T, s *v1alpha1.StaticSite, keys string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, sitevalue.Key), sitevalue.Render(s).Bytes, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ssosite.KeysFile), []byte(keys), 0o644); err != nil {
		t.Fatal(err)
	}
	return filepath.Join(dir, sitevalue.Key)
}

// The operator's wiring of single sign-on (internal/ssosite, the rendered site value, the projected volume's
// layout) and the server agree: the server, given what the pod mounts, sends a page load under a signIn rule to
// the login URL the agent serves (a site path through a route, the sso port without one), answers a script 401
// naming it, and admits the cookie the agent mints with the Secret's first key for a user of the rule's group. The
// operator's judgement of the keys (internal/ssokeys, AccessApplied) is the server's: what one refuses the other
// refuses.
func TestContractSSOBesideTheSiteValue(t *testing.T) {
	bin := serverbin.Require(t)
	serverbin.RequireSiteValue(t, bin)
	root := writeSite(t)
	key := base64.StdEncoding.EncodeToString([]byte("0123456789abcdef0123456789abcdef"))
	for _, routed := range []bool{true, false} {
		s := ssoSite(routed)
		login := ssosite.LoginURL(s)
		if routed != strings.HasPrefix(login, "/") {
			t.Fatalf("routed=%v: login URL %q", routed, login)
		}
		args := serverbin.SetFlag(t, serverbin.SetFlag(t, desired.ServerArgs(s), "--root", root), "--site", writeSSOValue(t, s, key+"\n"))
		srv := serverbin.Start(t, bin, args)
		type answer struct {
			StatusCode int
			Header     http.Header
		}
		get := func(accept, cookie string) answer {
			t.Helper()
			req, _ := http.NewRequest(http.MethodGet, "http://"+srv.HTTPAddr+"/about/", nil)
			req.Header.Set("Accept", accept)
			if cookie != "" {
				req.Header.Set("Cookie", sso.CookieName+"="+cookie)
			}
			res, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			return answer{res.StatusCode, res.Header}
		}
		if res := get("text/html", ""); res.StatusCode != http.StatusFound || !strings.HasPrefix(res.Header.Get("Location"), login+"?rd=") {
			t.Errorf("routed=%v: a page load without a session: %d to %q, want 302 to %s?rd=...", routed, res.StatusCode, res.Header.Get("Location"), login)
		}
		if res := get("*/*", ""); res.StatusCode != http.StatusUnauthorized || res.Header.Get("WWW-Authenticate") != `Session login="`+login+`"` {
			t.Errorf("routed=%v: a script without a session: %d %q", routed, res.StatusCode, res.Header.Get("WWW-Authenticate"))
		}
		keys, err := sso.ParseKeys(key)
		if err != nil {
			t.Fatal(err)
		}
		later := time.Now().Add(time.Hour)
		if res := get("text/html", keys.Mint(sso.Session{Email: "jane@example.com", Groups: []string{"eng"}, Expires: later})); res.StatusCode != http.StatusOK {
			t.Errorf("routed=%v: a member of eng: %d, want 200", routed, res.StatusCode)
		}
		if res := get("text/html", keys.Mint(sso.Session{Email: "joe@example.com", Groups: []string{"ops"}, Expires: later})); res.StatusCode != http.StatusForbidden {
			t.Errorf("routed=%v: a user not in eng: %d, want 403", routed, res.StatusCode)
		}
	}

	s := ssoSite(true)
	for _, c := range []struct {
		name, keys string
	}{
		{"one key", key + "\n"},
		{"two keys", key + "\n" + base64.StdEncoding.EncodeToString(make([]byte, 64)) + "\n"},
		{"short key", base64.StdEncoding.EncodeToString(make([]byte, 16)) + "\n"},
		{"not base64", "not*base64\n"},
		{"three keys", key + "\n" + key + "\n" + key + "\n"},
		{"empty", "\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, opErr := ssokeys.Parse(c.keys)
			args := serverbin.SetFlag(t, serverbin.SetFlag(t, desired.ServerArgs(s), "--root", root), "--site", writeSSOValue(t, s, c.keys))
			res, err := runCheck(bin, args)
			if err != nil {
				t.Fatal(err)
			}
			if (opErr == nil) != (res.exitCode == 0) {
				t.Fatalf("operator says %v, server exits %d: %s%s", opErr, res.exitCode, res.stderr, res.stdout)
			}
		})
	}
}
