package testcerts

import (
	"crypto/tls"
	"crypto/x509"
	"testing"
	"time"
)

func TestIssuedCertificatesVerifyAgainstTheirCA(t *testing.T) {
	ca := NewCA(t)
	certPEM, keyPEM := ca.Issue(t, Options{Serial: 0xB2}, "site.ns.svc", "site.ns.svc.cluster.local")
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if leaf.SerialNumber.Text(16) != "b2" {
		t.Errorf("serial %s, want b2", leaf.SerialNumber.Text(16))
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "site.ns.svc.cluster.local"}); err != nil {
		t.Errorf("the issued certificate does not verify against its CA: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.example"}); err == nil {
		t.Error("the certificate verified for a name it does not hold")
	}
}

func TestSelfSignedHonoursItsValidity(t *testing.T) {
	past := time.Now().Add(-48 * time.Hour)
	certPEM, keyPEM := SelfSigned(t, Options{NotBefore: past, NotAfter: past.Add(time.Hour)}, "expired.example")
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	leaf, _ := x509.ParseCertificate(pair.Certificate[0])
	if !leaf.NotAfter.Equal(past.Add(time.Hour).Truncate(time.Second)) {
		t.Errorf("notAfter %s, want %s", leaf.NotAfter, past.Add(time.Hour))
	}
}
