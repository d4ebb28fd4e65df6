// Package dextest is Dex, the real identity provider of the sign-in tests, as those tests use it: its
// configuration (in-memory storage, the site's static client, two static users with groups, no approval screen)
// and a browser-like client that signs in through Dex's own login form (a cookie jar, following redirects,
// Accept: text/html on a navigation). internal/sso's test against Dex on the host (make go-test-sso) and the kind
// e2e's signIn site (scenario 19, Dex in the cluster) share it, so both sign in the same way and a change of
// Dex's form or configuration is made once.
package dextest

import (
	"fmt"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"
)

// Password is every static user's password.
const Password = "password"

// User is one of Dex's static users (its password database).
type User struct {
	Email, Username, ID string
	Groups              []string
}

// Jane (group eng, example.com) and Joe (group ops, example.org) are the users the tests sign in as.
var (
	Jane = User{Email: "jane@example.com", Username: "jane", ID: "1", Groups: []string{"eng"}}
	Joe  = User{Email: "joe@example.org", Username: "joe", ID: "2", Groups: []string{"ops"}}
)

// Client is the site's client at Dex: what spec.server.access.sso's clientID and the Secret's client-secret say,
// and the agent's callback as its one redirect URI.
type Client struct {
	ID, Secret, RedirectURI string
}

// Config is Dex's configuration file: the issuer URL, the address Dex listens on (host:port), the site's client
// and the users Jane and Joe, whose password is Password.
func Config(tb testing.TB, issuer, listen string, c Client) string {
	tb.Helper()
	hash, err := bcrypt.GenerateFromPassword([]byte(Password), 10) // Dex refuses a cost under 10
	if err != nil {
		tb.Fatal(err)
	}
	users := ""
	for _, u := range []User{Jane, Joe} {
		groups := ""
		for i, g := range u.Groups {
			if i > 0 {
				groups += ", "
			}
			groups += fmt.Sprintf("%q", g)
		}
		users += fmt.Sprintf("- {email: %q, hash: %q, username: %q, userID: %q, groups: [%s]}\n",
			u.Email, hash, u.Username, u.ID, groups)
	}
	return fmt.Sprintf(`issuer: %s
storage: {type: memory}
web: {http: %q}
logger: {level: warn}
oauth2: {skipApprovalScreen: true}
enablePasswordDB: true
staticClients:
- {id: %q, name: Site, secret: %q, redirectURIs: [%q]}
staticPasswords:
%s`, issuer, listen, c.ID, c.Secret, c.RedirectURI, users)
}

// Browser is a browser-like client: its own cookie jar, redirects followed on a navigation.
type Browser struct {
	tb testing.TB
	c  *http.Client
}

// NewBrowser is a browser with an empty cookie jar whose connections go through transport (nil: Go's default).
func NewBrowser(tb testing.TB, transport http.RoundTripper) *Browser {
	tb.Helper()
	jar, err := cookiejar.New(nil)
	if err != nil {
		tb.Fatal(err)
	}
	return &Browser{tb, &http.Client{Transport: transport, Jar: jar, Timeout: 30 * time.Second}}
}

// Page is what a response left: its status, header, final URL (after redirects) and body.
type Page struct {
	Status int
	Header http.Header
	URL    *url.URL
	Body   string
}

func read(res *http.Response) Page {
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	return Page{res.StatusCode, res.Header, res.Request.URL, string(b)}
}

// navigation marks req as a page load, as browsers do (the server sends a navigation to the login, a fetch gets
// 401).
func navigation(req *http.Request) {
	req.Header.Set("Accept", "text/html,application/xhtml+xml,*/*;q=0.8")
}

// Get sends one request without following redirects, with the browser's cookies; a navigation says Accept:
// text/html.
func (b *Browser) Get(u string, isNavigation bool) Page {
	b.tb.Helper()
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		b.tb.Fatal(err)
	}
	if isNavigation {
		navigation(req)
	}
	c := *b.c
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	res, err := c.Do(req)
	if err != nil {
		b.tb.Fatalf("GET %s: %v", u, err)
	}
	return read(res)
}

// Status is Get's status.
func (b *Browser) Status(u string, isNavigation bool) int {
	b.tb.Helper()
	return b.Get(u, isNavigation).Status
}

var formAction = regexp.MustCompile(`<form method="post" action="([^"]+)"`)

// SignIn navigates to the page to, follows every redirect to Dex's login form, posts the user's e-mail and
// password and follows the redirects back: the last response, which a signed-in user gets at to.
func (b *Browser) SignIn(to string, u User) Page {
	b.tb.Helper()
	req, err := http.NewRequest(http.MethodGet, to, nil)
	if err != nil {
		b.tb.Fatal(err)
	}
	navigation(req)
	res, err := b.c.Do(req)
	if err != nil {
		b.tb.Fatalf("navigate to %s: %v", to, err)
	}
	form := read(res)
	m := formAction.FindStringSubmatch(form.Body)
	if m == nil {
		b.tb.Fatalf("no login form at %s (%d): %s", form.URL, form.Status, form.Body)
	}
	action, err := form.URL.Parse(html.UnescapeString(m[1]))
	if err != nil {
		b.tb.Fatal(err)
	}
	post, err := http.NewRequest(http.MethodPost, action.String(),
		strings.NewReader(url.Values{"login": {u.Email}, "password": {Password}}.Encode()))
	if err != nil {
		b.tb.Fatal(err)
	}
	post.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	navigation(post) // a form's submission is a navigation too, and so is every redirect after it
	res, err = b.c.Do(post)
	if err != nil {
		b.tb.Fatalf("post the login form to %s: %v", action, err)
	}
	return read(res)
}
