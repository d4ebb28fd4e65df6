package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// A case of the interop runner's list, named as there.
type interopCase struct {
	name string
	run  func(context.Context, *env) result
}

// cases, in the order they run. No retry case: its flood of deaf clients did not reliably reach the server's
// threshold of handshakes in progress (63 of 64 in one CI run of 2026-12-02), and a check that can fail on timing
// blocks CI; aioquic's flood check in hack/h3-interop.py covers the Retry.
var cases = []interopCase{
	{"handshake", handshake},
	{"transfer", transfer},
	{"multiplexing", multiplexing},
	{"http3", semantics},
	{"ipv6", ipv6},
	{"resumption", resumption},
	{"zerortt", zeroRTT},
	{"amplificationlimit", amplificationLimit},
	{"rebind-port", rebindPort},
	{"rebind-addr", rebindAddr},
	{"connectionmigration", connectionMigration},
	{"transferloss", transferLoss},
	{"handshakeloss", handshakeLoss},
	{"transfercorruption", transferCorruption},
	{"handshakecorruption", handshakeCorruption},
	{"keyupdate", keyUpdate},
	{"v2", v2},
	{"ecn", ecn},
}

func handshake(ctx context.Context, e *env) result {
	ev := &events{}
	c, err := e.dial(ctx, dialOpts{to: e.addr4, quic: &quic.Config{Tracer: ev.tracer()}})
	if err != nil {
		return failedErr("dial", err)
	}
	defer c.close()
	st := c.conn.ConnectionState()
	if st.Version != quic.Version1 || st.TLS.NegotiatedProtocol != "h3" || st.TLS.Version != tls.VersionTLS13 {
		return failed("version %v, ALPN %q, TLS %#x", st.Version, st.TLS.NegotiatedProtocol, st.TLS.Version)
	}
	if d := e.fetchExact(ctx, c, "/small.txt", 0, nil); d != "" {
		return failed("%s", d)
	}
	if n := ev.snapshot().retries; n != 0 {
		return failed("%d Retry packets with no flood", n)
	}
	return passed("QUIC v1, TLS 1.3, ALPN h3, no Retry, GET byte-exact")
}

// transfer: the two large files (a 3 MB memory body, a 10 MB disk body) at once on one connection.
func transfer(ctx context.Context, e *env) result {
	c, err := e.dial(ctx, dialOpts{to: e.addr4})
	if err != nil {
		return failedErr("dial", err)
	}
	defer c.close()
	if d := e.fetchAll(ctx, c, []string{"/large.bin", "/huge.bin"}); d != "" {
		return failed("%s", d)
	}
	return passed("3 MB and 10 MB at once on one connection, byte-exact")
}

// multiplexing: every file under many/ at once on one connection: more streams than the server's limit, so
// the client waits for stream credit.
func multiplexing(ctx context.Context, e *env) result {
	files, err := e.tree("many")
	if err != nil {
		return failedErr("the tree", err)
	}
	c, err := e.dial(ctx, dialOpts{to: e.addr4})
	if err != nil {
		return failedErr("dial", err)
	}
	defer c.close()
	if d := e.fetchAll(ctx, c, files); d != "" {
		return failed("%s", d)
	}
	return passed("%d files at once on one connection, byte-exact", len(files))
}

// semantics (the runner's "http3" case, widened): the server's SETTINGS, and the answers whose framing differs
// from a plain 200: HEAD, 404, 304, 206.
func semantics(ctx context.Context, e *env) result {
	c, err := e.dial(ctx, dialOpts{to: e.addr4})
	if err != nil {
		return failedErr("dial", err)
	}
	defer c.close()
	if d := e.fetchExact(ctx, c, "/index.html", 0, nil); d != "" {
		return failed("%s", d)
	}
	select {
	case <-c.h3.ReceivedSettings():
	case <-ctx.Done():
		return failed("no SETTINGS from the server")
	}
	large, err := os.ReadFile(filepath.Join(e.root, "large.bin"))
	if err != nil {
		return failedErr("the tree", err)
	}
	r, err := c.get(ctx, "HEAD", "/large.bin", nil, 0, nil)
	if err != nil || r.status != 200 || r.header.Get("Content-Length") != "3000000" || len(r.body) != 0 {
		return failed("HEAD /large.bin: %d %v %d bytes %v", r.status, r.header, len(r.body), err)
	}
	if r, err = c.get(ctx, "GET", "/missing", nil, 0, nil); err != nil || r.status != 404 {
		return failed("GET /missing: %d %v", r.status, err)
	}
	r, err = c.get(ctx, "GET", "/style.css", nil, 0, nil)
	etag := r.header.Get("Etag")
	if err != nil || r.status != 200 || etag == "" {
		return failed("GET /style.css: %d, ETag %q, %v", r.status, etag, err)
	}
	r, err = c.get(ctx, "GET", "/style.css", http.Header{"If-None-Match": {etag}}, 0, nil)
	if err != nil || r.status != 304 || len(r.body) != 0 {
		return failed("GET /style.css If-None-Match %s: %d, %d bytes, %v", etag, r.status, len(r.body), err)
	}
	r, err = c.get(ctx, "GET", "/large.bin", http.Header{"Range": {"bytes=1000-1999"}}, 0, nil)
	if err != nil || r.status != 206 || r.header.Get("Content-Range") != "bytes 1000-1999/3000000" ||
		string(r.body) != string(large[1000:2000]) {
		return failed("GET /large.bin Range: %d %v, %d bytes, %v", r.status, r.header, len(r.body), err)
	}
	return passed("SETTINGS; GET, HEAD (length, no body), 404, 304 on the ETag, 206 with the slice")
}

func ipv6(ctx context.Context, e *env) result {
	c, err := e.dial(ctx, dialOpts{to: e.addr6})
	if err != nil {
		return failedErr("dial [::1]", err)
	}
	defer c.close()
	if ip := c.conn.RemoteAddr().String(); !strings.HasPrefix(ip, "[::1]") {
		return failed("connected to %s", ip)
	}
	if d := e.fetchAll(ctx, c, []string{"/small.txt", "/large.bin"}); d != "" {
		return failed("%s", d)
	}
	return passed("over [::1]: small and 3 MB byte-exact")
}

// tickets is a TLS session cache that says when a ticket arrived (the server sends them after the handshake, so
// a resumption waits for one rather than for time).
type tickets struct {
	tls.ClientSessionCache
	arrived chan *tls.ClientSessionState
}

func newTickets() *tickets {
	return &tickets{ClientSessionCache: tls.NewLRUClientSessionCache(8), arrived: make(chan *tls.ClientSessionState, 8)}
}

func (t *tickets) Put(key string, cs *tls.ClientSessionState) {
	t.ClientSessionCache.Put(key, cs)
	if cs != nil {
		select {
		case t.arrived <- cs:
		default:
		}
	}
}

// ticketFrom makes one connection, one request, and waits for the server's session ticket.
func (e *env) ticketFrom(ctx context.Context, cache *tickets) (*tls.ClientSessionState, error) {
	c, err := e.dial(ctx, dialOpts{to: e.addr4, cache: cache})
	if err != nil {
		return nil, err
	}
	defer c.close()
	if d := e.fetchExact(ctx, c, "/small.txt", 0, nil); d != "" {
		return nil, errors.New(d)
	}
	select {
	case cs := <-cache.arrived:
		return cs, nil
	case <-ctx.Done():
		return nil, errors.New("no session ticket from the server")
	}
}

func resumption(ctx context.Context, e *env) result {
	cache := newTickets()
	if _, err := e.ticketFrom(ctx, cache); err != nil {
		return failedErr("first connection", err)
	}
	c, err := e.dial(ctx, dialOpts{to: e.addr4, cache: cache})
	if err != nil {
		return failedErr("second dial", err)
	}
	defer c.close()
	if !c.conn.ConnectionState().TLS.DidResume {
		return failed("the second connection did not resume the session")
	}
	if d := e.fetchExact(ctx, c, "/small.txt", 0, nil); d != "" {
		return failed("%s", d)
	}
	return passed("a session ticket, then a resumed handshake (PSK) and its answer")
}

// zeroRTT: the server runs with --http3-early-data (issue 42: 0-RTT off by default, and when on, GET and HEAD only;
// hack/h3-interop.py checks the default and the 425 with aioquic). Its ticket must offer early data, and a client
// resuming with it must send its GET in 0-RTT packets and get the file's exact bytes.
func zeroRTT(ctx context.Context, e *env) result {
	cache := newTickets()
	cs, err := e.ticketFrom(ctx, cache)
	if err != nil {
		return failedErr("first connection", err)
	}
	_, state, err := cs.ResumptionState()
	if err != nil {
		return failedErr("the ticket", err)
	}
	if !state.EarlyData {
		return failed("the server's ticket offers no 0-RTT (is the server running with --http3-early-data?)")
	}
	ev := &events{}
	c, err := e.dial(ctx, dialOpts{to: e.addr4, cache: cache, early: true, quic: &quic.Config{Tracer: ev.tracer()}})
	if err != nil {
		return failedErr("early dial", err)
	}
	defer c.close()
	r, err := c.get(ctx, http3.MethodGet0RTT, "/small.txt", nil, 0, nil)
	if err != nil {
		return failedErr("GET over an early connection", err)
	}
	st := c.conn.ConnectionState()
	sent := ev.snapshot().zeroRTTSent
	if r.status != 200 || string(r.body) != "hello\n" || !st.Used0RTT || !st.TLS.DidResume || sent == 0 {
		return failed("%d %q, used 0-RTT %v, resumed %v, %d 0-RTT packets", r.status, r.body, st.Used0RTT,
			st.TLS.DidResume, sent)
	}
	return passed("a ticket offering early data, then the GET in %d 0-RTT packet(s), accepted and answered", sent)
}

// keyUpdate: a 3 MB transfer is ~2,000 packets; quic-go updates its keys after its first 100 packets of a key
// phase, quinn-proto after a random 10 to 1,000: one of them starts it, the other must follow.
func keyUpdate(ctx context.Context, e *env) result {
	ev := &events{}
	c, err := e.dial(ctx, dialOpts{to: e.addr4, quic: &quic.Config{Tracer: ev.tracer()}})
	if err != nil {
		return failedErr("dial", err)
	}
	defer c.close()
	if d := e.fetchAll(ctx, c, []string{"/large.bin", "/small.txt"}); d != "" {
		return failed("%s", d)
	}
	ups := ev.snapshot().keyUpdates
	if len(ups) == 0 {
		return failed("no 1-RTT key update during a 3 MB transfer")
	}
	return passed("1-RTT key updates (%s), 3 MB then a request byte-exact", strings.Join(ups, ", "))
}

// v2: quinn-proto 0.11 speaks QUIC v1 (and the old drafts) only. A v2-only client must get a Version
// Negotiation packet naming v1.
func v2(ctx context.Context, e *env) result {
	c, err := e.dial(ctx, dialOpts{to: e.addr4, quic: &quic.Config{Versions: []quic.Version{quic.Version2}}})
	if err == nil {
		defer c.close()
		if d := e.fetchExact(ctx, c, "/small.txt", 0, nil); d != "" {
			return failed("%s", d)
		}
		return passed("QUIC v2 (RFC 9369) negotiated, GET byte-exact")
	}
	var vn *quic.VersionNegotiationError
	if !errors.As(err, &vn) || !slices.Contains(vn.Theirs, quic.Version1) {
		return failedErr("a v2-only dial", err)
	}
	return absent("quinn-proto 0.11 has no QUIC v2; checked: a v2-only client gets Version Negotiation offering %v",
		vn.Theirs)
}

// ecn: the server marks its packets ECN-capable (codepoint 0b10) and counts the client's marks in its ACKs
// (sys/udp.rs reads and sets the IP header's ECN bits for quinn-proto), so quic-go's validation of ECN on the
// path must reach "capable": that needs our ACKs to report quic-go's own marks, and our packets to arrive marked.
func ecn(ctx context.Context, e *env) result {
	ev := &events{}
	c, err := e.dial(ctx, dialOpts{to: e.addr4, quic: &quic.Config{Tracer: ev.tracer()}})
	if err != nil {
		return failedErr("dial", err)
	}
	defer c.close()
	if d := e.fetchAll(ctx, c, []string{"/large.bin"}); d != "" {
		return failed("%s", d)
	}
	s := ev.snapshot()
	if s.ecnMarked > 0 && slices.Contains(s.ecnStates, "capable") {
		return passed("ECN: %d packets marked by the server, quic-go's states %v", s.ecnMarked, s.ecnStates)
	}
	return failed("ECN not validated: %d marked packets from the server, quic-go's ECN states %v", s.ecnMarked,
		s.ecnStates)
}

// fetchAll GETs every path at once on one connection, each compared with the tree; the first difference.
func (e *env) fetchAll(ctx context.Context, c *client, paths []string) string {
	diffs := make([]string, len(paths))
	var wg sync.WaitGroup
	for i, p := range paths {
		wg.Add(1)
		go func() {
			defer wg.Done()
			diffs[i] = e.fetchExact(ctx, c, p, 0, nil)
		}()
	}
	wg.Wait()
	for _, d := range diffs {
		if d != "" {
			return d
		}
	}
	return ""
}

// tree lists the files under dir of the served tree, as request paths.
func (e *env) tree(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(filepath.Join(e.root, dir), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(e.root, p)
		out = append(out, "/"+path.Clean(filepath.ToSlash(rel)))
		return err
	})
	if err == nil && len(out) == 0 {
		err = fmt.Errorf("no file under %s", dir)
	}
	return out, err
}
