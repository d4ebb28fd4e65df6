// Package testcerts makes throwaway ECDSA P-256 certificates for tests (envtest, contract tests, e2e): a CA and the
// serving certificates it signs, or self-signed ones, PEM-encoded the way a kubernetes.io/tls Secret holds them.
package testcerts

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"testing"
	"time"
)

// Options of a serving certificate. Zero values: a random serial, valid from an hour ago for a day.
type Options struct {
	Serial              int64
	NotBefore, NotAfter time.Time
}

// CA is a certificate authority for one test.
type CA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	// PEM is the CA certificate, for the clients that must trust it.
	PEM []byte
}

// NewCA makes a CA valid from an hour ago for a day.
func NewCA(tb testing.TB) *CA {
	tb.Helper()
	key := newKey(tb)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "hyperstatic test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der := create(tb, tmpl, tmpl, key, key)
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		tb.Fatal(err)
	}
	return &CA{cert: cert, key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// Issue returns a serving certificate for names (the first is also the subject) signed by the CA, and its key.
func (ca *CA) Issue(tb testing.TB, o Options, names ...string) (certPEM, keyPEM []byte) {
	tb.Helper()
	key := newKey(tb)
	return encode(tb, create(tb, leaf(tb, o, names), ca.cert, key, ca.key), key)
}

// SelfSigned returns a self-signed serving certificate for names, and its key.
func SelfSigned(tb testing.TB, o Options, names ...string) (certPEM, keyPEM []byte) {
	tb.Helper()
	key := newKey(tb)
	tmpl := leaf(tb, o, names)
	return encode(tb, create(tb, tmpl, tmpl, key, key), key)
}

func leaf(tb testing.TB, o Options, names []string) *x509.Certificate {
	tb.Helper()
	serial := big.NewInt(o.Serial)
	if o.Serial == 0 {
		var err error
		if serial, err = rand.Int(rand.Reader, big.NewInt(1<<62)); err != nil {
			tb.Fatal(err)
		}
	}
	if o.NotBefore.IsZero() {
		o.NotBefore = time.Now().Add(-time.Hour)
	}
	if o.NotAfter.IsZero() {
		o.NotAfter = time.Now().Add(24 * time.Hour)
	}
	return &x509.Certificate{
		SerialNumber: serial, Subject: pkix.Name{CommonName: names[0]}, DNSNames: names,
		NotBefore: o.NotBefore, NotAfter: o.NotAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
}

func newKey(tb testing.TB) *ecdsa.PrivateKey {
	tb.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		tb.Fatal(err)
	}
	return key
}

func create(tb testing.TB, tmpl, parent *x509.Certificate, key, signer *ecdsa.PrivateKey) []byte {
	tb.Helper()
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		tb.Fatal(err)
	}
	return der
}

// encode writes the certificate and its key (PKCS#8) as PEM.
func encode(tb testing.TB, der []byte, key *ecdsa.PrivateKey) (certPEM, keyPEM []byte) {
	tb.Helper()
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		tb.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})
}
