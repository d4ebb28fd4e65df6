// Command fetch is the e2e tests' in-cluster HTTP client: it runs in a pod (a FROM scratch image, no shell) and
// prints, as one JSON line per URL, the status, size and SHA-256 of the body it received, so a test can compare the
// exact bytes with the files on disk without any traffic leaving the cluster. It also reports the CPUs the pod may
// run on (the shared pool, for a pod that is not Guaranteed with whole CPUs).
//
// With -accept-encoding br it asks for brotli and, when the response is brotli-encoded, decodes it and reports the
// decoded bytes' size and SHA-256 too: a test can then check both that the server compressed and that the encoding
// holds exactly the file's bytes (a stale precompressed sibling would not).
//
// With -ca-pem it fetches https URLs trusting only that CA (the certificate must also name the URL's host), and
// reports the server certificate's serial number and the TLS version; -want-serial polls a URL on new connections
// until the server presents the certificate with that serial (a rotated Secret reaching the server).
//
// With -http2 it speaks HTTP/2 only: over TLS it offers only "h2" in ALPN, and to http URLs it sends HTTP/2 with
// prior knowledge (h2c), so a server that does not speak HTTP/2 there fails the fetch instead of answering over
// HTTP/1.1. Every result reports the protocol of the response (Go's Response.Proto: "HTTP/1.1", "HTTP/2.0").
//
// With -tree it checks a whole tree under each base and prints one result per base (tree.go).
//
// With -host it sends that Host header instead of the URL's (a request to an ingress controller's Service for one
// of the names it routes); -want-status polls the (single) URL until the server answers with that status (a route
// that must go away answering 404).
//
//	fetch [-body] [-accept-encoding br] [-ca-pem PEM] [-http2] [-host NAME]
//	      [-want-sha256 HEX | -want-serial HEX | -want-status CODE] [-poll 150s] URL...
//	fetch -tree LINES BASE...
package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/andybalholm/brotli"
)

// Result is one fetched URL; the e2e tests decode these lines from the pod's log.
type Result struct {
	URL         string `json:"url"`
	Status      int    `json:"status"`
	Size        int    `json:"size"`
	SHA256      string `json:"sha256"`
	ContentType string `json:"contentType,omitempty"`
	// ContentEncoding, DecodedSize and DecodedSHA256 are set with -accept-encoding: the last two only for a
	// brotli body (the one encoding this client decodes).
	ContentEncoding string `json:"contentEncoding,omitempty"`
	DecodedSize     int    `json:"decodedSize,omitempty"`
	DecodedSHA256   string `json:"decodedSha256,omitempty"`
	// CertSerial (hex) and TLSVersion are set for https URLs.
	CertSerial string `json:"certSerial,omitempty"`
	TLSVersion string `json:"tlsVersion,omitempty"`
	Body       string `json:"body,omitempty"`
	Error      string `json:"error,omitempty"`
	// Proto is the response's protocol version, e.g. "HTTP/1.1" or "HTTP/2.0".
	Proto string `json:"proto,omitempty"`
}

// Affinity is printed once, first.
type Affinity struct {
	CPUsAllowedList string `json:"cpusAllowedList"`
}

func main() {
	withBody := flag.Bool("body", false, "include the body (as text) in each result")
	wantSHA := flag.String("want-sha256", "", "poll the (single) URL until its body has this SHA-256")
	poll := flag.Duration("poll", 150*time.Second, "how long -want-sha256 polls before giving up")
	flag.StringVar(&acceptEncoding, "accept-encoding", "", "send this Accept-Encoding (br bodies are also decoded)")
	flag.StringVar(&hostHeader, "host", "", "send this Host header instead of the URL's host")
	wantStatus := flag.Int("want-status", 0, "poll the (single) URL until the server answers with this status")
	caPEM := flag.String("ca-pem", "", "trust only this CA (PEM) for https URLs")
	http2Only := flag.Bool("http2", false, "speak HTTP/2 only: h2 over TLS, h2c with prior knowledge to http URLs")
	wantSerial := flag.String("want-serial", "", "poll the (single) URL, one new connection each time, until the server's certificate has this serial (hex)")
	connect := flag.String("connect", "", "dial this host:port for every URL (TLS still verifies the URL's host), like curl's --connect-to: a site's hostname without DNS for it")
	treeLines := flag.String("tree", "", "check this whole tree (lines \"SHA256 SIZE PATH\") under each base argument (tree.go)")
	flag.Parse()

	out := json.NewEncoder(os.Stdout)
	_ = out.Encode(Affinity{CPUsAllowedList: cpusAllowed()})
	if *treeLines != "" {
		os.Exit(runTree(out, *treeLines, flag.Args()))
	}

	// No Accept-Encoding (DisableCompression): the server must send the identity bytes we compare with the files.
	transport := &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 4}
	if *connect != "" {
		dialer := &net.Dialer{Timeout: 10 * time.Second}
		transport.DialContext = func(ctx context.Context, network, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, network, *connect)
		}
	}
	if *caPEM != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM([]byte(*caPEM)) {
			fail("-ca-pem holds no certificate")
		}
		transport.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	if *http2Only {
		// No HTTP/1 at all: a server that does not negotiate h2 (or does not take the h2c preface) fails the fetch.
		var p http.Protocols
		p.SetHTTP2(true)
		p.SetUnencryptedHTTP2(true)
		transport.Protocols = &p
	}
	// A poll for a new certificate must make a full handshake each time: no kept-alive connection, no resumption.
	transport.DisableKeepAlives = *wantSerial != ""
	client := &http.Client{Timeout: 10 * time.Second, Transport: transport}
	if *wantSerial != "" {
		if flag.NArg() != 1 {
			fail("-want-serial takes exactly one URL")
		}
		deadline := time.Now().Add(*poll)
		for {
			r := get(client, flag.Arg(0), *withBody)
			if r.Error == "" && r.Status == http.StatusOK && strings.EqualFold(r.CertSerial, *wantSerial) {
				_ = out.Encode(r)
				return
			}
			if time.Now().After(deadline) {
				_ = out.Encode(r)
				fail("gave up waiting for certificate serial " + *wantSerial)
			}
			time.Sleep(time.Second)
		}
	}
	if *wantSHA != "" || *wantStatus != 0 {
		if flag.NArg() != 1 {
			fail("-want-sha256 and -want-status take exactly one URL")
		}
		status := http.StatusOK
		if *wantStatus != 0 {
			status = *wantStatus
		}
		deadline := time.Now().Add(*poll)
		for {
			r := get(client, flag.Arg(0), *withBody)
			if r.Error == "" && r.Status == status && (*wantSHA == "" || r.SHA256 == *wantSHA) {
				_ = out.Encode(r)
				return
			}
			if time.Now().After(deadline) {
				_ = out.Encode(r)
				fail(fmt.Sprintf("gave up waiting for status %d, sha256 %q", status, *wantSHA))
			}
			time.Sleep(time.Second)
		}
	}
	failed := false
	for _, u := range flag.Args() {
		r := get(client, u, *withBody)
		// Right after a Service is created, DNS may need a few tries; content errors are the test's to judge.
		for try := 0; r.Error != "" && try < 20; try++ {
			time.Sleep(time.Second)
			r = get(client, u, *withBody)
		}
		failed = failed || r.Error != ""
		_ = out.Encode(r)
	}
	if failed {
		os.Exit(1)
	}
}

// acceptEncoding is the -accept-encoding flag: empty sends no Accept-Encoding at all.
var acceptEncoding string

// hostHeader is the -host flag: empty sends the URL's host.
var hostHeader string

func get(c *http.Client, url string, withBody bool) Result {
	r := Result{URL: url}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	if hostHeader != "" {
		req.Host = hostHeader
	}
	resp, err := c.Do(req)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	defer resp.Body.Close()
	if st := resp.TLS; st != nil && len(st.PeerCertificates) > 0 {
		r.CertSerial = st.PeerCertificates[0].SerialNumber.Text(16)
		r.TLSVersion = tls.VersionName(st.Version)
	}
	r.Proto = resp.Proto
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		r.Error = err.Error()
		return r
	}
	sum := sha256.Sum256(body)
	r.Status, r.Size, r.SHA256 = resp.StatusCode, len(body), hex.EncodeToString(sum[:])
	r.ContentType = resp.Header.Get("Content-Type")
	if acceptEncoding != "" {
		r.ContentEncoding = resp.Header.Get("Content-Encoding")
		if r.ContentEncoding == "br" {
			decoded, err := io.ReadAll(brotli.NewReader(bytes.NewReader(body)))
			if err != nil {
				r.Error = "brotli: " + err.Error()
				return r
			}
			dsum := sha256.Sum256(decoded)
			r.DecodedSize, r.DecodedSHA256 = len(decoded), hex.EncodeToString(dsum[:])
		}
	}
	if withBody {
		r.Body = string(body)
	}
	return r
}

// cpusAllowed returns Cpus_allowed_list from /proc/self/status ("" if unreadable).
func cpusAllowed() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "Cpus_allowed_list:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "fetch:", msg)
	os.Exit(1)
}
