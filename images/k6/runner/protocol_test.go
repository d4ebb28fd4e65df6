package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// The runner, the generated script and the real k6 against a loopback HTTPS server that offers h2 and
// http/1.1 in ALPN (with a certificate k6 does not trust: a StaticSite's plan skips verification). By default
// k6 negotiates HTTP/2 and every response is counted under "HTTP/2.0"; with GODEBUG=http2client=0, what the
// Job sets for spec.protocol HTTP/1.1, k6 offers only http/1.1 and every response is "HTTP/1.1". The server's
// own view of each request's protocol is the check: the counts must equal what it saw.
func TestRunnerCountsResponsesByProtocol(t *testing.T) {
	k6 := k6Binary(t)
	var mu sync.Mutex
	seen := map[string]int64{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen[r.Proto]++
		mu.Unlock()
		fmt.Fprint(w, "hello")
	}))
	srv.EnableHTTP2 = true
	srv.StartTLS()
	defer srv.Close()

	for _, tc := range []struct {
		name    string
		godebug string
		want    string
	}{
		{"auto negotiates h2", "", benchresults.ProtocolHTTP2},
		{"GODEBUG forces HTTP/1.1", "http2client=0", benchresults.ProtocolHTTP11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			clear(seen)
			mu.Unlock()
			if tc.godebug != "" {
				t.Setenv("GODEBUG", tc.godebug) // k6 inherits the runner's environment, as in the pod
			}
			plan := k6script.Plan{Kind: k6script.KindConstant, BaseURL: srv.URL, KeepAlive: true, Parallelism: 1,
				StrideSeconds: 2, InsecureSkipTLSVerify: true,
				Steps: []benchresults.PlanStep{{Index: 0, VUs: 2, DurationSeconds: 1}}}
			dir := writePlan(t, plan, "/a")
			s := runOneStep(t, k6, dir)
			mu.Lock()
			defer mu.Unlock()
			if s.Requests == 0 || len(s.Protocols) != 1 || s.Protocols[tc.want] != s.Requests || seen[tc.want] != s.Requests {
				t.Fatalf("k6 reported %d requests by protocol %v, the server saw %v; want all %s", s.Requests, s.Protocols, seen, tc.want)
			}
		})
	}
}
