package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// No load the project generates follows a redirect (issue 38, item 2). The real server serves a site whose
// _redirects sends every path, forced, with a 302 to a second loopback listener, the "victim"; the runner, the
// generated script and the real k6 load that site over every protocol a Benchmark can use: HTTP/1.1 in clear,
// HTTP/2 over TLS (Auto, HTTP/2) and HTTP/1.1 over TLS (GODEBUG=http2client=0, what the Job sets for HTTP/1.1).
// The victim must see no request, and the summary must count every answer as a redirect, none as an error.
// Before each run a client that does follow redirects proves the site really leads to the victim.
func TestRunnerFollowsNoRedirect(t *testing.T) {
	k6 := k6Binary(t)
	bin := serverbin.Require(t)
	var victimHits atomic.Int64
	victim := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		victimHits.Add(1)
		fmt.Fprint(w, "the victim's answer")
	}))
	defer victim.Close()

	root := t.TempDir()
	for name, body := range map[string]string{
		"index.html": "<h1>site</h1>",
		"a.html":     "a",
		"_redirects": "/*  " + victim.URL + "/:splat  302!\n",
	} {
		if err := os.WriteFile(filepath.Join(root, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	certPEM, keyPEM := testcerts.SelfSigned(t, testcerts.Options{}, "site.default.svc")
	certDir := t.TempDir() // outside the root: the site serves none of it
	certFile, keyFile := filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	tlsAddr := serverbin.FreeAddr(t)
	srv := serverbin.Start(t, bin, []string{"--root", root, "--listen", "", "--admin-listen", "",
		"--tls-listen", tlsAddr, "--tls-cert", certFile, "--tls-key", keyFile})

	for _, tc := range []struct {
		name, base, godebug, want string
	}{
		{"HTTP/1.1 in clear", "http://" + srv.HTTPAddr, "", benchresults.ProtocolHTTP11},
		{"HTTP/2 over TLS", "https://" + tlsAddr, "", benchresults.ProtocolHTTP2},
		{"HTTP/1.1 over TLS", "https://" + tlsAddr, "http2client=0", benchresults.ProtocolHTTP11},
	} {
		t.Run(tc.name, func(t *testing.T) {
			requireLeadsToVictim(t, tc.base+"/a.html", &victimHits)
			victimHits.Store(0)
			if tc.godebug != "" {
				t.Setenv("GODEBUG", tc.godebug) // k6 inherits the runner's environment, as in the pod
			}
			plan := k6script.Plan{Kind: k6script.KindConstant, BaseURL: tc.base, KeepAlive: true, Parallelism: 1,
				StrideSeconds: 2, InsecureSkipTLSVerify: true,
				Steps: []benchresults.PlanStep{{Index: 0, VUs: 2, DurationSeconds: 1}}}
			dir := writePlan(t, plan, "/", "/a.html", "/missing")
			s := runOneStep(t, k6, dir)
			if n := victimHits.Load(); n != 0 {
				t.Fatalf("k6 followed the redirects: the victim received %d requests (k6 counted %d, %d as 3xx)", n, s.Requests, s.Redirects)
			}
			if s.Requests == 0 || s.Redirects != s.Requests || s.Errors != 0 || s.Protocols[tc.want] != s.Requests {
				t.Fatalf("summary: %d requests, %d redirects, %d errors, protocols %v; want every request a 3xx over %s",
					s.Requests, s.Redirects, s.Errors, s.Protocols, tc.want)
			}
		})
	}
}

// requireLeadsToVictim: a client that follows redirects (as k6 does by default) from url ends at the victim.
func requireLeadsToVictim(t *testing.T, url string, hits *atomic.Int64) {
	t.Helper()
	before := hits.Load()
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig.InsecureSkipVerify = true // the server's self-signed certificate
	c := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if hits.Load() == before {
		t.Fatalf("%s did not lead to the victim (status %d): the test would prove nothing", url, resp.StatusCode)
	}
	first, err := (&http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse
	}}).Get(url)
	if err != nil {
		t.Fatal(err)
	}
	first.Body.Close()
	if first.StatusCode != http.StatusFound {
		t.Fatalf("%s answered %d, want 302", url, first.StatusCode)
	}
}
