package sso

import (
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// The site the tests' real server serves: a public page, pages for two groups, one for an e-mail domain, and the
// page a signed-in user gets where a rule does not admit them.
var sitePages = map[string]string{
	"index.html":     "home",
	"403.html":       "signed in, but not allowed here",
	"team/doc.html":  "team doc",
	"odd/page.html":  "odd groups",
	"corp/page.html": "corp page",
}

// siteValue protects /team/ (group eng), /odd/ (groups with bytes the cookie escapes), /corp/ (e-mail domain).
func siteValue(loginURL string) string {
	return fmt.Sprintf(`{"version": 1,
  "errorPages": [{"status": 403, "path": "/403.html"}],
  "access": {"sso": {"loginURL": %q, "keysFile": "keys"},
             "rules": [{"pathPrefix": "/team/", "signIn": {"groups": ["eng"]}},
                       {"pathPrefix": "/odd/", "signIn": {"groups": ["Team A:1|x", "ünïcode"]}},
                       {"pathPrefix": "/corp/", "signIn": {"emailDomains": ["example.com"]}}]}}`, loginURL)
}

// testKeys writes a keys file of the given keys (32 bytes each) into dir and returns them parsed.
func testKeys(t *testing.T, dir string, raw ...string) Keys {
	t.Helper()
	var lines []string
	for _, k := range raw {
		lines = append(lines, base64.StdEncoding.EncodeToString([]byte(k)))
	}
	path := filepath.Join(dir, "keys")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	keys, err := ReadKeys(path)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// startServer runs the real hyperstatic-server on the test site with the SSO site value, keys in conf/keys.
func startServer(t *testing.T, conf, loginURL string) *serverbin.Process {
	t.Helper()
	root := t.TempDir()
	for name, text := range sitePages {
		p := filepath.Join(root, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	value := filepath.Join(conf, "site.json")
	if err := os.WriteFile(value, []byte(siteValue(loginURL)), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := serverbin.Require(t)
	return serverbin.Start(t, bin, []string{"--root", root, "--site", value, "--listen", "", "--admin-listen", ""})
}

// noFollow is a client that shows redirects instead of following them.
func noFollow(jar http.CookieJar) *http.Client {
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}
