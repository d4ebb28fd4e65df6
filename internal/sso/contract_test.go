package sso

import (
	"io"
	"net/http"
	"testing"
	"time"
)

// TestServerAcceptsTheAgentsCookies is the contract between this package and the server's guard/session.rs: the
// real server binary, given the keys file the agent signs with, admits exactly the cookies Mint makes for users
// the rules name, escaped groups and e-mails included, the previous key too, and nothing expired or re-signed.
func TestServerAcceptsTheAgentsCookies(t *testing.T) {
	conf := t.TempDir()
	keys := testKeys(t, conf, "current-key-0123456789abcdef0123", "previous-key-0123456789abcdef012")
	srv := startServer(t, conf, "/.hyperstatic/sso/login")
	previous := Keys{keys[1]}
	stranger := Keys{[]byte("another-site-key-0123456789abcde")}
	later := time.Now().Add(time.Hour)
	status := func(path, cookie string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, "http://"+srv.HTTPAddr+path, nil)
		if cookie != "" {
			req.Header.Set("Cookie", CookieName+"="+cookie)
		}
		res, err := noFollow(nil).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	for _, c := range []struct {
		name, path string
		keys       Keys
		s          Session
		want       int
	}{
		{"in the group", "/team/doc.html", keys, Session{Email: "jane@example.com", Groups: []string{"ops", "eng"}, Expires: later}, 200},
		{"not in the group", "/team/doc.html", keys, Session{Email: "jane@example.com", Groups: []string{"ops"}, Expires: later}, 403},
		{"escaped groups", "/odd/page.html", keys, Session{Groups: []string{"Team A:1|x"}, Expires: later}, 200},
		{"non-ASCII group", "/odd/page.html", keys, Session{Groups: []string{"ünïcode"}, Expires: later}, 200},
		{"a group's prefix", "/odd/page.html", keys, Session{Groups: []string{"Team A"}, Expires: later}, 403},
		{"e-mail domain, any case", "/corp/page.html", keys, Session{Email: "Joe@EXAMPLE.com", Expires: later}, 200},
		{"a subdomain", "/corp/page.html", keys, Session{Email: "joe@sub.example.com", Expires: later}, 403},
		{"previous key", "/team/doc.html", previous, Session{Groups: []string{"eng"}, Expires: later}, 200},
		{"another site's key", "/team/doc.html", stranger, Session{Groups: []string{"eng"}, Expires: later}, 401},
		{"expired", "/team/doc.html", keys, Session{Groups: []string{"eng"}, Expires: time.Now().Add(-time.Second)}, 401},
	} {
		got, body := status(c.path, c.keys.Mint(c.s))
		if got != c.want {
			t.Errorf("%s: %s answered %d, want %d (%q)", c.name, c.path, got, c.want, body)
		}
	}
	if got, _ := status("/team/doc.html", ""); got != 401 {
		t.Errorf("no cookie: %d, want 401", got)
	}
	// The agent's own flow cookie, signed with the same key, is never a session.
	if got, _ := status("/team/doc.html", keys.sealFlow(flow{State: random(), RD: "/", Expires: later})); got != 401 {
		t.Errorf("a flow cookie as a session: %d, want 401", got)
	}
}
