// Command h3idle holds idle HTTP/3 connections, for measuring what one costs the server (issue 42 asks for idle
// memory per h3 connection beside h2's; docs/bench/h3-cost-2026-12-03.md): it opens -n connections one after the
// other, each with its own UDP socket (quic-go's http3.Transport), makes one GET on each and reads the answer
// whole, then keeps them all open and silent (no keep-alive pings: the server's idle timeout must be longer than
// the measurement) until its stdin ends. It prints "open <ok> <failed>" once every connection has its answer.
//
//	h3idle -ca-pem FILE -n 1000 URL < control
package main

import (
	"bufio"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

func main() {
	caPEM := ""
	n := 1
	args := os.Args[1:]
	for len(args) > 1 && args[0][0] == '-' {
		switch args[0] {
		case "-ca-pem":
			caPEM = args[1]
		case "-n":
			_, _ = fmt.Sscan(args[1], &n)
		}
		args = args[2:]
	}
	if len(args) != 1 || caPEM == "" {
		fmt.Fprintln(os.Stderr, "usage: h3idle -ca-pem FILE -n N URL")
		os.Exit(2)
	}
	roots := x509.NewCertPool()
	pem, err := os.ReadFile(caPEM)
	if err != nil || !roots.AppendCertsFromPEM(pem) {
		fmt.Fprintf(os.Stderr, "-ca-pem %q holds no certificate (%v)\n", caPEM, err)
		os.Exit(2)
	}
	held := make([]*http3.Transport, 0, n)
	failed := 0
	for range n {
		tr := &http3.Transport{
			TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS13},
			QUICConfig:      &quic.Config{KeepAlivePeriod: 0, MaxIdleTimeout: 10 * time.Minute},
		}
		resp, err := (&http.Client{Transport: tr}).Get(args[0])
		if err != nil {
			failed++
			continue
		}
		_, err = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			failed++
			continue
		}
		held = append(held, tr)
	}
	fmt.Printf("open %d %d\n", len(held), failed)
	_, _ = io.Copy(io.Discard, bufio.NewReader(os.Stdin))
	for _, tr := range held {
		_ = tr.Close()
	}
}
