package main

import (
	"context"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/quic-go/quic-go"
)

// The cases on a path under the test's control (relay.go): loss, corruption, a client that changes address, a
// client that never answers.

// viaRelay dials the server through a relay with the given impairments; the caller closes both.
func (e *env) viaRelay(ctx context.Context, c2s, s2c *impairment, qc *quic.Config) (*relay, *client, error) {
	r, err := newRelay(e.addr4, c2s, s2c)
	if err != nil {
		return nil, nil, err
	}
	c, err := e.dial(ctx, dialOpts{to: r.addr(), quic: qc})
	if err != nil {
		r.close()
		return nil, nil, err
	}
	return r, c, nil
}

// amplificationLimit: the relay lets the client's first datagram (its Initial, the whole ClientHello with a classic
// key share) through and nothing after, and
// counts what the server sends back. Before the client's address is validated the server may send at most 3×
// what it received (RFC 9000 §8.1). The certificate is made larger than that, so the limit is what stops the
// server's first flight; the window watched ends when the server has been quiet for a while (its first PTO is
// within it), which only bounds the observation: more time could only add bytes, never make a pass of a fail.
func amplificationLimit(ctx context.Context, e *env) result {
	r, err := newRelay(e.addr4, only(1), clean())
	if err != nil {
		return failedErr("relay", err)
	}
	defer r.close()
	dctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		if c, err := e.dial(dctx, dialOpts{to: r.addr(), classicKeyShare: true}); err == nil {
			c.close()
		}
	}()
	const quiet, most = 1500 * time.Millisecond, 8 * time.Second
	last, lastChange, start := int64(-1), time.Now(), time.Now()
	for time.Since(start) < most && (last <= 0 || time.Since(lastChange) < quiet) {
		if n := r.s2cBytes.Load(); n != last {
			last, lastChange = n, time.Now()
		}
		select {
		case <-ctx.Done():
			return failed("the case's time ran out")
		case <-time.After(50 * time.Millisecond):
		}
	}
	cancel()
	<-done
	in, out := r.c2sBytes.Load(), r.s2cBytes.Load()
	switch {
	case r.c2sDatagrams.Load() != 1:
		return failed("%d datagrams reached the server, want 1", r.c2sDatagrams.Load())
	case len(e.certDER) <= int(3*in):
		return failed("the certificate (%d bytes) fits in 3× the Initial (%d bytes): the case tests nothing",
			len(e.certDER), in)
	case out > 3*in:
		r.mu.Lock()
		defer r.mu.Unlock()
		return failed("the server sent %d bytes (datagrams %v) for a %d-byte Initial, over 3×", out, r.s2cSizes, in)
	case out <= in:
		r.mu.Lock()
		defer r.mu.Unlock()
		return failed("the server sent only %d bytes (datagrams %v) for a %d-byte Initial: it did not use its budget",
			out, r.s2cSizes, in)
	}
	return passed("a %d-byte Initial, the server's first flight capped at %d bytes (%.2f×; certificate %d bytes)",
		in, out, float64(out)/float64(in), len(e.certDER))
}

// rebinding moves the client's path at 1 MB into a 10 MB transfer (the relay's upstream socket replaced with the
// client's next datagram: a new port, or a new address too; relay.go) and checks the transfer and one request
// after it, and that most of the body went to the new port (the server followed the client there).
func (e *env) rebinding(ctx context.Context, newIP net.IP, what string) result {
	// A stall after the rebinding ends at the idle timeout: 10 s rather than quic-go's 30.
	r, c, err := e.viaRelay(ctx, clean(), clean(), &quic.Config{MaxIdleTimeout: 10 * time.Second})
	if err != nil {
		return failedErr("dial through the relay", err)
	}
	defer r.close()
	defer c.close()
	var rebindErr error
	if d := e.fetchExact(ctx, c, "/huge.bin", 1<<20, func() { rebindErr = r.rebind(newIP) }); d != "" {
		legs := r.describeLegs()
		r.mu.Lock()
		defer r.mu.Unlock()
		return failed("%s (the relay forwarded %d datagrams to the server; to the client: %v bytes; %s)", d,
			r.c2sDatagrams.Load(), r.s2cTo, legs)
	}
	if rebindErr != nil {
		return failedErr("rebind", rebindErr)
	}
	if d := e.fetchExact(ctx, c, "/small.txt", 0, nil); d != "" {
		return failed("after the rebinding: %s", d)
	}
	l := r.lastLeg()
	if l.moved.IsZero() || l.s2cBytes < 5_000_000 {
		return failed("the transfer completed but only %d bytes reached the client through its new port: the "+
			"rebinding tested nothing (%s)", l.s2cBytes, r.describeLegs())
	}
	after := float64(l.moved.Sub(l.asked).Microseconds()) / 1000
	return passed("%s at 1 MB into 10 MB, taken by the client's next datagram %.1f ms later; %.1f MB then reached "+
		"it there: the transfer and a request after it byte-exact", what, after, float64(l.s2cBytes)/1e6)
}

func rebindPort(ctx context.Context, e *env) result {
	return e.rebinding(ctx, net.IPv4(127, 0, 0, 1), "a new client port")
}

func rebindAddr(ctx context.Context, e *env) result {
	return e.rebinding(ctx, net.IPv4(127, 0, 0, 2), "a new client address (127.0.0.2)")
}

// connectionMigration: the runner's case has the client move to the server's preferred_address, which this
// server does not offer (it listens on one address). What is checked instead is the client's own migration
// (RFC 9000 §9): a new socket probed (PATH_CHALLENGE answered) and switched to, then requests on it.
func connectionMigration(ctx context.Context, e *env) result {
	// Through a relay: it sees the client's new address, and counts what the server sends to each one.
	r, c, err := e.viaRelay(ctx, clean(), clean(), nil)
	if err != nil {
		return failedErr("dial through the relay", err)
	}
	defer r.close()
	defer c.close()
	if d := e.fetchExact(ctx, c, "/small.txt", 0, nil); d != "" {
		return failed("%s", d)
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		return failedErr("a second socket", err)
	}
	tr := &quic.Transport{Conn: udp}
	defer tr.Close()
	p, err := c.conn.AddPath(tr)
	if err != nil {
		return failedErr("AddPath", err)
	}
	if err := p.Probe(ctx); err != nil {
		return failedErr("probing the new path", err)
	}
	if err := p.Switch(); err != nil {
		return failedErr("switching to the new path", err)
	}
	newAddr := udp.LocalAddr().String()
	before := r.sentTo(newAddr)
	if d := e.fetchAll(ctx, c, []string{"/large.bin", "/small.txt"}); d != "" {
		return failed("after the migration: %s", d)
	}
	if got := r.sentTo(newAddr) - before; got < 3_000_000 {
		return failed("only %d bytes went to the new path for a 3 MB answer", got)
	}
	return absent("the server offers no preferred_address; checked instead: the client's own migration (new " +
		"socket probed and switched to), then 3 MB and a request byte-exact, sent to the new path")
}

// lossy runs `conns` connections through a relay that drops and corrupts datagrams in both directions, each
// fetching `paths`. Handshakes may take several probe timeouts, so quic-go's handshake timeout is raised.
func (e *env) lossy(ctx context.Context, seed uint64, dropPct, corruptPct, conns int, paths []string) result {
	r, err := newRelay(e.addr4, impair(seed, dropPct, corruptPct), impair(seed+1, dropPct, corruptPct))
	if err != nil {
		return failedErr("relay", err)
	}
	defer r.close()
	qc := &quic.Config{HandshakeIdleTimeout: 30 * time.Second}
	for i := range conns {
		c, err := e.dial(ctx, dialOpts{to: r.addr(), quic: qc})
		if err != nil {
			return failedErr(fmt.Sprintf("connection %d of %d", i+1, conns), err)
		}
		d := e.fetchAll(ctx, c, paths)
		c.close()
		if d != "" {
			return failed("connection %d of %d: %s", i+1, conns, d)
		}
	}
	return passed("%d connection(s) through %d%% loss and %d%% corruption each way (seed %d), %s byte-exact; "+
		"%d datagrams reached the server", conns, dropPct, corruptPct, seed, strings.Join(paths, " "),
		r.c2sDatagrams.Load())
}

func transferLoss(ctx context.Context, e *env) result {
	return e.lossy(ctx, 11, 2, 0, 1, []string{"/large.bin"})
}

func handshakeLoss(ctx context.Context, e *env) result {
	return e.lossy(ctx, 21, 30, 0, 5, []string{"/small.txt"})
}

func transferCorruption(ctx context.Context, e *env) result {
	return e.lossy(ctx, 31, 0, 2, 1, []string{"/large.bin"})
}

func handshakeCorruption(ctx context.Context, e *env) result {
	return e.lossy(ctx, 41, 0, 30, 5, []string{"/small.txt"})
}
