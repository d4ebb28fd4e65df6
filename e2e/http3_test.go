//go:build e2e

package e2e

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// HTTP/3 in the cluster (spec.http3, docs/http3.md): a step of the site-on-every-family scenarios (15 of TestE2E
// on the single-node cluster, 2 of TestAddressFamilies on the IPv6-only one), not a scenario of its own. The site
// there is a TLS site with HTTP/3 on; a pod fetches every file over HTTP/3 only (fetchh3: quic-go, UDP, no TCP
// fallback) through the site's Service: its DNS name and each of its ClusterIPs, so UDP crosses kube-proxy on every
// family of the cluster.

// withHTTP3 gives site a certificate for its Service's names (a Secret issued by a CA of the test's own) and turns
// on spec.tls and spec.http3; it returns the CA's PEM and the Service's DNS name. Call before creating the site.
func withHTTP3(ctx context.Context, t *testing.T, site *v1alpha1.StaticSite) (caPEM, host string) {
	t.Helper()
	host = site.Name + "." + site.Namespace + ".svc"
	ca := testcerts.NewCA(t)
	cert, key := ca.Issue(t, testcerts.Options{}, host, host+".cluster.local")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: site.Namespace, Name: site.Name + "-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: cert, corev1.TLSPrivateKeyKey: key},
	}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	site.Spec.TLS = &v1alpha1.TLSSpec{SecretName: secret.Name}
	site.Spec.HTTP3 = &v1alpha1.HTTP3Spec{Enabled: ptr.To(true)}
	return string(ca.PEM), host
}

// checkHTTP3ThroughService: the Service carries the UDP port h3 beside https (same number), status.protocols says
// h3, and a fetchh3 pod gets every file's exact bytes over HTTP/3 through the Service's DNS name and through each
// ClusterIP (the certificate checked against the DNS name).
func checkHTTP3ThroughService(t *testing.T, site *v1alpha1.StaticSite, svc *corev1.Service, caPEM, host string, files []siteFile) {
	t.Helper()
	var https, h3 *corev1.ServicePort
	for i, p := range svc.Spec.Ports {
		switch {
		case p.Name == v1alpha1.HTTPSPortName && p.Protocol == corev1.ProtocolTCP:
			https = &svc.Spec.Ports[i]
		case p.Name == v1alpha1.HTTP3PortName && p.Protocol == corev1.ProtocolUDP:
			h3 = &svc.Spec.Ports[i]
		}
	}
	if https == nil || h3 == nil || h3.Port != https.Port {
		t.Fatalf("Service ports %+v: want https/TCP and h3/UDP on one port number", svc.Spec.Ports)
	}
	if site.Status.Protocols != "h3,h2,http/1.1" {
		t.Errorf("status.protocols %q, want h3,h2,http/1.1", site.Status.Protocols)
	}
	port := strconv.Itoa(int(h3.Port))
	bases := []string{"https://" + net.JoinHostPort(host, port)}
	for _, ip := range svc.Spec.ClusterIPs {
		bases = append(bases, "https://"+net.JoinHostPort(ip, port))
	}
	urls, want := fileURLs(bases, files)
	c := restrictedContainer("fetchh3", cfg.fetchImage, append([]string{"-ca-pem", caPEM, "-server-name", host}, urls...)...)
	c.Command = []string{"/fetchh3"}
	timeout := 3 * time.Minute
	runJob(t, site.Namespace, "fetch-h3", corev1.PodSpec{Containers: []corev1.Container{c}}, timeout)
	ok, log := waitJob(t, site.Namespace, "fetch-h3", timeout+30*time.Second)
	results := fetchResults(t, "fetch-h3", log)
	if !ok || len(results) != len(want) {
		t.Fatalf("fetch-h3: job ok=%v, %d results, want %d (one per file and base)", ok, len(results), len(want))
	}
	check := exactBytes(t)
	for _, r := range results {
		f, known := want[r.URL]
		if !known {
			t.Errorf("unexpected result for %s", r.URL)
			continue
		}
		if r.Proto != "HTTP/3.0" {
			t.Errorf("%s: proto %q, want HTTP/3.0", r.URL, r.Proto)
		}
		check(f, r)
	}
	t.Logf("MEASURED HTTP/3 through the Service: %d files with the exact bytes via %v (UDP port %s)", len(files), bases, port)
}
