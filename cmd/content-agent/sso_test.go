package main

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// The SSO agent on a port reached without a route serves TLS with the site's certificate (docs/design/sso.md):
// the real agent command, a real TLS client trusting the site's CA; a plain request to the port gets no page;
// half a key pair is a usage error.
func TestSSOAgentServesTLSWithTheSitesCertificate(t *testing.T) {
	dir := t.TempDir()
	ca := testcerts.NewCA(t)
	cert, key := ca.Issue(t, testcerts.Options{}, "docs.example.com")
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{"tls.crt": cert, "tls.key": key, "keys": []byte(base64.StdEncoding.EncodeToString(raw) + "\n"), "client-secret": []byte("s3cret")}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	addr := serverbin.FreeAddr(t) // the agent listens on it
	args := []string{"--issuer", "https://idp.example.com", "--client-id", "docs", "--client-secret-file", filepath.Join(dir, "client-secret"),
		"--keys-file", filepath.Join(dir, "keys"), "--site-url", "https://docs.example.com", "--listen", addr}

	if err := ssoAgent(context.Background(), append(args, "--tls-cert-file", filepath.Join(dir, "tls.crt"))); err == nil ||
		!strings.Contains(err.Error(), "go together") {
		t.Errorf("a certificate without its key: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- ssoAgent(ctx, append(args, "--tls-cert-file", filepath.Join(dir, "tls.crt"), "--tls-key-file", filepath.Join(dir, "tls.key")))
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("the agent: %v", err)
		}
	})

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: "docs.example.com"}}}
	var resp *http.Response
	var err error
	for i := 0; i < 100; i++ { // until the agent listens: a refused connection is retried, nothing else
		if resp, err = client.Get("https://" + addr + "/healthz"); err == nil || !strings.Contains(err.Error(), "refused") {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if err != nil {
		t.Fatalf("GET https://%s/healthz: %v", addr, err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != 200 || string(body) != "ok\n" || resp.TLS == nil || resp.TLS.PeerCertificates[0].DNSNames[0] != "docs.example.com" {
		t.Errorf("healthz over TLS: %d %q", resp.StatusCode, body)
	}
	if plain, err := (&http.Client{Timeout: 10 * time.Second}).Get("http://" + addr + "/healthz"); err == nil {
		b, _ := io.ReadAll(plain.Body)
		_ = plain.Body.Close()
		if plain.StatusCode == 200 {
			t.Errorf("plain HTTP to the TLS port got %d %q", plain.StatusCode, b)
		}
	}
}
