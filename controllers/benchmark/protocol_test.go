package benchmark

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// k6 has one switch for its HTTP version: GODEBUG=http2client=0 turns HTTP/2 off. Only spec.protocol HTTP/1.1
// sets it; Auto and HTTP/2 leave k6's default (h2 over TLS when offered).
func TestK6EnvFollowsTheProtocol(t *testing.T) {
	for _, tc := range []struct {
		protocol v1alpha1.BenchmarkProtocol
		godebug  string
	}{{"", ""}, {v1alpha1.ProtocolAuto, ""}, {v1alpha1.ProtocolHTTP2, ""}, {v1alpha1.ProtocolHTTP11, "http2client=0"}} {
		b := testBenchmark()
		b.Spec.Protocol = tc.protocol
		start := time.UnixMilli(1_800_000_000_000)
		env := map[string]string{}
		for _, e := range desiredJob(b, nil, "k6", start, start, time.Minute).Spec.Template.Spec.Containers[0].Env {
			env[e.Name] = e.Value
		}
		if got, set := env["GODEBUG"]; got != tc.godebug || set != (tc.godebug != "") {
			t.Errorf("protocol %q: GODEBUG %q (set %v), want %q", tc.protocol, got, set, tc.godebug)
		}
	}
}

// protocolBenchmark is a constant run of protocol p against the StaticSite "secure".
func protocolBenchmark(ns, name string, p v1alpha1.BenchmarkProtocol) *v1alpha1.Benchmark {
	return &v1alpha1.Benchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.BenchmarkSpec{
			Target:      v1alpha1.BenchmarkTarget{StaticSite: "secure"},
			Protocol:    p,
			Parallelism: 2,
			Workload:    v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 2, Duration: metav1.Duration{Duration: 5 * time.Second}}},
		},
	}
}

// protocol HTTP/2 against a StaticSite: the run loads its Service's https port (k6 has no h2c), skipping
// certificate verification (the certificate names the site's public hostnames, not the Service); status.protocol
// is what the k6 pods counted, here from two real runners' output against an h2 server: HTTP/2.0.
func TestHTTP2RunLoadsTheHTTPSPortAndReportsTheProtocol(t *testing.T) {
	ns := namespace(t)
	testenv.Must(t, k8s.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secure"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{v1alpha1.LabelSite: "secure"}, Ports: []corev1.ServicePort{
			{Name: v1alpha1.ServerPortName, Port: 80}, {Name: v1alpha1.HTTPSPortName, Port: 8443}}},
	}))
	testenv.Must(t, k8s.Create(ctx, protocolBenchmark(ns, "h2", v1alpha1.ProtocolHTTP2)))
	b := waitBenchmark(t, ns, "h2", "running", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResolved)
	})
	if want := "https://secure." + ns + ".svc:8443"; b.Status.Target != want {
		t.Fatalf("target %q, want %q", b.Status.Target, want)
	}
	script := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "h2-script"}, script))
	var plan k6script.Plan
	testenv.Must(t, json.Unmarshal([]byte(script.Data[k6script.PlanFile]), &plan))
	if plan.Protocol != v1alpha1.ProtocolHTTP2 || !plan.InsecureSkipTLSVerify {
		t.Fatalf("plan %+v", plan)
	}

	job := getJob(t, ns, "h2")
	k6Pod(t, ns, "h2", 0, recordedIn(t, "h2-2pods", "pod0.log"))
	k6Pod(t, ns, "h2", 1, recordedIn(t, "h2-2pods", "pod1.log"))
	finishJob(t, job, true)
	b = waitBenchmark(t, ns, "h2", "complete", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhaseComplete {
			return fmt.Errorf("%s", describe(b))
		}
		return nil
	})
	if b.Status.Protocol != benchresults.ProtocolHTTP2 {
		t.Errorf("status.protocol %q, want %q", b.Status.Protocol, benchresults.ProtocolHTTP2)
	}
	results := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "h2-results"}, results))
	var res benchresults.Results
	testenv.Must(t, json.Unmarshal([]byte(results.Data[benchresults.ResultsJSONKey]), &res))
	if res.Protocols[benchresults.ProtocolHTTP2] != res.Requests || len(res.Protocols) != 1 || res.Requests == 0 {
		t.Errorf("results.json protocols %v for %d requests", res.Protocols, res.Requests)
	}
}

// protocol HTTP/2 against a StaticSite without spec.tls: its Service has no https port, so the target is not
// resolved (TargetResolved False, NoHTTPSPort, naming spec.tls) and no k6 pod runs.
func TestHTTP2RunWaitsForAnHTTPSPort(t *testing.T) {
	ns := namespace(t)
	testenv.Must(t, k8s.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secure"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{v1alpha1.LabelSite: "secure"}, Ports: []corev1.ServicePort{
			{Name: v1alpha1.ServerPortName, Port: 80}}},
	}))
	testenv.Must(t, k8s.Create(ctx, protocolBenchmark(ns, "noh2", v1alpha1.ProtocolHTTP2)))
	waitBenchmark(t, ns, "noh2", "waiting for an https port", func(b *v1alpha1.Benchmark) error {
		c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.BenchmarkTargetResolved)
		if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.BenchmarkReasonNoHTTPSPort {
			return fmt.Errorf("%s", describe(b))
		}
		if want := "needs the StaticSite's spec.tls"; !strings.Contains(c.Message, want) {
			return fmt.Errorf("message %q lacks %q", c.Message, want)
		}
		return nil
	})
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "noh2"}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
		t.Fatalf("no Job while the target has no https port: %v", err)
	}
	// The same site under Auto loads its http port.
	testenv.Must(t, k8s.Create(ctx, protocolBenchmark(ns, "auto", v1alpha1.ProtocolAuto)))
	b := waitBenchmark(t, ns, "auto", "resolved", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResolved)
	})
	if want := "http://secure." + ns + ".svc:80"; b.Status.Target != want {
		t.Fatalf("target %q, want %q", b.Status.Target, want)
	}
}

// What the HTTP/2 rule lets through: an https URL (and, above, any StaticSite target).
func TestHTTP2AdmittedForAnHTTPSURL(t *testing.T) {
	ns := namespace(t)
	b := urlBenchmark(ns, "h2url")
	b.Spec.Target.URL = "https://nginx.example.svc:8443"
	b.Spec.Protocol = v1alpha1.ProtocolHTTP2
	testenv.Must(t, k8s.Create(ctx, b))
	// The default is Auto.
	auto := urlBenchmark(ns, "auto")
	testenv.Must(t, k8s.Create(ctx, auto))
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(auto), auto))
	if auto.Spec.Protocol != v1alpha1.ProtocolAuto {
		t.Errorf("default protocol %q", auto.Spec.Protocol)
	}
}
