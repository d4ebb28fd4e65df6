// Command h3curl sends one request over HTTP/3 only (quic-go; ALPN h3, UDP, nothing falls back to TCP) and
// writes the answer the way `curl -D HEAD -o BODY` does, so that tests/h2.rs compares our HTTP/3 answers with
// our HTTP/1.1 ones field for field: HEAD gets the status line (`HTTP/3 200`) and one `name: value` line per
// field (lowercase; several values of one name in the order received), BODY the body bytes. Unlike Go's usual
// client it asks for no compression of its own and decodes nothing: the body is the bytes sent.
//
//	h3curl -ca-pem FILE [-server-name NAME] [-X METHOD] [-H 'Name: value']... -D HEAD -o BODY URL
//
// quic-go's client keeps a response's fields in a map, so their order is not kept: the caller compares them
// sorted.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/quic-go/quic-go/http3"
)

type headers []string

func (h *headers) String() string     { return strings.Join(*h, ", ") }
func (h *headers) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	caFile := flag.String("ca-pem", "", "trust only the CA in this PEM file")
	serverName := flag.String("server-name", "", "verify the certificate against this name and send it as :authority (with the URL's port)")
	method := flag.String("X", http.MethodGet, "the request method")
	headFile := flag.String("D", "", "write the status line and fields here")
	bodyFile := flag.String("o", "", "write the body here")
	timeout := flag.Duration("timeout", 20*time.Second, "bound on the request, the QUIC handshake included")
	var hs headers
	flag.Var(&hs, "H", "a request field, 'Name: value' (repeatable)")
	flag.Parse()
	if err := run(*caFile, *serverName, *method, hs, *headFile, *bodyFile, *timeout, flag.Args()); err != nil {
		fmt.Fprintln(os.Stderr, "h3curl:", err)
		os.Exit(1)
	}
}

func run(caFile, serverName, method string, hs headers, headFile, bodyFile string, timeout time.Duration,
	args []string) error {
	if len(args) != 1 || headFile == "" || bodyFile == "" {
		return fmt.Errorf("want -D, -o and one URL")
	}
	pem, err := os.ReadFile(caFile)
	if err != nil {
		return err
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(pem) {
		return fmt.Errorf("%s holds no certificate", caFile)
	}
	tr := &http3.Transport{
		TLSClientConfig:    &tls.Config{RootCAs: roots, ServerName: serverName, MinVersion: tls.VersionTLS13},
		DisableCompression: true,
	}
	defer tr.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, args[0], nil)
	if err != nil {
		return err
	}
	if serverName != "" {
		req.Host = serverName + ":" + req.URL.Port()
	}
	for _, h := range hs {
		name, value, ok := strings.Cut(h, ":")
		if !ok {
			return fmt.Errorf("-H %q: no colon", h)
		}
		req.Header.Add(strings.TrimSpace(name), strings.TrimSpace(value))
	}
	rsp, err := tr.RoundTrip(req)
	if err != nil {
		return err
	}
	defer rsp.Body.Close()
	body, err := io.ReadAll(rsp.Body)
	if err != nil {
		return err
	}
	var head strings.Builder
	fmt.Fprintf(&head, "%s %d\r\n", strings.TrimSuffix(rsp.Proto, ".0"), rsp.StatusCode)
	names := make([]string, 0, len(rsp.Header))
	for n := range rsp.Header {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		for _, v := range rsp.Header[n] {
			fmt.Fprintf(&head, "%s: %s\r\n", strings.ToLower(n), v)
		}
	}
	head.WriteString("\r\n")
	if err := os.WriteFile(headFile, []byte(head.String()), 0o600); err != nil {
		return err
	}
	return os.WriteFile(bodyFile, body, 0o600)
}
