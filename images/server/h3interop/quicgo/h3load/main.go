// Command h3load drives HTTP/3 load for `make bench-server`'s h3 rows, the way h2load drives the h2 rows (Debian
// 12's h2load has no HTTP/3, nor has Debian 13's: its nghttp2-client is built without ngtcp2). It is quic-go's
// HTTP/3 client (the interop client's stack, a QUIC implementation independent of the server's quinn-proto):
// -c connections, each with -m requests in flight (concurrent streams), for -D or until -n requests, walking the
// URIs of -i in order (each connection from its own offset) or one URL; with -new-conn-every N each connection is
// closed after N requests and a new one made (a full handshake: no session resumption). It prints one JSON
// summary on stdout: requests done, errors, status classes, body bytes, seconds, and the CPU time it used itself
// (user and system), so the harness can tell a client at its own ceiling from a server at its cap. Run it pinned
// (taskset) with GOMAXPROCS set to the CPUs it may use.
//
//	h3load -ca-pem FILE [-server-name NAME] -c 4 -m 16 -D 10s [-n 0] [-new-conn-every 0] (-i URIFILE | URL)
package main

import (
	"bufio"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/quic-go/quic-go/http3"
)

// summary is the one line h3load prints (images/server/bench/hsbench/h3load.py reads it).
type summary struct {
	Requests   int64   `json:"requests"` // responses read whole
	Errors     int64   `json:"errors"`   // requests that got no whole response
	Status2xx  int64   `json:"status2xx"`
	Status3xx  int64   `json:"status3xx"`
	Status4xx  int64   `json:"status4xx"`
	Status5xx  int64   `json:"status5xx"`
	BodyBytes  int64   `json:"bodyBytes"`
	Seconds    float64 `json:"seconds"`
	Conns      int64   `json:"connections"` // connections opened
	UserCPU    float64 `json:"userCPUSeconds"`
	SystemCPU  float64 `json:"systemCPUSeconds"`
	FirstError string  `json:"firstError,omitempty"`
}

type counters struct {
	requests, errors, bytes, conns atomic.Int64
	byClass                        [6]atomic.Int64
	firstErr                       sync.Once
	firstError                     string
}

func (c *counters) fail(err error) {
	c.errors.Add(1)
	c.firstErr.Do(func() { c.firstError = err.Error() })
}

func main() {
	caPEM := flag.String("ca-pem", "", "trust only the CA in this PEM file")
	serverName := flag.String("server-name", "", "verify the certificate against this name (default: the URL's host)")
	conns := flag.Int("c", 1, "connections")
	streams := flag.Int("m", 1, "requests in flight per connection (concurrent streams)")
	duration := flag.Duration("D", 0, "run this long (0: until -n requests)")
	total := flag.Int64("n", 0, "stop after this many requests in all (0: until -D)")
	newConnEvery := flag.Int64("new-conn-every", 0, "close each connection after this many requests and open a new one (0: never)")
	uriFile := flag.String("i", "", "a file of URLs (or paths, joined to the URL argument), one per line, walked in order")
	flag.Parse()
	if (*duration == 0) == (*total == 0) {
		fatal("give exactly one of -D and -n")
	}
	roots := x509.NewCertPool()
	pem, err := os.ReadFile(*caPEM)
	if err != nil || !roots.AppendCertsFromPEM(pem) {
		fatal(fmt.Sprintf("-ca-pem %q holds no certificate (%v)", *caPEM, err))
	}
	uris, err := targets(*uriFile, flag.Args())
	if err != nil {
		fatal(err.Error())
	}
	tlsConf := &tls.Config{RootCAs: roots, ServerName: *serverName, MinVersion: tls.VersionTLS13,
		ClientSessionCache: nil} // no resumption: a new connection is a full handshake, as h2load's

	ctx := context.Background()
	if *duration > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, *duration)
		defer cancel()
	}
	var c counters
	var budget atomic.Int64 // requests left when -n is given
	budget.Store(*total)
	take := func() bool { return *total == 0 || budget.Add(-1) >= 0 }

	start := time.Now()
	var wg sync.WaitGroup
	for i := range *conns {
		wg.Go(func() { connection(ctx, tlsConf, uris, i*len(uris)/max(*conns, 1), *streams, *newConnEvery, take, &c) })
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	s := summary{Requests: c.requests.Load(), Errors: c.errors.Load(), BodyBytes: c.bytes.Load(), Seconds: elapsed,
		Conns: c.conns.Load(), Status2xx: c.byClass[2].Load(), Status3xx: c.byClass[3].Load(), Status4xx: c.byClass[4].Load(),
		Status5xx: c.byClass[5].Load(), UserCPU: tv(ru.Utime), SystemCPU: tv(ru.Stime), FirstError: c.firstError}
	_ = json.NewEncoder(os.Stdout).Encode(s)
}

// connection runs one connection's worth of load: streams workers sharing one QUIC connection (one http3.Transport
// holds one connection per host), replaced by a new one after newConnEvery requests.
func connection(ctx context.Context, tlsConf *tls.Config, uris []string, offset, streams int, newConnEvery int64,
	take func() bool, c *counters) {
	next := offset
	var exhausted atomic.Bool // the -n budget ran out: no new connection either
	for ctx.Err() == nil && !exhausted.Load() {
		tr := &http3.Transport{TLSClientConfig: tlsConf.Clone()}
		c.conns.Add(1)
		var done atomic.Int64
		var mu sync.Mutex
		pick := func() (string, bool) {
			if newConnEvery > 0 && done.Add(1) > newConnEvery {
				return "", false
			}
			if !take() {
				exhausted.Store(true)
				return "", false
			}
			mu.Lock()
			defer mu.Unlock()
			u := uris[next%len(uris)]
			next++
			return u, true
		}
		var wg sync.WaitGroup
		for range streams {
			wg.Go(func() {
				for ctx.Err() == nil {
					u, ok := pick()
					if !ok {
						return
					}
					get(ctx, tr, u, c)
				}
			})
		}
		wg.Wait()
		_ = tr.Close()
		if newConnEvery == 0 {
			return
		}
	}
}

func get(ctx context.Context, tr *http3.Transport, u string, c *counters) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		c.fail(err)
		return
	}
	rsp, err := tr.RoundTrip(req)
	if err != nil {
		if ctx.Err() == nil {
			c.fail(err)
		}
		return
	}
	n, err := io.Copy(io.Discard, rsp.Body)
	_ = rsp.Body.Close()
	if err != nil {
		if ctx.Err() == nil { // a body cut by the run's end (H3_REQUEST_CANCELLED) is not the server's failure
			c.fail(err)
		}
		return
	}
	c.requests.Add(1)
	c.bytes.Add(n)
	if k := rsp.StatusCode / 100; k >= 2 && k <= 5 {
		c.byClass[k].Add(1)
	}
}

// targets is the URL list: -i's lines (a line starting with "/" is joined to the one URL argument), else the URL.
func targets(file string, args []string) ([]string, error) {
	if len(args) > 1 {
		return nil, errors.New("give at most one URL")
	}
	if file == "" {
		if len(args) != 1 {
			return nil, errors.New("give a URL, or -i with a file of URLs")
		}
		return args, nil
	}
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var base *url.URL
	if len(args) == 1 {
		if base, err = url.Parse(args[0]); err != nil {
			return nil, err
		}
	}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" {
			continue
		}
		if line[0] == '/' {
			if base == nil {
				return nil, fmt.Errorf("%s: a path (%q) needs a URL argument to join it to", file, line)
			}
			line = base.ResolveReference(&url.URL{Path: line}).String()
		}
		out = append(out, line)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no URL", file)
	}
	return out, sc.Err()
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func fatal(msg string) {
	fmt.Fprintln(os.Stderr, "h3load:", msg)
	os.Exit(2)
}
