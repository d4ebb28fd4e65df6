package podtext

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCleanEscapesControlsAndBounds(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain text", "plain text"},
		{"line\nbreak\r\ttab", "line break  tab"},
		{"bell\x07esc\x1b[31mred", `bell\x07esc\x1b[31mred`},
		{"del\x7f", `del\x7f`},
		{"rtl\u202eoverride", `rtl\u202eoverride`},
		{"bad\xffutf8", `bad\ufffdutf8`},
		{"real \uFFFD stays", "real \uFFFD stays"},
		{"é ünïcode", "é ünïcode"},
	} {
		if got := Clean(tc.in, 100); got != tc.want {
			t.Errorf("Clean(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	long := strings.Repeat("é", 5000) // 2 bytes each
	got := Clean(long, MaxStatusText)
	if len(got) > MaxStatusText || !strings.HasSuffix(got, "…") || !utf8.ValidString(got) {
		t.Errorf("a long text: %d bytes, valid %v, ends %q", len(got), utf8.ValidString(got), got[len(got)-5:])
	}
	if got := Clean(strings.Repeat("a", 10), 10); got != strings.Repeat("a", 10) {
		t.Errorf("a text of exactly the limit was cut: %q", got)
	}
}

// A pod that answers with a redirect to another address: the operator's request fails there, and the address it
// points to is never asked.
func TestNoRedirectsNeverFollows(t *testing.T) {
	var asked bool
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		asked = true
		_, _ = w.Write([]byte("secret"))
	}))
	defer elsewhere.Close()
	pod := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/token", http.StatusFound)
	}))
	defer pod.Close()
	shared := &http.Client{}
	resp, err := NoRedirects(shared).Get(pod.URL)
	if err == nil {
		_ = resp.Body.Close()
	}
	if !errors.Is(err, ErrRedirect) {
		t.Fatalf("error %v, want ErrRedirect", err)
	}
	if asked {
		t.Fatal("the redirect was followed")
	}
	if shared.CheckRedirect != nil {
		t.Fatal("the caller's client was changed")
	}
}
