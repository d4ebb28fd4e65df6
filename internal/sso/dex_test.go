//go:build dex

package sso

import (
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/dextest"
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
	jane := dextest.NewBrowser(t, nil)
	res := jane.SignIn(site+"/team/doc.html?tab=1", dextest.Jane)
	if res.Status != 200 || res.Body != "team doc" || res.URL.String() != site+"/team/doc.html?tab=1" {
		t.Fatalf("jane after signing in: %d at %s: %q", res.Status, res.URL, res.Body)
	}
	if cc := res.Header.Get("Cache-Control"); !strings.HasPrefix(cc, "private") {
		t.Errorf("a protected page's Cache-Control: %q", cc)
	}
	// A fetch (no navigation) with the cookie is served too; she is signed in with a cookie, not a server session.
	if got := jane.Status(site+"/team/doc.html", false); got != 200 {
		t.Errorf("jane's fetch: %d", got)
	}
	if got := jane.Status(site+"/corp/page.html", false); got != 200 {
		t.Errorf("jane's e-mail domain: %d", got)
	}
	// Joe (group ops, example.org) signs in and gets the 403 page: no redirect, so no loop.
	joe := dextest.NewBrowser(t, nil)
	res = joe.SignIn(site+"/team/doc.html", dextest.Joe)
	if res.Status != 403 || !strings.Contains(res.Body, "not allowed here") || res.URL.Path != "/team/doc.html" {
		t.Fatalf("joe: %d at %s: %q", res.Status, res.URL, res.Body)
	}
	if got := joe.Status(site+"/corp/page.html", false); got != 403 {
		t.Errorf("joe's e-mail domain: %d", got)
	}
	// Logout: the cookie is gone, a navigation is sent to sign in again, a fetch gets 401.
	res = jane.Get(agentURL+"/.hyperstatic/sso/logout?rd=/", false)
	if res.Status != 302 || res.Header.Get("Location") != site+"/" {
		t.Fatalf("logout: %d to %q", res.Status, res.Header.Get("Location"))
	}
	if got := jane.Status(site+"/team/doc.html", false); got != 401 {
		t.Errorf("after logout, a fetch: %d", got)
	}
	res = jane.Get(site+"/team/doc.html", true)
	if res.Status != 302 || !strings.HasPrefix(res.Header.Get("Location"), agentURL+"/.hyperstatic/sso/login?rd=") {
		t.Errorf("after logout, a navigation: %d to %q", res.Status, res.Header.Get("Location"))
	}
	// A callback this browser did not start is refused with a page, not a session.
	res = jane.Get(agentURL+"/.hyperstatic/sso/callback?code=x&state=AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA", false)
	if res.Status != 400 || len(res.Header.Values("Set-Cookie")) != 0 {
		t.Errorf("a forged callback: %d, cookies %v", res.Status, res.Header.Values("Set-Cookie"))
	}
	// An open redirect through rd is not possible: another host becomes "/".
	res = jane.Get(agentURL+"/.hyperstatic/sso/logout?rd=//evil.example/x", false)
	if res.Header.Get("Location") != site+"/" {
		t.Errorf("rd to another host: %q", res.Header.Get("Location"))
	}
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
	issuer := "http://" + addr + "/dex"
	config := dextest.Config(t, issuer, addr, dextest.Client{ID: "site", Secret: "site-secret", RedirectURI: callback})
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
