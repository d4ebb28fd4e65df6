package podmetrics

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// Issue 24, item 2: a tenant's pod answers the operator's scrape. It must not be able to send the operator to
// another address (SSRF past other tenants' NetworkPolicies, with the answer readable in the site's status), nor
// write raw, unbounded text into that status.

func TestScrapeNeverFollowsARedirect(t *testing.T) {
	var asked atomic.Bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked.Store(true)
		_, _ = w.Write([]byte(exposition))
	}))
	t.Cleanup(elsewhere.Close)
	for _, path := range []string{"/metrics", LoadErrorPath} {
		t.Run(path, func(t *testing.T) {
			asked.Store(false)
			s, _, pod := serve(t, func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/metrics" && path != "/metrics" {
					_, _ = w.Write([]byte(exposition + "hyperstatic_content_load_failed 1\n"))
					return
				}
				http.Redirect(w, r, elsewhere.URL+"/secret", http.StatusFound)
			})
			sample, err := s.Scrape(scrapeContext(t), pod)
			if path == "/metrics" && !errors.Is(err, podtext.ErrRedirect) {
				t.Fatalf("scrape error %v, want the redirect refused", err)
			}
			if path == LoadErrorPath && (err != nil || !strings.Contains(sample.LoadError, "redirect")) {
				t.Fatalf("scrape error %v, load error %q: want the redirect refused in the message", err, sample.LoadError)
			}
			if asked.Load() {
				t.Fatal("the operator fetched the address the pod redirected it to")
			}
		})
	}
}

func TestLoadErrorIsBoundedAndEscaped(t *testing.T) {
	hostile := "bad _redirects line 3\x1b[2J\r\nSet-Cookie: x\u202e" + strings.Repeat("A", MaxLoadErrorBytes)
	s, _, pod := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == LoadErrorPath {
			_, _ = w.Write([]byte(hostile))
			return
		}
		_, _ = w.Write([]byte(exposition + "hyperstatic_content_load_failed 1\n"))
	})
	sample, err := s.Scrape(scrapeContext(t), pod)
	if err != nil {
		t.Fatal(err)
	}
	got := sample.LoadError
	if len(got) > podtext.MaxStatusText {
		t.Errorf("load error is %d bytes, over %d", len(got), podtext.MaxStatusText)
	}
	if strings.ContainsAny(got, "\x1b\r\n\u202e") {
		t.Errorf("load error keeps control characters: %q", got[:80])
	}
	if !strings.HasPrefix(got, `bad _redirects line 3\x1b[2J  Set-Cookie: x\u202eAAA`) {
		t.Errorf("load error %q", got[:80])
	}
}
