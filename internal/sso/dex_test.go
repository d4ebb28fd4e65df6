//go:build dex

package sso

import (
	"context"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// The real Dex (built from the Go module proxy by make dex-build, handed over in HYPERSTATIC_DEX_BIN; make
// go-test-sso) with a static client and static users, the real server, and this package's handler on its own
// port, as with a LoadBalancer (docs/design/sso.md): a browser-like client (a cookie jar, following redirects,
// sending Accept: text/html) asks for a protected page, signs in on Dex's own login form, and is back on the page,
// served from the cookie; a user of another group gets the site's 403 page, not a loop; logout ends it. Under the
// tag a missing binary fails the test.
func TestSignInThroughDex(t *testing.T) {
	bin := os.Getenv("HYPERSTATIC_DEX_BIN")
	if bin == "" {
		t.Fatal("HYPERSTATIC_DEX_BIN is not set: make dex-build (or make go-test-sso)")
	}
	conf := t.TempDir()
	testKeys(t, conf, "current-key-0123456789abcdef0123")
	if err := os.WriteFile(filepath.Join(conf, "client-secret"), []byte("site-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	agentL := freeListener(t)
	agentURL := "http://" + agentL.Addr().String()
	issuer := startDex(t, bin, agentURL+"/.hyperstatic/sso/callback")
	srv := startServer(t, conf, agentURL+"/.hyperstatic/sso/login")
	site := "http://" + srv.HTTPAddr
	h, err := New(Config{Issuer: issuer, ClientID: "site", ClientSecretFile: filepath.Join(conf, "client-secret"),
		KeysFile: filepath.Join(conf, "keys"), SiteURL: site, CallbackURL: agentURL + "/.hyperstatic/sso/callback"})
	if err != nil {
		t.Fatal(err)
	}
	agent := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = agent.Serve(agentL) }()
	t.Cleanup(func() { _ = agent.Shutdown(context.Background()) })

	// Jane (group eng) signs in and lands on the page she asked for, served by the server from the cookie.
	jane := browser(t)
	res := jane.signIn(site+"/team/doc.html?tab=1", "jane@example.com")
	if res.status != 200 || res.body != "team doc" || res.url.String() != site+"/team/doc.html?tab=1" {
		t.Fatalf("jane after signing in: %d at %s: %q", res.status, res.url, res.body)
	}
	if cc := res.header.Get("Cache-Control"); !strings.HasPrefix(cc, "private") {
		t.Errorf("a protected page's Cache-Control: %q", cc)
	}
	// A fetch (no navigation) with the cookie is served too; she is signed in with a cookie, not a server session.
	if got := jane.status(site+"/team/doc.html", false); got != 200 {
		t.Errorf("jane's fetch: %d", got)
	}
	if got := jane.status(site+"/corp/page.html", false); got != 200 {
		t.Errorf("jane's e-mail domain: %d", got)
	}
	// Joe (group ops, example.org) signs in and gets the 403 page: no redirect, so no loop.
	joe := browser(t)
	res = joe.signIn(site+"/team/doc.html", "joe@example.org")
	if res.status != 403 || !strings.Contains(res.body, "not allowed here") || res.url.Path != "/team/doc.html" {
		t.Fatalf("joe: %d at %s: %q", res.status, res.url, res.body)
	}
	if got := joe.status(site+"/corp/page.html", false); got != 403 {
		t.Errorf("joe's e-mail domain: %d", got)
	}
	// Logout: the cookie is gone, a navigation is sent to sign in again, a fetch gets 401.
	res = jane.get(agentURL+"/.hyperstatic/sso/logout?rd=/", false)
	if res.status != 302 || res.header.Get("Location") != site+"/" {
		t.Fatalf("logout: %d to %q", res.status, res.header.Get("Location"))
	}
	if got := jane.status(site+"/team/doc.html", false); got != 401 {
		t.Errorf("after logout, a fetch: %d", got)
	}
	res = jane.get(site+"/team/doc.html", true)
	if res.status != 302 || !strings.HasPrefix(res.header.Get("Location"), agentURL+"/.hyperstatic/sso/login?rd=") {
		t.Errorf("after logout, a navigation: %d to %q", res.status, res.header.Get("Location"))
	}
	// A callback this browser did not start is refused with a page, not a session.
	res = jane.get(agentURL+"/.hyperstatic/sso/callback?code=x&state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", false)
	if res.status != 400 || len(res.header.Values("Set-Cookie")) != 0 {
		t.Errorf("a forged callback: %d, cookies %v", res.status, res.header.Values("Set-Cookie"))
	}
	// An open redirect through rd is not possible: another host becomes "/".
	res = jane.get(agentURL+"/.hyperstatic/sso/logout?rd=//evil.example/x", false)
	if res.header.Get("Location") != site+"/" {
		t.Errorf("rd to another host: %q", res.header.Get("Location"))
	}
}

type client struct {
	t *testing.T
	c *http.Client
}

func browser(t *testing.T) *client {
	t.Helper()
	jar, _ := cookiejar.New(nil)
	return &client{t, &http.Client{Jar: jar, Timeout: 30 * time.Second}}
}

// page is what a response left: its status, header, final URL (after redirects) and body.
type page struct {
	status int
	header http.Header
	url    *url.URL
	body   string
}

func read(res *http.Response) page {
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return page{res.StatusCode, res.Header, res.Request.URL, string(b)}
}

// get sends one request without following redirects; a navigation says Accept: text/html, as browsers do.
func (b *client) get(u string, navigation bool) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, u, nil)
	if navigation {
		req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	}
	res, err := noFollow(b.c.Jar).Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	return read(res)
}

func (b *client) status(u string, navigation bool) int { return b.get(u, navigation).status }

var formAction = regexp.MustCompile(`<form method="post" action="([^"]+)"`)

// signIn navigates to page, follows every redirect to Dex's login form, posts the user's password and follows
// the redirects back: the last response.
func (b *client) signIn(to, user string) page {
	b.t.Helper()
	req, _ := http.NewRequest(http.MethodGet, to, nil)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
	res, err := b.c.Do(req)
	if err != nil {
		b.t.Fatal(err)
	}
	form := read(res)
	m := formAction.FindStringSubmatch(form.body)
	if m == nil {
		b.t.Fatalf("no login form at %s (%d): %s", form.url, form.status, form.body)
	}
	action, err := form.url.Parse(html.UnescapeString(m[1]))
	if err != nil {
		b.t.Fatal(err)
	}
	res, err = b.c.PostForm(action.String(), url.Values{"login": {user}, "password": {"password"}})
	if err != nil {
		b.t.Fatal(err)
	}
	return read(res)
}

// freeListener is a loopback listener whose port the test can name before anything serves on it.
func freeListener(t *testing.T) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = l.Close() })
	return l
}

// startDex runs Dex with in-memory storage, one static client (redirecting to callback) and two static users,
// returning its issuer once its discovery document answers.
func startDex(t *testing.T, bin, callback string) string {
	t.Helper()
	l := freeListener(t)
	addr := l.Addr().String()
	_ = l.Close()
	hash, err := bcrypt.GenerateFromPassword([]byte("password"), 10) // Dex refuses a cost under 10
	if err != nil {
		t.Fatal(err)
	}
	issuer := "http://" + addr + "/dex"
	config := fmt.Sprintf(`issuer: %s
storage: {type: memory}
web: {http: %q}
logger: {level: warn}
oauth2: {skipApprovalScreen: true}
enablePasswordDB: true
staticClients:
- {id: site, name: Site, secret: site-secret, redirectURIs: [%q]}
staticPasswords:
- {email: jane@example.com, hash: %q, username: jane, userID: "1", groups: [eng]}
- {email: joe@example.org, hash: %q, username: joe, userID: "2", groups: [ops]}
`, issuer, addr, callback, hash, hash)
	path := filepath.Join(t.TempDir(), "dex.yaml")
	if err := os.WriteFile(path, []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve", path)
	var logs strings.Builder
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("dex's log:\n%s", logs.String())
		}
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		res, err := http.Get(issuer + "/.well-known/openid-configuration")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return issuer
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("dex did not answer: %v\n%s", err, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
