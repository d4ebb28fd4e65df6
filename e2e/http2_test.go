//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// HTTP/2 checks shared by the scenarios that have a site to run them on (no scenario of their own: they add a
// fetch pod and a few metric reads to sites that are up anyway).

// checkHTTP2ThroughService: a site with spec.tls and spec.server.h2c answers HTTP/2 through its Service on both
// ports, from inside the cluster: h2 negotiated by ALPN on the https port, h2c with prior knowledge on the plain
// port. The fetch client speaks HTTP/2 only (-http2), so an HTTP/1.1 answer is a failed fetch, not a pass; the
// Service's plain port says kubernetes.io/h2c and status.protocols lists all three.
func checkHTTP2ThroughService(t *testing.T, ns, name, caPEM, path string) {
	t.Helper()
	host := fmt.Sprintf("%s.%s.svc", name, ns)
	ok, res := fetch(t, ns, "fetch-http2", 2*time.Minute, "-http2", "-ca-pem", caPEM, "https://"+host+path, "http://"+host+path)
	if !ok || len(res) != 3 {
		t.Fatalf("HTTP/2 fetch through the Service: ok=%v %+v", ok, res)
	}
	for _, r := range res[1:] {
		if r.Status != 200 || r.Proto != "HTTP/2.0" {
			t.Errorf("%s: status %d over %q, want 200 over HTTP/2.0", r.URL, r.Status, r.Proto)
		}
	}
	t.Logf("HTTP/2 through the Service: %s %s (%s), %s %s (h2c)", res[1].URL, res[1].Proto, res[1].TLSVersion, res[2].URL, res[2].Proto)

	ctx := ctxFor(t, 30*time.Second)
	svc := &corev1.Service{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, svc); err != nil {
		t.Fatal(err)
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == v1alpha1.ServerPortName && ptr.Deref(p.AppProtocol, "") != desired.AppProtocolH2C {
			t.Errorf("Service %s port %s: appProtocol %q, want %q", name, p.Name, ptr.Deref(p.AppProtocol, ""), desired.AppProtocolH2C)
		}
	}
	site := &v1alpha1.StaticSite{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, site); err != nil {
		t.Fatal(err)
	}
	if site.Status.Protocols != "h2,http/1.1,h2c" {
		t.Errorf("status.protocols %q, want h2,http/1.1,h2c", site.Status.Protocols)
	}
}

// http2Counts are a site's HTTP/2 counters over cleartext (h2c), summed over its running pods.
type http2Counts struct{ connections, streams int64 }

// cleartextHTTP2 reads hyperstatic_http2_connections_total and hyperstatic_http2_streams_total with
// transport="cleartext" from every running pod of the site (its /metrics, through the API server's pod proxy).
// A pod that does not export them fails the test: the server half of the h2c contract is missing.
func cleartextHTTP2(t *testing.T, ns, name string) http2Counts {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	var sum http2Counts
	for _, pod := range sitePods(ctx, t, ns, name) {
		raw, err := cs.CoreV1().Pods(ns).ProxyGet("http", pod.Name, fmt.Sprint(v1alpha1.AdminPort), "/metrics", nil).DoRaw(ctx)
		if err != nil {
			t.Fatalf("scrape %s /metrics: %v", pod.Name, err)
		}
		found := 0
		for _, line := range strings.Split(string(raw), "\n") {
			var n int64
			if _, err := fmt.Sscanf(line, `hyperstatic_http2_connections_total{transport="cleartext"} %d`, &n); err == nil {
				sum.connections += n
				found++
			}
			if _, err := fmt.Sscanf(line, `hyperstatic_http2_streams_total{transport="cleartext"} %d`, &n); err == nil {
				sum.streams += n
				found++
			}
		}
		if found != 2 {
			t.Fatalf("%s /metrics lacks hyperstatic_http2_{connections,streams}_total{transport=\"cleartext\"}", pod.Name)
		}
	}
	return sum
}

// waitRoutedOverH2C waits until Traefik's requests reached the site's pods over h2c: the cleartext HTTP/2 stream
// count passed before (the requests that proved the route went through it) and at least one cleartext HTTP/2
// connection was ever accepted. Only Traefik reaches these pods' plain port in the route scenario.
func waitRoutedOverH2C(t *testing.T, ns, name string, before http2Counts, what string) http2Counts {
	t.Helper()
	var now http2Counts
	eventually(t, 30*time.Second, what+" over h2c", func(context.Context) (bool, string, error) {
		now = cleartextHTTP2(t, ns, name)
		return now.connections > 0 && now.streams > before.streams,
			fmt.Sprintf("cleartext HTTP/2: %d connections, %d streams (before: %d streams)", now.connections, now.streams, before.streams), nil
	})
	t.Logf("%s over h2c: cleartext HTTP/2 connections %d, streams %d → %d", what, now.connections, before.streams, now.streams)
	return now
}
