//go:build e2e

package e2e

import (
	"context"
	"encoding/csv"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testcerts"
)

// testBenchmarkSweep: a Benchmark sweeping concurrency against a StaticSite (every file of the site) completes;
// its status summary, its per-step table (JSON and CSV) and its SVG chart are filled. Beside it, a short Benchmark
// with protocol HTTP/2 loads the same site's https port and reports status.protocol HTTP/2.0, while the sweep
// (protocol Auto, the plain port) reports HTTP/1.1.
func testBenchmarkSweep(t *testing.T) {
	requireOperator(t)
	// The k6 pods are the benchmark controller's; the restricted standard is warned about, not enforced, here.
	ns := newNamespace(t, "bench", true)
	ctx := ctxFor(t, 10*time.Minute)
	site := newSite(ns, "target", v1alpha1.ContentSource{Image: cfg.siteImage}, "250m")
	site.Spec.TLS = &v1alpha1.TLSSpec{SecretName: benchTLSSecret(ctx, t, ns, "target")}
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	waitSiteReady(t, ns, "target", 3*time.Minute)
	h2 := http2Benchmark(ns, "h2", "target")
	if err := k8s.Create(ctx, h2); err != nil {
		t.Fatalf("create Benchmark: %v", err)
	}

	cpu, mem := resource.MustParse("300m"), resource.MustParse("256Mi")
	bench := &v1alpha1.Benchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sweep"},
		Spec: v1alpha1.BenchmarkSpec{
			Target: v1alpha1.BenchmarkTarget{StaticSite: "target"},
			Paths:  &v1alpha1.BenchmarkPaths{AllFiles: true},
			Workload: v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{
				From: 1, To: 5, Step: 2, StepDuration: metav1.Duration{Duration: 5 * time.Second},
			}},
			Parallelism: 1,
			CPU:         &cpu,
			Memory:      &mem,
			Thresholds:  &v1alpha1.BenchmarkThresholds{MaxErrorRate: "1%"},
		},
	}
	if err := k8s.Create(ctx, bench); err != nil {
		t.Fatalf("create Benchmark: %v", err)
	}
	start := time.Now()
	waitBenchmarkComplete(t, bench, 6*time.Minute)
	waitBenchmarkComplete(t, h2, time.Minute) // started first and shorter: done by now, or soon
	t.Logf("Benchmark %s (protocol %s): status.protocol %s, %d requests", h2.Name, h2.Spec.Protocol, h2.Status.Protocol, h2.Status.Summary.Requests)
	if h2.Status.Protocol != "HTTP/2.0" || h2.Status.Summary.Errors != 0 {
		t.Errorf("Benchmark %s: status.protocol %q with %d errors, want HTTP/2.0 and none", h2.Name, h2.Status.Protocol, h2.Status.Summary.Errors)
	}
	if bench.Status.Protocol != "HTTP/1.1" {
		t.Errorf("Benchmark %s (Auto, plain port): status.protocol %q, want HTTP/1.1", bench.Name, bench.Status.Protocol)
	}
	st := bench.Status
	js, _ := json.MarshalIndent(st.Summary, "", "  ")
	t.Logf("Benchmark complete in %s, phase %s, results %s, summary:\n%s", time.Since(start).Round(time.Second), st.Phase, st.Results, js)

	if st.Phase != v1alpha1.BenchmarkPhaseComplete {
		t.Errorf("phase = %q, want Complete", st.Phase)
	}
	s := st.Summary
	if s == nil {
		t.Fatal("status.summary is empty")
	}
	if s.Steps != 3 || s.Requests <= 0 || s.MeasuredPeakRPS <= 0 || s.Peak == "" || s.P99 == "" {
		t.Errorf("summary incomplete: want 3 steps, requests, a peak and p99: %+v", s)
	}
	if s.Errors != 0 || s.Verdict != v1alpha1.VerdictPass {
		t.Errorf("errors = %d, verdict = %q (%s); want 0 and Pass", s.Errors, s.Verdict, s.VerdictReason)
	}

	if st.Results == "" {
		t.Fatal("status.results names no ConfigMap")
	}
	cm := &corev1.ConfigMap{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: st.Results}, cm); err != nil {
		t.Fatalf("results ConfigMap: %v", err)
	}
	get := func(key string) string {
		if v, ok := cm.Data[key]; ok {
			return v
		}
		return string(cm.BinaryData[key])
	}
	// The per-step table: a CSV header plus one row per step, and JSON that parses.
	rows, err := csv.NewReader(strings.NewReader(get("results.csv"))).ReadAll()
	if err != nil || len(rows) != 1+int(s.Steps) {
		t.Errorf("results.csv: %d rows (want header + %d steps), err %v:\n%s", len(rows), s.Steps, err, shorten(get("results.csv"), 2000))
	} else {
		t.Logf("results.csv:\n%s", get("results.csv"))
	}
	var anyJSON any
	if err := json.Unmarshal([]byte(get("results.json")), &anyJSON); err != nil {
		t.Errorf("results.json does not parse: %v", err)
	}
	// The chart: well-formed SVG with drawn series.
	svg := get("chart.svg")
	if err := wellFormedSVG(svg); err != nil {
		t.Errorf("chart.svg: %v", err)
	} else {
		t.Logf("chart.svg: %d bytes of well-formed SVG", len(svg))
	}
}

// waitBenchmarkComplete waits until bench is Complete (and fails the test at once when it Failed), leaving its
// latest state in bench.
func waitBenchmarkComplete(t *testing.T, bench *v1alpha1.Benchmark, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "Benchmark "+bench.Name+" Complete", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(bench), bench); err != nil {
			return false, err.Error(), nil
		}
		if f := meta.FindStatusCondition(bench.Status.Conditions, v1alpha1.BenchmarkFailed); f != nil && f.Status == metav1.ConditionTrue {
			return false, "", errors.New("Benchmark failed: " + condString(f))
		}
		c := meta.FindStatusCondition(bench.Status.Conditions, v1alpha1.BenchmarkComplete)
		return c != nil && c.Status == metav1.ConditionTrue, "phase " + bench.Status.Phase + ", Complete=" + condString(c), nil
	})
}

// benchTLSSecret creates a kubernetes.io/tls Secret for the site's in-cluster name, signed by a CA of the test's
// (a Benchmark of a StaticSite does not verify it: k6 loads the Service by a name the certificate need not hold).
func benchTLSSecret(ctx context.Context, t *testing.T, ns, site string) string {
	t.Helper()
	host := site + "." + ns + ".svc"
	crt, key := testcerts.NewCA(t).Issue(t, testcerts.Options{}, host)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: site + "-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: crt, corev1.TLSPrivateKeyKey: key}}
	if err := k8s.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	return secret.Name
}

// http2Benchmark is a short, light run of protocol HTTP/2 against a StaticSite with spec.tls: its https port.
func http2Benchmark(ns, name, site string) *v1alpha1.Benchmark {
	cpu, mem := resource.MustParse("200m"), resource.MustParse("256Mi")
	return &v1alpha1.Benchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.BenchmarkSpec{
			Target:   v1alpha1.BenchmarkTarget{StaticSite: site},
			Protocol: v1alpha1.ProtocolHTTP2,
			Workload: v1alpha1.BenchmarkWorkload{ArrivalRate: &v1alpha1.ArrivalRateWorkload{
				Rate: 20, Duration: metav1.Duration{Duration: 5 * time.Second},
			}},
			Parallelism: 1,
			CPU:         &cpu,
			Memory:      &mem,
		},
	}
}

// wellFormedSVG parses the document, checks its root is <svg> and that it draws something (a path or polyline).
func wellFormedSVG(doc string) error {
	dec := xml.NewDecoder(strings.NewReader(doc))
	root, drawn := "", 0
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			switch se.Name.Local {
			case "path", "polyline", "line", "circle", "rect":
				drawn++
			}
		}
	}
	if root != "svg" {
		return errors.New("root element is <" + root + ">, want <svg>")
	}
	if drawn == 0 {
		return errors.New("draws nothing")
	}
	return nil
}
