package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"

	"github.com/quic-go/quic-go"
	"github.com/quic-go/quic-go/http3"
)

// client is one quic-go connection to the server with HTTP/3 on it, from a UDP socket of its own.
type client struct {
	tr   *quic.Transport
	conn *quic.Conn
	h3   *http3.ClientConn
}

// dialOpts are what a case changes about a connection: where it goes (the server, or a relay in front of it), its
// TLS session cache, its QUIC configuration (versions, tracer), whether it may send 0-RTT.
type dialOpts struct {
	to      *net.UDPAddr
	cache   tls.ClientSessionCache
	quic    *quic.Config
	early   bool // DialEarly: requests may go in 0-RTT when the ticket allows it
	localIP net.IP
	// classicKeyShare offers X25519 alone: Go's default adds a post-quantum key share (X25519MLKEM768) that
	// makes the ClientHello span two Initial datagrams.
	classicKeyShare bool
}

func (e *env) tlsConfig(cache tls.ClientSessionCache) *tls.Config {
	return &tls.Config{RootCAs: e.roots, ServerName: "localhost", NextProtos: []string{http3.NextProtoH3},
		ClientSessionCache: cache}
}

func (e *env) dial(ctx context.Context, o dialOpts) (*client, error) {
	ip := o.localIP
	if ip == nil {
		ip = loopbackOf(o.to)
	}
	udp, err := net.ListenUDP("udp", &net.UDPAddr{IP: ip})
	if err != nil {
		return nil, err
	}
	tr := &quic.Transport{Conn: udp}
	qc := o.quic
	if qc == nil {
		qc = &quic.Config{}
	}
	dial := tr.Dial
	if o.early {
		dial = tr.DialEarly
	}
	tc := e.tlsConfig(o.cache)
	if o.classicKeyShare {
		tc.CurvePreferences = []tls.CurveID{tls.X25519}
	}
	conn, err := dial(ctx, o.to, tc, qc)
	if err != nil {
		tr.Close()
		return nil, err
	}
	return &client{tr: tr, conn: conn, h3: (&http3.Transport{}).NewClientConn(conn)}, nil
}

func (c *client) close() {
	_ = c.conn.CloseWithError(0, "")
	c.tr.Close()
}

// reply is an answer as read: status, fields, body.
type reply struct {
	status int
	header http.Header
	body   []byte
}

// get sends one request and reads the whole answer. `mid`, when set, runs once after `midAt` body bytes were
// read (the rebinding cases change the path there, with the transfer under way).
func (c *client) get(ctx context.Context, method, path string, hdr http.Header, midAt int, mid func()) (reply, error) {
	req, err := http.NewRequestWithContext(ctx, method, "https://localhost"+path, nil)
	if err != nil {
		return reply{}, err
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	rsp, err := c.h3.RoundTrip(req)
	if err != nil {
		return reply{}, err
	}
	defer rsp.Body.Close()
	var body bytes.Buffer
	if mid != nil {
		if _, err := io.CopyN(&body, rsp.Body, int64(midAt)); err != nil {
			return reply{}, fmt.Errorf("%s %s: %d bytes in: %w", method, path, body.Len(), err)
		}
		mid()
	}
	if _, err := io.Copy(&body, rsp.Body); err != nil {
		return reply{}, fmt.Errorf("%s %s: %d bytes in: %w", method, path, body.Len(), err)
	}
	return reply{status: rsp.StatusCode, header: rsp.Header, body: body.Bytes()}, nil
}

// fetchExact GETs `path` and says how it differs from the file in the served tree ("" when it is byte-exact).
func (e *env) fetchExact(ctx context.Context, c *client, path string, midAt int, mid func()) string {
	want, err := os.ReadFile(filepath.Join(e.root, filepath.FromSlash(path)))
	if err != nil {
		return err.Error()
	}
	r, err := c.get(ctx, http.MethodGet, path, nil, midAt, mid)
	if err != nil {
		return err.Error()
	}
	if r.status != 200 || !bytes.Equal(r.body, want) {
		return fmt.Sprintf("GET %s: %d, %d bytes sha256 %s, want 200, %d bytes sha256 %s", path, r.status,
			len(r.body), short(r.body), len(want), short(want))
	}
	return ""
}

// short names a body by the start of its SHA-256.
func short(b []byte) string {
	sum := sha256.Sum256(b)
	return fmt.Sprintf("%x", sum[:6])
}
