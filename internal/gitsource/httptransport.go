package gitsource

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// maxErrorBody bounds what is read of an answer that is not 2xx: go-git reads such a body whole into its error
// (and then drops it from the message), so a hostile server could make the fetcher hold any amount.
const maxErrorBody = 64 << 10

// Every go-git connection over HTTP(S) in this process goes through gitHTTP, installed for both schemes at init
// (the registry is go-git's only hook, and it is global; the tests' pushes use it too). It never follows a
// redirect: a URL that passes the tenancy policy's git.urls must not lead the fetcher to another host (go-git
// follows up to 10 hops of the first /info/refs request by default). And it bounds error bodies.
func init() {
	t := &gitHTTP{plain: newGitHTTPClient(http.DefaultTransport.(*http.Transport).Clone())}
	client.InstallProtocol("https", t)
	client.InstallProtocol("http", t)
}

// RedirectError is a 3xx answer: the fetcher does not follow it, and says where it led.
type RedirectError struct {
	Status int
	// Host is the redirect's target host ("" when the answer named no usable Location).
	Host string
}

func (e *RedirectError) Error() string {
	return fmt.Sprintf("the server answered %d, a redirect to host %q: redirects are not followed "+
		"(name the repository's final address in the URL)", e.Status, e.Host)
}

// gitHTTP is go-git's HTTP transport with our http.Client under it. go-git configures a CA bundle only on an
// *http.Transport it can clone, which our guard is not, so a session with a CA bundle gets a transport of its
// own here (the system's roots plus the bundle) and go-git never sees the bundle.
type gitHTTP struct {
	plain transport.Transport
}

func newGitHTTPClient(rt *http.Transport) transport.Transport {
	return githttp.NewClientWithOptions(&http.Client{Transport: guard{rt}},
		&githttp.ClientOptions{RedirectPolicy: githttp.NoFollowRedirects})
}

func (g *gitHTTP) NewUploadPackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.UploadPackSession, error) {
	c, ep, done, err := g.clientFor(ep)
	if err != nil {
		return nil, err
	}
	s, err := c.NewUploadPackSession(ep, auth)
	if err != nil {
		done()
		return nil, err
	}
	return uploadSession{UploadPackSession: s, done: done}, nil
}

func (g *gitHTTP) NewReceivePackSession(ep *transport.Endpoint, auth transport.AuthMethod) (transport.ReceivePackSession, error) {
	c, ep, done, err := g.clientFor(ep)
	if err != nil {
		return nil, err
	}
	s, err := c.NewReceivePackSession(ep, auth)
	if err != nil {
		done()
		return nil, err
	}
	return receiveSession{ReceivePackSession: s, done: done}, nil
}

// clientFor returns the client for ep, ep as that client must see it, and what to call when the session ends.
func (g *gitHTTP) clientFor(ep *transport.Endpoint) (transport.Transport, *transport.Endpoint, func(), error) {
	if ep.InsecureSkipTLS || len(ep.ClientCert) > 0 || len(ep.ClientKey) > 0 || ep.Proxy.URL != "" {
		return nil, nil, nil, errors.New("TLS client certificates, skipped verification and per-fetch proxies are not supported")
	}
	if len(ep.CaBundle) == 0 {
		return g.plain, ep, func() {}, nil
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	roots.AppendCertsFromPEM(ep.CaBundle)
	rt := http.DefaultTransport.(*http.Transport).Clone()
	tlsConf := &tls.Config{MinVersion: tls.VersionTLS12}
	if rt.TLSClientConfig != nil {
		tlsConf = rt.TLSClientConfig.Clone()
	}
	tlsConf.RootCAs = roots
	rt.TLSClientConfig = tlsConf
	bare := *ep
	bare.CaBundle = nil
	// The transport is this session's alone: its idle connections go when the session ends.
	return newGitHTTPClient(rt), &bare, sync.OnceFunc(rt.CloseIdleConnections), nil
}

type uploadSession struct {
	transport.UploadPackSession
	done func()
}

func (s uploadSession) Close() error {
	defer s.done()
	return s.UploadPackSession.Close()
}

type receiveSession struct {
	transport.ReceivePackSession
	done func()
}

func (s receiveSession) Close() error {
	defer s.done()
	return s.ReceivePackSession.Close()
}

// guard turns a 3xx into a RedirectError before any client could follow it (so the target receives nothing) and
// cuts every other non-2xx body at maxErrorBody.
type guard struct{ base http.RoundTripper }

func (g guard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	switch {
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		_ = resp.Body.Close()
		host := ""
		if loc, err := req.URL.Parse(resp.Header.Get("Location")); err == nil && resp.Header.Get("Location") != "" {
			host = loc.Host
		}
		return nil, &RedirectError{Status: resp.StatusCode, Host: host}
	case resp.StatusCode < 200 || resp.StatusCode >= 300:
		resp.Body = limitedBody{Reader: io.LimitReader(resp.Body, maxErrorBody), Closer: resp.Body}
	}
	return resp, nil
}

type limitedBody struct {
	io.Reader
	io.Closer
}
