package contract

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// The TLS contract: what spec.tls (and spec.service.httpsPort, spec.http3) make the operator pass the server
// (serverargs.go: --tls-listen, --tls-cert, --tls-key, --http2; http3.go: --http3, --alt-svc-port,
// --http3-early-data; the site value:
// httpsRedirect with the port, hsts, and spec.server.limits.perClientHandshakes, which needs spec.tls) is accepted
// by the real server. --check loads the certificate, so the Secret's mount path is swapped for a real pair, as
// --root is for a real site; the check must then report the certificate it loaded.
func TestContractTLSArgsAcceptedByServer(t *testing.T) {
	bin := serverbin.Require(t)
	root := writeSite(t)
	certFile, keyFile := writeCertPair(t)
	cases := []struct {
		name    string
		tls     v1alpha1.TLSSpec
		service v1alpha1.ServiceSpec
		limits  *v1alpha1.ClientLimits
		http3   *v1alpha1.HTTP3Spec
	}{
		{name: "secret only", tls: v1alpha1.TLSSpec{SecretName: "site-tls"}},
		{name: "redirect on port 443", tls: v1alpha1.TLSSpec{SecretName: "site-tls", HTTPRedirect: true}},
		{name: "redirect on another port", tls: v1alpha1.TLSSpec{SecretName: "site-tls", HTTPRedirect: true},
			service: v1alpha1.ServiceSpec{HTTPSPort: 8443}},
		{name: "http2 off", tls: v1alpha1.TLSSpec{SecretName: "site-tls", HTTP2: ptr.To(false)}},
		{name: "http2 on as written", tls: v1alpha1.TLSSpec{SecretName: "site-tls", HTTP2: ptr.To(true)}},
		{name: "hsts max-age only", tls: v1alpha1.TLSSpec{SecretName: "site-tls", HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 300}}},
		{name: "hsts forget", tls: v1alpha1.TLSSpec{SecretName: "site-tls", HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 0}}},
		{name: "hsts preload with redirect", tls: v1alpha1.TLSSpec{SecretName: "site-tls", HTTPRedirect: true,
			HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 63072000, IncludeSubDomains: true, Preload: true}}},
		{name: "per-client handshakes, defaults", tls: v1alpha1.TLSSpec{SecretName: "site-tls"},
			limits: &v1alpha1.ClientLimits{PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{Handshakes: 10}}},
		{name: "per-client handshakes and requests, extremes", tls: v1alpha1.TLSSpec{SecretName: "site-tls"},
			limits: &v1alpha1.ClientLimits{
				PerClient: &v1alpha1.PerClientLimit{Requests: 1, PeriodSeconds: 1, Burst: v1alpha1.MaxPerClientRequests},
				PerClientHandshakes: &v1alpha1.PerClientHandshakeLimit{Handshakes: v1alpha1.MaxPerClientRequests,
					PeriodSeconds: v1alpha1.MaxPerClientPeriodSeconds, Burst: 1}}},
		{name: "http3 on, the Service's https port advertised", tls: v1alpha1.TLSSpec{SecretName: "site-tls"},
			http3: &v1alpha1.HTTP3Spec{Enabled: ptr.To(true)}},
		{name: "http3 on, a load balancer's port advertised, with http2 off", tls: v1alpha1.TLSSpec{SecretName: "site-tls",
			HTTP2: ptr.To(false)}, service: v1alpha1.ServiceSpec{HTTPSPort: 8443},
			http3: &v1alpha1.HTTP3Spec{Enabled: ptr.To(true), AdvertisedPort: ptr.To[int32](65535)}},
		{name: "http3 on with 0-RTT", tls: v1alpha1.TLSSpec{SecretName: "site-tls"},
			http3: &v1alpha1.HTTP3Spec{Enabled: ptr.To(true), EarlyData: ptr.To(true)}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := site(servedSpec)
			s.Spec.TLS = &c.tls
			s.Spec.Service = c.service
			s.Spec.Server.Limits = c.limits
			s.Spec.HTTP3 = c.http3
			args := operatorArgs(t, bin, s, root)
			args = serverbin.SetFlag(t, args, "--tls-cert", certFile)
			args = serverbin.SetFlag(t, args, "--tls-key", keyFile)
			res, err := runCheck(bin, args)
			if err != nil {
				t.Fatalf("%v\nargs: %s", err, serverbin.QuoteArgs(args))
			}
			if res.exitCode != 0 {
				t.Fatalf("the server rejects the operator's TLS arguments (exit %d)\nargs: %s\nstderr: %s\nstdout: %s",
					res.exitCode, serverbin.QuoteArgs(args), res.stderr, res.stdout)
			}
			if !strings.Contains(res.stdout, "tls: ") {
				t.Fatalf("--check accepted the arguments but reported no certificate\nargs: %s\nstdout: %s",
					serverbin.QuoteArgs(args), res.stdout)
			}
			// httpsRedirect (with the Service's port) and hsts are the site value's now.
			if rev := sitevalue.Render(s).Revision; !strings.Contains(res.stdout, rev) {
				t.Fatalf("--check does not report the operator's site value revision %s\nsite value: %s\nstdout: %s",
					rev, sitevalue.Render(s).Bytes, res.stdout)
			}
		})
	}
}

// TestContractTLSMountPathIsTheSecretsKeys: the operator names the files the kubelet projects from a
// kubernetes.io/tls Secret (tls.crt, tls.key) under the mount path; a renamed key would leave the server without a
// certificate in every pod.
func TestContractTLSMountPathIsTheSecretsKeys(t *testing.T) {
	s := site(servedSpec)
	s.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "site-tls"}
	args := strings.Join(desired.ServerArgs(s), " ")
	for _, want := range []string{
		"--tls-cert " + v1alpha1.TLSMountPath + "/" + corev1.TLSCertKey,
		"--tls-key " + v1alpha1.TLSMountPath + "/" + corev1.TLSPrivateKeyKey,
	} {
		if !strings.Contains(args, want) {
			t.Errorf("ServerArgs %q lacks %q", args, want)
		}
	}
}

// writeCertPair writes a self-signed ECDSA P-256 certificate and its PKCS#8 key as PEM files.
func writeCertPair(t *testing.T) (certFile, keyFile string) {
	t.Helper()
	certPEM, keyPEM := testcerts.SelfSigned(t, testcerts.Options{}, "contract.default.svc")
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	if err := os.WriteFile(certFile, certPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(keyFile, keyPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	return certFile, keyFile
}
