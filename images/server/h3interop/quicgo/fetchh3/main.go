// Command fetchh3 is the e2e tests' in-cluster HTTP/3 client (quic-go, the interop client's QUIC stack): it runs in
// a pod of the e2e fetch image (FROM scratch, beside e2e/cmd/fetch, which cannot speak HTTP/3 without quic-go in
// the root go.mod) and GETs each URL over HTTP/3 only (ALPN h3, UDP), trusting only -ca-pem, printing one JSON
// line per URL in e2e/cmd/fetch's Result shape (url, status, size, sha256, proto, error), so a test compares the
// exact bytes with the files on disk. -server-name verifies the certificate against that name while the URL
// names an address (a Service's ClusterIP of one family). Every URL is fetched on one QUIC connection per host,
// each request bounded by -timeout; nothing falls back to TCP.
//
//	fetchh3 -ca-pem PEM [-server-name NAME] [-timeout 30s] URL...
package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// result is e2e/cmd/fetch's Result, the fields an HTTP/3 fetch fills.
type result struct {
	URL    string `json:"url"`
	Status int    `json:"status"`
	Size   int    `json:"size"`
	SHA256 string `json:"sha256"`
	Proto  string `json:"proto,omitempty"`
	Error  string `json:"error,omitempty"`
}

func main() {
	caPEM := flag.String("ca-pem", "", "trust only this CA (PEM)")
	serverName := flag.String("server-name", "", "verify the certificate against this name (default: the URL's host)")
	timeout := flag.Duration("timeout", 30*time.Second, "bound on each request, the QUIC handshake included")
	flag.Parse()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(*caPEM)) {
		fmt.Fprintln(os.Stderr, "fetchh3: -ca-pem holds no certificate")
		os.Exit(2)
	}
	if !fetchAll(roots, *serverName, *timeout, flag.Args()) {
		os.Exit(1)
	}
}

// fetchAll prints a result for each URL; false when any failed.
func fetchAll(roots *x509.CertPool, serverName string, timeout time.Duration, urls []string) bool {
	tr := &http3.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS13}}
	defer tr.Close()
	ok := true
	enc := json.NewEncoder(os.Stdout)
	for _, u := range urls {
		r := get(tr, u, timeout)
		ok = ok && r.Error == ""
		_ = enc.Encode(r)
	}
	return ok
}

func get(tr *http3.Transport, url string, timeout time.Duration) result {
	r := result{URL: url}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	rsp, err := tr.RoundTrip(req)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer rsp.Body.Close()
	h := sha256.New()
	n, err := io.Copy(h, rsp.Body)
	if err != nil {
		r.Error = err.Error()
	}
	r.Status, r.Size, r.SHA256, r.Proto = rsp.StatusCode, int(n), hex.EncodeToString(h.Sum(nil)), rsp.Proto
	return r
}
