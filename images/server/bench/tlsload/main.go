// Command tlsload is the load client of the benchmark's HTTPS rows that open one new TLS connection per request
// (images/server/bench, workloads tls-new-full and tls-new-resumed). wrk cannot serve there: it resumes sessions
// on its own when it reconnects (so it cannot measure full handshakes) and cannot say whether it did.
//
// Every one of -c goroutines loops until -d has passed: connect, TLS handshake, one GET with Connection: close,
// read the whole response, close. With -resume the goroutines share a client session cache, so every handshake
// resumes a session (TLS 1.3 tickets); without it every handshake is a full one (ECDHE + certificate signature).
// Each goroutine first makes one untimed connection, so the timed loop of the resumed row never starts without a
// ticket. The client counts what really happened (full vs resumed handshakes, the negotiated version and cipher
// suite) and prints it with the request rate, one "key value" pair per line, for hsbench/tlsload.py to check and
// parse.
package main

import (
	"bufio"
	"crypto/tls"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime/debug"
	"runtime/pprof"
	"sort"
	"sync"
	"time"
)

// counts is what one goroutine saw; merged once at the end, so the hot loop shares nothing but the session cache.
type counts struct {
	requests, errors, non2xx, full, resumed, bytes int64
	suites                                         map[string]int64 // "TLS 1.3 TLS_AES_128_GCM_SHA256" → handshakes
	latencies                                      []time.Duration
	firstErr                                       error
}

type target struct {
	addr, path, host string
	timeout          time.Duration
}

func main() {
	addr := flag.String("addr", "", "host:port of the HTTPS listener")
	path := flag.String("path", "/100.html", "path to GET on every connection")
	conns := flag.Int("c", 100, "concurrent connections (goroutines)")
	dur := flag.Duration("d", 5*time.Second, "timed duration")
	resume := flag.Bool("resume", false, "resume sessions (shared client session cache); off: full handshakes")
	timeout := flag.Duration("timeout", 5*time.Second, "deadline for one connection (connect to last byte)")
	cpuProfile := flag.String("cpuprofile", "", "write a CPU profile of the timed loop here (is the client the limit?)")
	flag.Parse()
	// A profile of the full-handshake row: the client's CPU goes to X25519 and the P-256 signature check, then to
	// the garbage collector scanning 100 goroutine stacks (~10%). The live heap is a few MB; collecting at 4× that
	// instead of 2× leaves more of the client's one CPU for handshakes at no real memory cost.
	debug.SetGCPercent(400)
	if *addr == "" || *conns < 1 {
		fmt.Fprintln(os.Stderr, "usage: tlsload -addr HOST:PORT [-path P] [-c N] [-d DUR] [-resume]")
		os.Exit(2)
	}
	host, _, err := net.SplitHostPort(*addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	cfg := &tls.Config{
		// The benchmark's certificate is self-signed and made at run time; the harness checks separately that
		// every server presents it. Skipping verification does not skip the handshake's signature check.
		InsecureSkipVerify: true, //nolint:gosec // benchmark client against a throwaway certificate on loopback
		MinVersion:         tls.VersionTLS13,
		MaxVersion:         tls.VersionTLS13,
		NextProtos:         []string{"http/1.1"},
		// X25519 only, like wrk's OpenSSL 3.0: Go would otherwise also send a post-quantum key share that no
		// peer accepts, paying for it on every connection.
		CurvePreferences: []tls.CurveID{tls.X25519},
	}
	if *resume {
		cfg.ClientSessionCache = tls.NewLRUClientSessionCache(*conns)
	}
	t := target{addr: *addr, path: *path, host: host, timeout: *timeout}

	all := make([]*counts, *conns)
	primers := make([]*counts, *conns)
	var primed, done sync.WaitGroup
	start := make(chan struct{})
	var deadline time.Time
	for i := range all {
		c := &counts{suites: map[string]int64{}}
		all[i] = c
		p := &counts{suites: map[string]int64{}}
		primers[i] = p
		primed.Add(1)
		done.Add(1)
		go func() {
			defer done.Done()
			p.one(cfg, t) // untimed: leaves a ticket in the cache
			primed.Done()
			<-start
			for time.Now().Before(deadline) {
				c.one(cfg, t)
			}
		}()
	}
	primed.Wait()
	if *cpuProfile != "" {
		stop, err := startProfile(*cpuProfile)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		defer stop()
	}
	began := time.Now()
	deadline = began.Add(*dur)
	close(start)
	done.Wait()
	elapsed := time.Since(began)
	p := merge(primers)
	report(os.Stdout, merge(all), elapsed)
	// the server counts these too: the harness compares our server's handshake counters with full + primer
	fmt.Printf("primer_handshakes_full %d\nprimer_handshakes_resumed %d\n", p.full, p.resumed)
}

// one makes one connection: handshake, request, whole response, close; it counts the outcome in c.
func (c *counts) one(cfg *tls.Config, t target) {
	began := time.Now()
	if err := c.exchange(cfg, t); err != nil {
		c.errors++
		if c.firstErr == nil {
			c.firstErr = err
		}
		return
	}
	c.requests++
	c.latencies = append(c.latencies, time.Since(began))
}

func (c *counts) exchange(cfg *tls.Config, t target) error {
	raw, err := net.DialTimeout("tcp", t.addr, t.timeout)
	if err != nil {
		return err
	}
	conn := tls.Client(raw, cfg)
	defer func() { _ = conn.Close() }()
	if err := conn.SetDeadline(time.Now().Add(t.timeout)); err != nil {
		return err
	}
	if err := conn.Handshake(); err != nil {
		return fmt.Errorf("handshake: %w", err)
	}
	st := conn.ConnectionState()
	if st.DidResume {
		c.resumed++
	} else {
		c.full++
	}
	c.suites[tls.VersionName(st.Version)+" "+tls.CipherSuiteName(st.CipherSuite)]++
	if _, err := fmt.Fprintf(conn, "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", t.path, t.host); err != nil {
		return fmt.Errorf("write: %w", err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	n, err := io.Copy(io.Discard, resp.Body)
	_ = resp.Body.Close()
	if err != nil {
		return fmt.Errorf("read body: %w", err)
	}
	c.bytes += n
	if resp.StatusCode < 200 || resp.StatusCode > 399 {
		c.non2xx++
	}
	return nil
}

func startProfile(path string) (func(), error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { pprof.StopCPUProfile(); _ = f.Close() }, nil
}

func merge(all []*counts) *counts {
	m := &counts{suites: map[string]int64{}}
	for _, c := range all {
		m.requests += c.requests
		m.errors += c.errors
		m.non2xx += c.non2xx
		m.full += c.full
		m.resumed += c.resumed
		m.bytes += c.bytes
		m.latencies = append(m.latencies, c.latencies...)
		for k, v := range c.suites {
			m.suites[k] += v
		}
		if m.firstErr == nil {
			m.firstErr = c.firstErr
		}
	}
	return m
}

func percentileMs(sorted []time.Duration, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(p * float64(len(sorted)-1))
	return float64(sorted[i].Microseconds()) / 1000
}

func report(w io.Writer, m *counts, elapsed time.Duration) {
	sort.Slice(m.latencies, func(i, j int) bool { return m.latencies[i] < m.latencies[j] })
	secs := elapsed.Seconds()
	_, _ = fmt.Fprintf(w, "requests %d\nseconds %.3f\nrps %.1f\nerrors %d\nnon2xx %d\n", m.requests, secs,
		float64(m.requests)/secs, m.errors, m.non2xx)
	_, _ = fmt.Fprintf(w, "handshakes_full %d\nhandshakes_resumed %d\nbytes_read %d\np50_ms %.3f\np99_ms %.3f\n",
		m.full, m.resumed, m.bytes, percentileMs(m.latencies, 0.50), percentileMs(m.latencies, 0.99))
	names := make([]string, 0, len(m.suites))
	for k := range m.suites {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, k := range names {
		_, _ = fmt.Fprintf(w, "suite %s %d\n", k, m.suites[k])
	}
	if m.firstErr != nil {
		_, _ = fmt.Fprintf(w, "first_error %s\n", m.firstErr)
	}
}
