package main

import (
	"bytes"
	"compress/gzip"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// The runner, the generated script and the real k6 with spec.acceptEncoding against a loopback server that answers
// every request with a compressed body, as the hyperstatic server does when asked: every request carries the
// header, and k6 (which discards the bodies undecoded, discardResponseBodies) counts every response, none as an
// error. Each encoding of the server's precompressed variants is tried: a gzip body that is really gzip, and br
// and zstd bodies k6 would fail to decode if it tried (they are not), which proves it does not.
func TestRunnerSendsAcceptEncoding(t *testing.T) {
	k6 := k6Binary(t)
	var gz bytes.Buffer
	w := gzip.NewWriter(&gz)
	_, _ = w.Write(bytes.Repeat([]byte("hello "), 100))
	_ = w.Close()

	for _, enc := range []string{"gzip", "br", "zstd"} {
		t.Run(enc, func(t *testing.T) {
			var mu sync.Mutex
			headers := map[string]int64{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				headers[r.Header.Get("Accept-Encoding")]++
				mu.Unlock()
				w.Header().Set("Content-Encoding", enc)
				w.Header().Set("Vary", "Accept-Encoding")
				if enc == "gzip" {
					_, _ = w.Write(gz.Bytes())
					return
				}
				_, _ = w.Write([]byte("not really " + enc))
			}))
			defer srv.Close()

			plan := k6script.Plan{Kind: k6script.KindConstant, BaseURL: srv.URL, KeepAlive: true, Parallelism: 1,
				StrideSeconds: 2, AcceptEncoding: "br, gzip, zstd",
				Steps: []benchresults.PlanStep{{Index: 0, VUs: 2, DurationSeconds: 1}}}
			dir := writePlan(t, plan, "/a")
			s := runOneStep(t, k6, dir)
			mu.Lock()
			defer mu.Unlock()
			if s.Requests == 0 || s.Errors != 0 || len(headers) != 1 || headers["br, gzip, zstd"] != s.Requests {
				t.Fatalf("k6 reported %d requests, %d errors; the server saw Accept-Encoding %v", s.Requests, s.Errors, headers)
			}
		})
	}
}
