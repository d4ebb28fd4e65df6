package gittestserver

import (
	"crypto/tls"
	"errors"
	"net"
	"net/http"
	"time"
)

// Serve answers smart HTTP on l until the listener fails: over HTTPS with the certificate and key in certFile and
// keyFile (PEM, as a kubernetes.io/tls Secret mounts them: tls.crt, tls.key), or over plain HTTP when both are
// empty. HTTPS is what a private forge with an internal CA looks like to a fetcher, which sends credentials over
// nothing else (off loopback).
func (s *Server) Serve(l net.Listener, certFile, keyFile string) error {
	return ServeHandler(l, s, certFile, keyFile)
}

// ServeHandler is Serve with a handler wrapping the server (e2e/cmd/gitserver adds the forge's pull requests).
func ServeHandler(l net.Listener, h http.Handler, certFile, keyFile string) error {
	if (certFile == "") != (keyFile == "") {
		return errors.New("serving HTTPS needs both a certificate and its key")
	}
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	if certFile == "" {
		return hs.Serve(l)
	}
	hs.TLSConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	return hs.ServeTLS(l, certFile, keyFile)
}
