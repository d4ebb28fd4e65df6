package gitsource

import (
	"crypto/x509"
	"net/url"
	"os"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// The keys of a credentials Secret, as Flux's GitRepository reads them, so users can point at the Secrets they
// already have.
const (
	SecretUsername    = "username"
	SecretPassword    = "password"
	SecretBearerToken = "bearerToken"
	SecretIdentity    = "identity"
	SecretKnownHosts  = "known_hosts"
	// SecretCACert is a PEM bundle of the certificate authorities an https:// forge's certificate may chain to,
	// trusted beside the system's (a forge behind an internal CA).
	SecretCACert = "ca.crt"
)

// WithSecret returns the source with the credentials and the CA bundle of a Secret's data (nil data: an
// anonymous fetch with the system's CAs), after AuthFromSecret's rules and these for `ca.crt`: it is for https://
// URLs only (an ssh:// host key is pinned by known_hosts; http:// has no TLS), it must hold at least one PEM
// certificate, and it adds to the system's CAs, never replaces verification. A Secret holding only `ca.crt`
// (a public repository on a forge behind an internal CA) is valid.
func (s Source) WithSecret(data map[string][]byte) (Source, error) {
	auth, err := AuthFromSecret(s.URL, data)
	if err != nil {
		return s, err
	}
	ca, err := caBundle(s.URL, data[SecretCACert])
	if err != nil {
		return s, err
	}
	s.Auth, s.CABundle = auth, ca
	return s, nil
}

// caBundle checks a Secret's ca.crt for repoURL; empty means none.
func caBundle(repoURL string, pemData []byte) ([]byte, error) {
	if len(pemData) == 0 {
		return nil, nil
	}
	ep, err := transport.NewEndpoint(repoURL)
	if err != nil {
		return nil, newError(InvalidSource, nil, "url %q is not a Git URL", redact(repoURL))
	}
	if ep.Protocol != "https" {
		return nil, newError(InvalidSource, nil, "the Secret's %q is for https:// URLs, not %s:// (ssh pins the host key with %q; http has no TLS)",
			SecretCACert, ep.Protocol, SecretKnownHosts)
	}
	// go-git adds the bundle with AppendCertsFromPEM and ignores what does not parse: a bundle of nothing would
	// then fail later as an untrusted certificate, far from its cause.
	if !x509.NewCertPool().AppendCertsFromPEM(pemData) {
		return nil, newError(InvalidSource, nil, "the Secret's %q holds no PEM certificate", SecretCACert)
	}
	return pemData, nil
}

// AuthFromSecret builds the credentials for repoURL from a Secret's data (nil data: an anonymous fetch).
//
//   - HTTPS: `username` and `password` (a password or a token: HTTP basic auth), or `bearerToken`
//     ("Authorization: Bearer"). Both at once is refused: which one wins would be a guess.
//   - SSH (ssh://user@host/path or user@host:path): `identity` (a PEM private key; `password` is then its
//     passphrase) and `known_hosts`, which is required: a host key is pinned, never trusted on first use.
//
// An http:// URL with credentials is refused: they would cross the network in clear.
func AuthFromSecret(repoURL string, data map[string][]byte) (transport.AuthMethod, error) {
	ep, err := transport.NewEndpoint(repoURL)
	if err != nil {
		return nil, newError(InvalidSource, nil, "url %q is not a Git URL", redact(repoURL))
	}
	if len(data) == 0 {
		return nil, nil
	}
	switch ep.Protocol {
	case "https", "http":
		return httpAuth(ep, data)
	case "ssh":
		return sshAuth(ep, data)
	default:
		return nil, newError(InvalidSource, nil, "url scheme %q is not supported (https or ssh)", ep.Protocol)
	}
}

func httpAuth(ep *transport.Endpoint, data map[string][]byte) (transport.AuthMethod, error) {
	user, pass, token := string(data[SecretUsername]), string(data[SecretPassword]), string(data[SecretBearerToken])
	if ep.Protocol == "http" && (user != "" || pass != "" || token != "") && !loopbackHost(ep.Host) {
		return nil, newError(InvalidSource, nil, "credentials are only sent over https, not to %s", ep.Protocol+"://"+ep.Host)
	}
	switch {
	case token != "" && (user != "" || pass != ""):
		return nil, newError(InvalidSource, nil, "the Secret has both %q and %q/%q: keep one", SecretBearerToken, SecretUsername, SecretPassword)
	case token != "":
		return &http.TokenAuth{Token: token}, nil
	case user != "" || pass != "":
		if user == "" || pass == "" {
			return nil, newError(InvalidSource, nil, "the Secret needs both %q and %q for HTTPS basic auth", SecretUsername, SecretPassword)
		}
		return &http.BasicAuth{Username: user, Password: pass}, nil
	}
	return nil, nil
}

// loopbackHost lets the tests (a server on 127.0.0.1) use credentials over plain HTTP; nothing else may.
func loopbackHost(host string) bool {
	return host == "127.0.0.1" || host == "::1" || host == "localhost"
}

func sshAuth(ep *transport.Endpoint, data map[string][]byte) (transport.AuthMethod, error) {
	identity, hosts := data[SecretIdentity], data[SecretKnownHosts]
	if len(identity) == 0 {
		return nil, newError(InvalidSource, nil, "an SSH URL needs the Secret key %q (a private key)", SecretIdentity)
	}
	if len(hosts) == 0 {
		return nil, newError(InvalidSource, nil, "an SSH URL needs the Secret key %q: the host key is pinned, never trusted on first use", SecretKnownHosts)
	}
	user := ep.User
	if user == "" {
		user = "git"
	}
	keys, err := gitssh.NewPublicKeys(user, identity, string(data[SecretPassword]))
	if err != nil {
		return nil, newError(InvalidSource, nil, "the Secret's %q is not a usable private key (or %q is not its passphrase)", SecretIdentity, SecretPassword)
	}
	cb, err := knownHostsCallback(hosts)
	if err != nil {
		return nil, newError(InvalidSource, err, "the Secret's %q does not parse", SecretKnownHosts)
	}
	keys.HostKeyCallback = cb
	return keys, nil
}

// knownHostsCallback checks host keys against known_hosts content. x/crypto's parser (hashed names, markers,
// ports) only reads files: the content goes through a private temporary file, removed before returning.
func knownHostsCallback(content []byte) (ssh.HostKeyCallback, error) {
	f, err := os.CreateTemp("", "known_hosts-")
	if err != nil {
		return nil, err
	}
	defer os.Remove(f.Name())
	_, werr := f.Write(content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, werr
	}
	return knownhosts.New(f.Name())
}

// redact drops the user information of a URL (a token pasted into it) before the URL reaches a message.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		return raw
	}
	u.User = nil
	return u.String()
}
