// Command quicgo is the second independent HTTP/3 client of `make h3-interop`: quic-go (its own QUIC and TLS
// stacks, Go's crypto/tls, its http3 package) against the real server binary, over the QUIC interop runner's case
// list as far as a test of one server on loopback can take it. hack/h3-interop.py starts the server (on `[::]`,
// dual-stack, with a certificate larger than three Initials) and runs this with its addresses, the certificate and
// the served tree; every answer is compared byte for byte with the file in that tree.
//
// Output: one line per case, `PASS case: what was seen`, `FAIL case: what went wrong`, or `N/I case: why the
// server does not do it, and what it does instead` (an N/I line still asserts that "instead": it turns into FAIL
// when the server misbehaves there). Exit status 1 when any case failed.
//
// The lossy, corrupting and rebinding paths are a UDP relay of this program's own (relay.go), its fates drawn
// from an RNG seeded per case, so a case sees the same pattern every run. Every wait is bounded by the case's
// context (-case-timeout); nothing here sleeps to guess that something happened, but for the amplification
// case's observation window, which only bounds how long the server is watched (an upper limit on bytes holds for
// any window).
package main

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"
)

// env is what every case needs: where the server is, how to trust it, what it serves.
type env struct {
	addr4, addr6 *net.UDPAddr
	admin        string // host:port of the admin listener (metrics)
	roots        *x509.CertPool
	certDER      []byte
	root         string // the served tree
}

type status string

const (
	pass    status = "PASS"
	fail    status = "FAIL"
	notImpl status = "N/I"
)

type result struct {
	status status
	detail string
}

func passed(f string, a ...any) result        { return result{pass, fmt.Sprintf(f, a...)} }
func failed(f string, a ...any) result        { return result{fail, fmt.Sprintf(f, a...)} }
func absent(f string, a ...any) result        { return result{notImpl, fmt.Sprintf(f, a...)} }
func failedErr(what string, err error) result { return failed("%s: %v", what, err) }

func main() {
	var addr4, addr6, certFile string
	e := &env{}
	only := flag.String("cases", "", "comma-separated cases to run (default: all, in order)")
	timeout := flag.Duration("case-timeout", 60*time.Second, "the longest one case may take")
	flag.StringVar(&addr4, "addr", "", "the server's UDP address over IPv4 (127.0.0.1:PORT)")
	flag.StringVar(&addr6, "addr6", "", "the server's UDP address over IPv6 ([::1]:PORT)")
	flag.StringVar(&e.admin, "admin", "", "the server's admin listener (HOST:PORT), for its metrics")
	flag.StringVar(&certFile, "cert", "", "the server's certificate (PEM), trusted for name localhost")
	flag.StringVar(&e.root, "root", "", "the tree the server serves")
	flag.Parse()
	if addr4 == "" || addr6 == "" || e.admin == "" || certFile == "" || e.root == "" {
		flag.Usage()
		os.Exit(2)
	}
	// quic-go asks for 7 MB socket buffers and warns on stderr when the kernel grants less: irrelevant on loopback.
	os.Setenv("QUIC_GO_DISABLE_RECEIVE_BUFFER_WARNING", "true")
	var err error
	if e.addr4, err = net.ResolveUDPAddr("udp", addr4); err == nil {
		e.addr6, err = net.ResolveUDPAddr("udp", addr6)
	}
	if err == nil {
		err = e.trust(certFile)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "quicgo:", err)
		os.Exit(2)
	}
	want := map[string]bool{}
	for _, c := range strings.Split(*only, ",") {
		if c != "" {
			want[c] = true
		}
	}
	counts := map[status]int{}
	for _, c := range cases {
		if len(want) > 0 && !want[c.name] {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), *timeout)
		t := time.Now()
		r := c.run(ctx, e)
		cancel()
		counts[r.status]++
		fmt.Printf("%s %s: %s (%.2f s)\n", r.status, c.name, r.detail, time.Since(t).Seconds())
	}
	fmt.Printf("quic-go cases: %d pass, %d fail, %d not implemented\n", counts[pass], counts[fail], counts[notImpl])
	if counts[fail] > 0 {
		os.Exit(1)
	}
}

func (e *env) trust(certFile string) error {
	data, err := os.ReadFile(certFile)
	if err != nil {
		return err
	}
	block, _ := pem.Decode(data)
	if block == nil {
		return fmt.Errorf("%s: no PEM block", certFile)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return err
	}
	e.roots = x509.NewCertPool()
	e.roots.AddCert(cert)
	e.certDER = block.Bytes
	return nil
}
