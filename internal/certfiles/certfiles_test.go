package certfiles

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// secretDir plays the kubelet's Secret volume: tls.crt and tls.key are links through ..data to a directory of the
// current version, and an update writes a new version and swaps ..data in one rename.
type secretDir struct {
	t   *testing.T
	dir string
	n   int
}

func newSecretDir(t *testing.T, cert, key []byte) *secretDir {
	t.Helper()
	d := &secretDir{t: t, dir: t.TempDir()}
	d.update(cert, key)
	for _, name := range []string{"tls.crt", "tls.key"} {
		must(t, os.Symlink(filepath.Join("..data", name), filepath.Join(d.dir, name)))
	}
	return d
}

func (d *secretDir) update(cert, key []byte) {
	d.n++
	version := filepath.Join(d.dir, "..v"+strings.Repeat("1", d.n))
	must(d.t, os.Mkdir(version, 0o755))
	must(d.t, os.WriteFile(filepath.Join(version, "tls.crt"), cert, 0o600))
	must(d.t, os.WriteFile(filepath.Join(version, "tls.key"), key, 0o600))
	tmp := filepath.Join(d.dir, "..data_tmp")
	must(d.t, os.Symlink(filepath.Base(version), tmp))
	must(d.t, os.Rename(tmp, filepath.Join(d.dir, "..data")))
}

func (d *secretDir) files() (string, string) {
	return filepath.Join(d.dir, "tls.crt"), filepath.Join(d.dir, "tls.key")
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// serve runs a TLS listener of p that completes each handshake and closes.
func serve(t *testing.T, p *Pair) string {
	t.Helper()
	l, err := tls.Listen("tcp", "127.0.0.1:0", p.Config())
	must(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			_ = c.(*tls.Conn).Handshake()
			_ = c.Close()
		}
	}()
	return l.Addr().String()
}

// served is the certificate a real TLS client gets from addr (verified against roots), or the handshake's error.
func served(addr string, roots *x509.CertPool, max uint16) (*x509.Certificate, error) {
	c, err := tls.Dial("tcp", addr, &tls.Config{RootCAs: roots, ServerName: "docs.example.com", MaxVersion: max})
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0], nil
}

func leafOf(t *testing.T, certPEM []byte) *x509.Certificate {
	t.Helper()
	b, _ := pem.Decode(certPEM)
	c, err := x509.ParseCertificate(b.Bytes)
	must(t, err)
	return c
}

// A renewal is served from the next handshake; a bad pair keeps the last good one serving and says why; a good
// one after it is served again. Real handshakes over TCP, the kubelet's link swap on disk.
func TestRenewalsAreServedAndABadPairKeepsTheLastGood(t *testing.T) {
	ca := testcerts.NewCA(t)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	c1, k1 := ca.Issue(t, testcerts.Options{}, "docs.example.com")
	sd := newSecretDir(t, c1, k1)
	p, err := New(sd.files())
	must(t, err)
	addr := serve(t, p)

	got, err := served(addr, roots, 0)
	must(t, err)
	if !bytes.Equal(got.Raw, leafOf(t, c1).Raw) {
		t.Fatal("the first certificate is not served")
	}

	c2, k2 := ca.Issue(t, testcerts.Options{}, "docs.example.com")
	sd.update(c2, k2)
	if got, err = served(addr, roots, 0); err != nil || !bytes.Equal(got.Raw, leafOf(t, c2).Raw) {
		t.Fatalf("the renewed certificate is not served at the next handshake (%v)", err)
	}

	_, otherKey := ca.Issue(t, testcerts.Options{}, "docs.example.com")
	c3, _ := ca.Issue(t, testcerts.Options{}, "docs.example.com")
	for what, pair := range map[string][2][]byte{
		"a key that is not the certificate's": {c3, otherKey},
		"a certificate that is not PEM":       {[]byte("not a certificate"), k2},
	} {
		sd.update(pair[0], pair[1])
		if got, err = served(addr, roots, 0); err != nil || !bytes.Equal(got.Raw, leafOf(t, c2).Raw) {
			t.Fatalf("%s: the last good certificate is not served (%v)", what, err)
		}
		if p.Err() == nil || !strings.Contains(p.Err().Error(), "the last good certificate is served") {
			t.Errorf("%s: Err() = %v", what, p.Err())
		}
	}

	c4, k4 := ca.Issue(t, testcerts.Options{}, "docs.example.com")
	sd.update(c4, k4)
	if got, err = served(addr, roots, 0); err != nil || !bytes.Equal(got.Raw, leafOf(t, c4).Raw) || p.Err() != nil {
		t.Fatalf("a good pair after a bad one: served %v, Err %v", err, p.Err())
	}
}

// Nothing older than TLS 1.2 is spoken, and a process cannot start on a pair it cannot load.
func TestModernTLSOnlyAndNoStartWithoutAPair(t *testing.T) {
	ca := testcerts.NewCA(t)
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	c, k := ca.Issue(t, testcerts.Options{}, "docs.example.com")
	sd := newSecretDir(t, c, k)
	p, err := New(sd.files())
	must(t, err)
	addr := serve(t, p)
	if _, err := served(addr, roots, tls.VersionTLS11); err == nil {
		t.Error("a TLS 1.1 client got a handshake")
	}
	if _, err := served(addr, roots, tls.VersionTLS12); err != nil {
		t.Errorf("TLS 1.2: %v", err)
	}

	if _, err := New(filepath.Join(t.TempDir(), "missing.crt"), filepath.Join(t.TempDir(), "missing.key")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("New on missing files: %v", err)
	}
	_, otherKey := ca.Issue(t, testcerts.Options{}, "docs.example.com")
	bad := newSecretDir(t, c, otherKey)
	if _, err := New(bad.files()); err == nil {
		t.Error("New accepted a key that is not the certificate's")
	}
}
