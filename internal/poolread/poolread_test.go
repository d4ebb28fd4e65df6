package poolread

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const bundle = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

func reader(srv *httptest.Server) (*HTTPReader, *corev1.Pod) {
	r := NewHTTPReader(9090, 8080)
	r.Addr = func(*corev1.Pod, int) string { return strings.TrimPrefix(srv.URL, "http://") }
	return r, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
}

func serve(body string, status int) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != Path {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
}

func keepOnly(ids ...string) Keep {
	return func(id string) bool {
		for _, k := range ids {
			if k == id {
				return true
			}
		}
		return false
	}
}

func TestServerSitesKeepsKnownSitesAndChecksFields(t *testing.T) {
	srv := serve(`{"sites":[{"id":"a.one","state":"memory","entryRevision":"sha256:fedcba9876543210","valueRevision":"sha256:0123456789abcdef","contentRevision":"0123456789abcdef","error":"bad\nline"},
		{"id":"evil.other","state":"memory","valueRevision":"sha256:0123456789abcdef"}]}`, 200)
	defer srv.Close()
	r, pod := reader(srv)
	got, err := r.ServerSites(context.Background(), pod, keepOnly("a.one"))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 {
		t.Fatalf("kept %v, want only a.one (an id not in the index is dropped)", got)
	}
	s := got["a.one"]
	if s.EntryRevision != "sha256:fedcba9876543210" || s.ValueRevision != "sha256:0123456789abcdef" || s.ContentRevision != "0123456789abcdef" || s.Error != "bad line" {
		t.Errorf("site %+v", s)
	}
}

func TestHostileAnswersAreRefused(t *testing.T) {
	for name, c := range map[string]struct {
		body   string
		status int
	}{
		"bad entry revision":   {`{"sites":[{"id":"a.one","entryRevision":"sha256:0123456789ABCDEF"}]}`, 200},
		"bad value revision":   {`{"sites":[{"id":"a.one","valueRevision":"sha256:xyz"}]}`, 200},
		"bad content revision": {`{"sites":[{"id":"a.one","contentRevision":"../../etc"}]}`, 200},
		"not JSON":             {`<html>`, 200},
		"HTTP 500":             {`{}`, 500},
		"too large":            {`{"sites":[` + strings.Repeat(" ", MaxBytes) + `]}`, 200},
	} {
		t.Run(name, func(t *testing.T) {
			srv := serve(c.body, c.status)
			defer srv.Close()
			r, pod := reader(srv)
			if _, err := r.ServerSites(context.Background(), pod, keepOnly("a.one")); err == nil {
				t.Error("accepted")
			}
		})
	}
	redirect := httptest.NewServer(http.RedirectHandler("http://169.254.169.254/", http.StatusFound))
	defer redirect.Close()
	r, pod := reader(redirect)
	if _, err := r.FetcherSites(context.Background(), pod, keepOnly("a.one")); err == nil {
		t.Error("a redirect was followed")
	}
}

func TestFetcherSites(t *testing.T) {
	srv := serve(`{"sites":[{"id":"a.one","commit":"0123456789abcdef0123456789abcdef01234567","bundle":"`+bundle+`","size":10,"error":""},
		{"id":"a.two","bundle":"","error":"RefNotFound: main"}]}`, 200)
	defer srv.Close()
	r, pod := reader(srv)
	got, err := r.FetcherSites(context.Background(), pod, keepOnly("a.one", "a.two"))
	if err != nil {
		t.Fatal(err)
	}
	if got["a.one"].Bundle != bundle || ContentRevision(got["a.one"].Bundle) != bundle[:16] || got["a.two"].Error != "RefNotFound: main" {
		t.Errorf("got %+v", got)
	}
	bad := serve(`{"sites":[{"id":"a.one","bundle":"short"}]}`, 200)
	defer bad.Close()
	r, pod = reader(bad)
	if _, err := r.FetcherSites(context.Background(), pod, keepOnly("a.one")); err == nil {
		t.Error("a bundle that is not 64 hex digits was accepted")
	}
}

// The per-site request counter feeds automatic placement: a whole number in [0, 2^64) is kept; anything else leaves
// that pod's count of that site unknown (Counted false) and the rest of the answer, other sites' counters
// included, as it was.
func TestServerSitesRequestCounters(t *testing.T) {
	srv := serve(`{"sites":[
		{"id":"a.ok","requests":18446744073709551615},
		{"id":"a.zero","requests":0},
		{"id":"a.negative","requests":-5},
		{"id":"a.fraction","requests":1.5},
		{"id":"a.huge","requests":1e30},
		{"id":"a.over","requests":18446744073709551616},
		{"id":"a.absent"}]}`, 200)
	defer srv.Close()
	r, pod := reader(srv)
	got, err := r.ServerSites(context.Background(), pod, func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if s := got["a.ok"]; !s.Counted || s.Requests != 18446744073709551615 {
		t.Errorf("a.ok %+v", s)
	}
	if s := got["a.zero"]; !s.Counted || s.Requests != 0 {
		t.Errorf("a.zero %+v", s)
	}
	for _, id := range []string{"a.negative", "a.fraction", "a.huge", "a.over", "a.absent"} {
		if s, ok := got[id]; !ok || s.Counted || s.Requests != 0 {
			t.Errorf("%s: %+v (kept %v), want kept without a count", id, s, ok)
		}
	}
}
