package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"net"
	"net/http"
	"strings"
	"time"

	"hyperstatic.dev/hyperstatic/internal/certfiles"
	"hyperstatic.dev/hyperstatic/internal/sso"
)

// ssoAgent runs a site's single sign-on endpoints (internal/sso, docs/design/sso.md): the login flow with the
// IdP, ending in the session cookie the server checks. It holds no state: any number of replicas may serve it.
func ssoAgent(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("sso", flag.ExitOnError)
	issuer := fs.String("issuer", "", "the OpenID Connect issuer URL")
	clientID := fs.String("client-id", "", "the site's client ID at the IdP")
	secretFile := fs.String("client-secret-file", "", "file holding the client secret (read at every login)")
	keysFile := fs.String("keys-file", "", "the session keys file: one or two lines of base64, the first signs (read at every login)")
	siteURL := fs.String("site-url", "", "the site's origin as users reach it (https://docs.example.com)")
	callback := fs.String("callback-url", "", "the redirect URI registered at the IdP (default SITE-URL/.hyperstatic/sso/callback)")
	prefix := fs.String("prefix", "/.hyperstatic/sso", "path of the login, callback and logout endpoints")
	ttl := fs.Duration("session-ttl", 8*time.Hour, "how long a session cookie is good for")
	claim := fs.String("groups-claim", "groups", "the ID token claim holding the user's groups")
	keep := fs.String("keep-groups", "", "comma-separated: the only groups put in the cookie (those the site's rules name); empty keeps all")
	listen := fs.String("listen", ":8083", "address of the endpoints and /healthz")
	certFile := fs.String("tls-cert-file", "", "serve TLS with this certificate (PEM; renewals served from the next handshake), for a port reached without a route; with --tls-key-file")
	keyFile := fs.String("tls-key-file", "", "the key of --tls-cert-file (PEM)")
	_ = fs.Parse(args)
	if (*certFile == "") != (*keyFile == "") {
		return errors.New("--tls-cert-file and --tls-key-file go together")
	}
	var keepGroups []string
	if *keep != "" {
		keepGroups = strings.Split(*keep, ",")
	}
	h, err := sso.New(sso.Config{Issuer: *issuer, ClientID: *clientID, ClientSecretFile: *secretFile,
		KeysFile: *keysFile, SiteURL: *siteURL, CallbackURL: *callback, Prefix: *prefix, SessionTTL: *ttl,
		GroupsClaim: *claim, KeepGroups: keepGroups})
	if err != nil {
		return err
	}
	mux := http.NewServeMux()
	mux.Handle(*prefix+"/", h)
	var wrap func(net.Listener) net.Listener
	if *certFile != "" {
		// The site's own certificate on the agent's port (docs/design/sso.md): the login's cookies are Secure.
		pair, err := certfiles.New(*certFile, *keyFile)
		if err != nil {
			return err
		}
		cfg := pair.Config()
		wrap = func(l net.Listener) net.Listener { return tls.NewListener(l, cfg) }
	}
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
	return serve(ctx, *listen, server(mux), wrap)
}
