package gitsource

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A repository URL that redirects (to another loopback server standing for an address the tenancy policy does
// not admit) is refused naming the target host, and the target receives no request: before, go-git followed the
// first /info/refs request up to 10 hops, to any host.
func TestRedirectsAreNotFollowed(t *testing.T) {
	var victimHits atomic.Int64
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		victimHits.Add(1)
		http.Error(w, "the victim answered", http.StatusOK)
	}))
	t.Cleanup(victim.Close)
	victimHost := strings.TrimPrefix(victim.URL, "http://")
	for _, status := range []int{http.StatusFound, http.StatusMovedPermanently, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		redirector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, victim.URL+r.URL.RequestURI(), status)
		}))
		t.Cleanup(redirector.Close)
		s := newStore(t)
		_, _, err := s.Sync(t.Context(), Source{URL: redirector.URL + "/site.git", Ref: "main"})
		if ReasonOf(err) != Unreachable || !strings.Contains(err.Error(), `redirect to host "`+victimHost+`"`) {
			t.Fatalf("a %d to the victim: %v, want Unreachable naming %s", status, err, victimHost)
		}
		if n := victimHits.Load(); n != 0 {
			t.Fatalf("after a %d the victim received %d requests, want none", status, n)
		}
	}
}

// An error answer's body is read up to maxErrorBody, however long the server makes it: before, go-git read it
// whole into memory.
func TestErrorBodiesAreBounded(t *testing.T) {
	const offered = 256 << 20
	var written atomic.Int64
	chunk := bytes.Repeat([]byte("x"), 64<<10)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		for written.Load() < offered {
			n, err := w.Write(chunk)
			written.Add(int64(n))
			if err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	_, _, err := newStore(t).Sync(t.Context(), Source{URL: srv.URL + "/site.git", Ref: "main"})
	if ReasonOf(err) != Unreachable {
		t.Fatalf("a 500 with %d bytes: %v, want Unreachable", offered, err)
	}
	srv.Close() // waits for the handler: its count is final
	// What the server wrote beyond what was read sits in the two sockets' buffers (a few MB on loopback).
	if n := written.Load(); n >= 64<<20 {
		t.Fatalf("the server wrote %d bytes of its error body before the fetcher stopped reading, want far under %d", n, offered)
	}
	t.Logf("the server wrote %d bytes of a %d-byte error body", written.Load(), offered)
}
