// Package certfiles serves TLS from a certificate and key kept in two files that change under the running process:
// a mounted Secret, which the kubelet replaces by swapping its `..data` link (cert-manager renewing the site's
// certificate, a person rotating it). The content agent's own ports use it: the single sign-on endpoints reached
// on a Service port, without a route in front (docs/design/sso.md, "How the login endpoints are reached").
//
// The contract:
//
//   - New loads the pair once: a pair that cannot be read or does not match is an error, so a process asked to
//     serve TLS never starts without it (nor falls back to plain HTTP).
//   - Every handshake looks at both files (a stat each, following links: the kubelet's swap gives them new
//     identities) and loads them again when either changed. No timer and no watch: a renewal is served from the
//     next handshake on, and a test needs no clock.
//   - A changed pair that cannot be read, does not parse or does not match keeps the last good certificate
//     serving; Err says why until a good pair comes. A refused pair is not read again until a file changes again
//     (a pair caught half-written changes again when its writer finishes).
//   - Modern TLS only (docs/security.md): TLS 1.3, and TLS 1.2 with ECDHE and AEAD suites; X25519 and P-256.
package certfiles

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// Pair is a certificate and key served from files.
type Pair struct {
	certFile, keyFile string

	mu     sync.Mutex
	seen   [2]identity // the files' identities the current certificate, or the last refusal, was read at
	cert   *tls.Certificate
	reason string // why the files as they are now are not served ("" when they are)
}

// identity is what changes when a file is replaced or rewritten.
type identity struct {
	dev, ino uint64
	size     int64
	mtime    time.Time
}

// New loads certFile and keyFile (PEM), or says why it cannot.
func New(certFile, keyFile string) (*Pair, error) {
	p := &Pair{certFile: certFile, keyFile: keyFile}
	ids, err := p.identities()
	if err != nil {
		return nil, err
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("TLS key pair %s, %s: %w", certFile, keyFile, err)
	}
	p.seen, p.cert = ids, &cert
	return p, nil
}

// Config is the server TLS configuration that serves the pair.
func (p *Pair) Config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS12,
		// TLS 1.2's suites: forward secrecy and AEAD only (TLS 1.3's are all such and not configurable).
		CipherSuites: []uint16{
			tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256, tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
			tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384, tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
			tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256, tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
		},
		CurvePreferences: []tls.CurveID{tls.X25519, tls.CurveP256},
		GetCertificate:   func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return p.current(), nil },
	}
}

// Err says why the files as they are now are not served (the last good pair is), or nil.
func (p *Pair) Err() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.reason == "" {
		return nil
	}
	return fmt.Errorf("%s", p.reason)
}

// current is the certificate to serve: the files' own when they changed into a good pair, else the last good.
func (p *Pair) current() *tls.Certificate {
	p.mu.Lock()
	defer p.mu.Unlock()
	ids, err := p.identities()
	if err != nil {
		p.reason = err.Error() + "; the last good certificate is served"
		return p.cert
	}
	if ids == p.seen {
		return p.cert
	}
	p.seen = ids
	cert, err := tls.LoadX509KeyPair(p.certFile, p.keyFile)
	if err != nil {
		p.reason = fmt.Sprintf("TLS key pair %s, %s: %v; the last good certificate is served", p.certFile, p.keyFile, err)
		return p.cert
	}
	p.cert, p.reason = &cert, ""
	return p.cert
}

// identities stats both files, following links.
func (p *Pair) identities() ([2]identity, error) {
	var ids [2]identity
	for i, name := range []string{p.certFile, p.keyFile} {
		fi, err := os.Stat(name)
		if err != nil {
			return ids, fmt.Errorf("TLS key pair: %w", err)
		}
		ids[i] = identity{size: fi.Size(), mtime: fi.ModTime()}
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ids[i].dev, ids[i].ino = st.Dev, st.Ino
		}
	}
	return ids, nil
}
