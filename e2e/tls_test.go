//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// tlsLoadScript requests the site over https at a constant rate, every request on a new connection (a full TLS
// handshake each time: Go's client keeps no session cache), so that requests made while the Secret rotates meet
// the certificate swap itself. k6 trusts the test's CA through SSL_CERT_FILE (Go's system pool reads it).
const tlsLoadScript = `import http from 'k6/http';

export const options = {
  noConnectionReuse: true,
  summaryTrendStats: ['avg', 'p(99)', 'max'],
  scenarios: {
    load: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE), timeUnit: '1s', duration: __ENV.DURATION,
      preAllocatedVUs: 20, maxVUs: 20,
    },
  },
};

export default function () { http.get(__ENV.TARGET); }

function count(m) { return m ? m.values.count : 0; }

export function handleSummary(data) {
  const m = data.metrics;
  const failed = m.http_req_failed ? m.http_req_failed.values.passes : -1;
  const out = { requests: count(m.http_reqs), failed: failed, dropped: count(m.dropped_iterations),
    p99ms: m.http_req_duration ? m.http_req_duration.values['p(99)'] : 0 };
  return { stdout: 'K6RESULT ' + JSON.stringify(out) + '\n' };
}
`

// testHTTPSRotationUnderLoad: a site serves HTTPS with the certificate of a kubernetes.io/tls Secret (TLSReady
// True, a client that trusts only the test's CA gets the page), and HTTP/2 through its Service on both ports (h2
// on the https port by default, h2c on the plain port with spec.server.h2c); while k6 makes a new TLS connection
// for every request, the Secret is replaced with a new certificate. The kubelet updates the mounted files in place, the
// server reloads them: new handshakes see the new serial, not one request fails, and no pod restarts or rolls.
func testHTTPSRotationUnderLoad(t *testing.T) {
	requireOperator(t)
	s := syntheticSite("https", cfg.siteImage)
	ns := newNamespace(t, s.name, false)
	ctx := ctxFor(t, 12*time.Minute)
	host := fmt.Sprintf("%s.%s.svc", s.name, ns)
	ca := testcerts.NewCA(t)

	certA, keyA := ca.Issue(t, testcerts.Options{Serial: 0xA1}, host, host+".cluster.local")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certA, corev1.TLSPrivateKeyKey: keyA},
	}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	site := newLoadSite(ns, s, s.rolloutCPU)
	site.Spec.TLS = &v1alpha1.TLSSpec{SecretName: secret.Name}
	site.Spec.Server.H2C = true // set from the start: the HTTP/2 checks below cost no rollout
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	waitSiteReady(t, ns, s.name, 3*time.Minute)
	eventually(t, time.Minute, "TLSReady=True", func(ctx context.Context) (bool, string, error) {
		got := &v1alpha1.StaticSite{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: s.name}, got); err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionTLSReady)
		return c != nil && c.Status == metav1.ConditionTrue, condString(c), nil
	})
	url := "https://" + host + s.path

	ok, res := fetch(t, ns, "fetch-https", 2*time.Minute, "-ca-pem", string(ca.PEM), url)
	if !ok || len(res) != 2 || res[1].Status != 200 || res[1].CertSerial != "a1" {
		t.Fatalf("https GET before the rotation: ok=%v %+v", ok, res)
	}
	t.Logf("https: %s, certificate serial %s", res[1].TLSVersion, res[1].CertSerial)
	checkHTTP2ThroughService(t, ns, s.name, string(ca.PEM), s.path) // http2_test.go
	podsBefore := sitePods(ctx, t, ns, s.name)
	generation := deploymentGeneration(ctx, t, ns, s.name)

	runK6With(t, ns, "tls-load", map[string]string{"load.js": tlsLoadScript, "ca.pem": string(ca.PEM)}, []corev1.EnvVar{
		{Name: "TARGET", Value: url}, {Name: "RATE", Value: "40"}, {Name: "DURATION", Value: "200s"},
		{Name: "SSL_CERT_FILE", Value: "/scripts/ca.pem"},
	}, 200*time.Second)
	time.Sleep(15 * time.Second) // requests on the first certificate before the rotation

	certB, keyB := ca.Issue(t, testcerts.Options{Serial: 0xB2}, host, host+".cluster.local")
	secret.Data = map[string][]byte{corev1.TLSCertKey: certB, corev1.TLSPrivateKeyKey: keyB}
	if err := k8s.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	rotated := time.Now()
	// The kubelet refreshes Secret volumes on its sync period (about a minute), the server checks once a second.
	ok, res = fetch(t, ns, "fetch-rotated", 3*time.Minute, "-ca-pem", string(ca.PEM), "-want-serial", "b2", "-poll", "170s", url)
	if !ok || len(res) != 2 || res[1].CertSerial != "b2" {
		t.Fatalf("the rotated certificate was not served: ok=%v %+v", ok, res)
	}
	t.Logf("MEASURED https rotation: Secret updated → new certificate served in %s", time.Since(rotated).Round(time.Second))

	r := loadResult(t, ns, "tls-load", 5*time.Minute)
	t.Logf("MEASURED https rotation under load: k6 (new TLS connection per request): %d requests, %d failed, %d dropped, p99 %.1f ms",
		r.Requests, r.Failed, r.Dropped, r.P99ms)
	if r.Requests == 0 || r.Failed != 0 {
		t.Errorf("want zero failed requests out of many, got %d failed of %d", r.Failed, r.Requests)
	}
	podsAfter := sitePods(ctx, t, ns, s.name)
	if len(podsAfter) != len(podsBefore) {
		t.Fatalf("pods before %d, after %d", len(podsBefore), len(podsAfter))
	}
	for i := range podsAfter {
		if podsAfter[i].UID != podsBefore[i].UID || restarts(&podsAfter[i]) != 0 {
			t.Errorf("pod %s replaced or restarted during the rotation (restarts %d)", podsAfter[i].Name, restarts(&podsAfter[i]))
		}
	}
	if g := deploymentGeneration(ctx, t, ns, s.name); g != generation {
		t.Errorf("the rotation changed the Deployment (generation %d → %d): it must not roll the pods", generation, g)
	}
}

// deploymentGeneration is the generation of the site's Deployment (named like the site).
func deploymentGeneration(ctx context.Context, t *testing.T, ns, name string) int64 {
	t.Helper()
	d, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return d.Generation
}
