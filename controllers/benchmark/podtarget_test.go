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
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// probeLabels are the labels the StaticSite controller puts on a capacity probe of site "site".
var probeLabels = map[string]string{v1alpha1.LabelCapacityProbeOf: "site", v1alpha1.LabelCapacityTemplate: "1a2b3c",
	v1alpha1.LabelCapacityRole: "probe", v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}

// siteOwner is a controller owner reference to the StaticSite named name (the uid is not checked: envtest has no
// garbage collector).
func siteOwner(name string) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: "StaticSite", Name: name,
		UID: types.UID("uid-" + name), Controller: ptr.To(true)}
}

// serverPod creates a server pod as the StaticSite controller makes it (ports http and admin, https with TLS;
// requests == limits), and, when ip is set, marks it running and Ready at that IP.
func serverPod(t *testing.T, ns, name string, labels map[string]string, owners []metav1.OwnerReference, tls bool, ip string) *corev1.Pod {
	t.Helper()
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m"), corev1.ResourceMemory: resource.MustParse("64Mi")}
	ports := []corev1.ContainerPort{{Name: v1alpha1.ServerPortName, ContainerPort: v1alpha1.ServerPort}, {Name: v1alpha1.AdminPortName, ContainerPort: v1alpha1.AdminPort}}
	if tls {
		ports = append(ports, corev1.ContainerPort{Name: v1alpha1.HTTPSPortName, ContainerPort: v1alpha1.HTTPSPort})
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels, OwnerReferences: owners},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Image: "hyperstatic/server:test", Ports: ports,
			Resources: corev1.ResourceRequirements{Requests: res, Limits: res}}}},
	}
	testenv.Must(t, k8s.Create(ctx, pod))
	if ip != "" {
		setReady(t, pod, ip)
	}
	return pod
}

func setReady(t *testing.T, pod *corev1.Pod, ip string) {
	t.Helper()
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
		Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	testenv.Must(t, k8s.Status().Update(ctx, pod))
}

// podBenchmark loads pod of StaticSite "site": one constant step, every file, browsers' Accept-Encoding.
func podBenchmark(ns, name, pod string) *v1alpha1.Benchmark {
	return &v1alpha1.Benchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: v1alpha1.BenchmarkSpec{
			Target:         v1alpha1.BenchmarkTarget{StaticSite: "site", Pod: pod},
			Paths:          &v1alpha1.BenchmarkPaths{AllFiles: true},
			AcceptEncoding: "br, gzip",
			Parallelism:    2,
			Workload:       v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 4, Duration: metav1.Duration{Duration: 5 * time.Second}}},
		},
	}
}

// A capacity probe of the site (IPv6-only cluster) is loaded at its own IP, bracketed, on its http port: the plan
// names it (the k6 pods keep off its node by its labels) with its CPU limit, the script sends Accept-Encoding, the
// samples are that pod's only (not the serving pod's), and the summary shows the pod's CPU limit but no server
// figure the samples do not give (they fall outside the recorded steps' windows).
func TestPodTargetLoadsThatPodOnly(t *testing.T) {
	ns := namespace(t)
	staticSite(t, ns) // the Service and the serving pod site-0, which must NOT be sampled
	serverPod(t, ns, "site-probe", probeLabels, []metav1.OwnerReference{siteOwner("site")}, false, "fd00:10:244::5")
	testenv.Must(t, k8s.Create(ctx, podBenchmark(ns, "probe", "site-probe")))

	b := waitBenchmark(t, ns, "probe", "running", func(b *v1alpha1.Benchmark) error {
		if b.Status.Phase != v1alpha1.BenchmarkPhaseRunning {
			return fmt.Errorf("%s", describe(b))
		}
		return condition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResolved)
	})
	if want := "http://[fd00:10:244::5]:8080"; b.Status.Target != want {
		t.Fatalf("status.target %q, want %q", b.Status.Target, want)
	}
	script := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "probe-script"}, script))
	var plan k6script.Plan
	testenv.Must(t, json.Unmarshal([]byte(script.Data[k6script.PlanFile]), &plan))
	if plan.TargetPod != "site-probe" || plan.ServerCPULimit != "0.05" || plan.AcceptEncoding != "br, gzip" ||
		plan.TargetPodLabels[v1alpha1.LabelCapacityRole] != "probe" || !plan.InsecureSkipTLSVerify {
		t.Fatalf("plan %+v", plan)
	}
	if !strings.Contains(script.Data[k6script.ScriptFile], "'Accept-Encoding': PLAN.acceptEncoding") {
		t.Fatal("the script does not send Accept-Encoding")
	}

	job := getJob(t, ns, "probe")
	terms := job.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 3 || terms[0].Weight != 100 || !equalLabels(terms[0].PodAffinityTerm.LabelSelector.MatchLabels, probeLabels) ||
		terms[1].PodAffinityTerm.LabelSelector.MatchLabels[v1alpha1.LabelSite] != "site" || terms[1].Weight >= terms[0].Weight {
		t.Fatalf("anti-affinity %+v", terms)
	}

	startAt, err := startAtOf(job)
	testenv.Must(t, err)
	advanceClock(t, samplePoints(plan, startAt)[0].Add(100*time.Millisecond).Sub(clk.Now()))
	touch(t, ns, "probe")
	results := &corev1.ConfigMap{}
	testenv.Eventually(t, "a server sample", func() error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "probe-results"}, results); err != nil {
			return err
		}
		if results.Annotations[annotationSampled] != "1" {
			return fmt.Errorf("annotations %v", results.Annotations)
		}
		return nil
	})
	var samples []benchresults.ServerSample
	testenv.Must(t, json.Unmarshal([]byte(results.Data[benchresults.ServerSamplesKey]), &samples))
	if len(samples) != 1 || samples[0].Pod != "site-probe" {
		t.Fatalf("samples %+v, want one of site-probe only", samples)
	}

	b = completeRun(t, ns, "probe", job, recorded(t, "pod0.log"), recorded(t, "pod1.log"))
	if s := b.Status.Summary; s == nil || s.ServerCPULimit != "0.05" || s.ServerCPU != "" || s.ServerRPS != 0 || s.RequestsPerCPUSecond != 0 {
		t.Fatalf("summary %+v: the pod's limit, and no server figure the samples do not give", s)
	}
}

// The server figures of the summary come from the samples recorded in the results ConfigMap inside the peak step's
// load window (here written as the scrapes would have, at the recorded run's times).
func TestPodTargetSummaryHasTheServerFigures(t *testing.T) {
	ns := namespace(t)
	serverPod(t, ns, "site-0", map[string]string{v1alpha1.LabelSite: "site"}, nil, false, "10.1.2.4")
	sweep := podBenchmark(ns, "serving", "site-0")
	sweep.Spec.Workload = sweepBenchmark(ns, "serving").Spec.Workload // the recorded sweep's plan
	testenv.Must(t, k8s.Create(ctx, sweep))
	b := waitBenchmark(t, ns, "serving", "running", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkRunning, metav1.ConditionTrue, v1alpha1.BenchmarkReasonJobRunning)
	})
	if b.Status.Target != "http://10.1.2.4:8080" {
		t.Fatalf("status.target %q", b.Status.Target)
	}

	// The recorded sweep has three steps of 5 s; its peak step is the fastest. Two samples of the pod 3 s apart
	// inside each step's window: 0.049 cores and 3000 req/s at step 2, other figures elsewhere.
	logs0, logs1 := recorded(t, "pod0.log"), recorded(t, "pod1.log")
	l0, err := benchresults.ParseLog(logs0)
	testenv.Must(t, err)
	l1, err := benchresults.ParseLog(logs1)
	testenv.Must(t, err)
	var samples []benchresults.ServerSample
	for i := range l0.Steps {
		start := max(l0.Steps[i].LoadStartMs, l1.Steps[i].LoadStartMs)
		cpu, reqs := 0.03, 2000.0
		if i == 2 {
			cpu, reqs = 0.147, 9000
		}
		samples = append(samples, benchresults.ServerSample{Pod: "site-0", UnixMs: start + 500, Requests: 1e6 * float64(i), CPUSeconds: float64(i)},
			benchresults.ServerSample{Pod: "site-0", UnixMs: start + 3500, Requests: 1e6*float64(i) + reqs, CPUSeconds: float64(i) + cpu})
	}
	raw, err := json.Marshal(samples)
	testenv.Must(t, err)
	testenv.Eventually(t, "write the samples", func() error {
		results := &corev1.ConfigMap{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "serving-results"}, results); err != nil {
			return err
		}
		if results.Data == nil {
			results.Data = map[string]string{}
		}
		results.Data[benchresults.ServerSamplesKey] = string(raw)
		return k8s.Update(ctx, results)
	})

	b = completeRun(t, ns, "serving", getJob(t, ns, "serving"), logs0, logs1)
	s := b.Status.Summary
	if s == nil || s.PeakStep != 2 {
		t.Fatalf("summary %+v: the recorded sweep peaks at step 2", s)
	}
	if s.ServerCPU != "0.049" || s.ServerRPS != 3000 || s.RequestsPerCPUSecond != 61224 && s.RequestsPerCPUSecond != 61225 || s.ServerCPULimit != "0.05" {
		t.Fatalf("summary %+v, want 0.049 cores, 3000 req/s, about 61224 req per CPU-second, limit 0.05", s)
	}
}

func equalLabels(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// A pod that is missing, not the site's, labelled as its probe without the site as controller, or not Ready is
// refused with a reason naming it; no Job is made. HTTP/2 needs the pod's https port. A pod that becomes Ready later
// is loaded (the pod watch wakes the Benchmark).
func TestPodTargetRefusals(t *testing.T) {
	ns := namespace(t)
	serverPod(t, ns, "other-0", map[string]string{v1alpha1.LabelSite: "other"}, nil, false, "10.1.3.1")
	serverPod(t, ns, "fake-probe", probeLabels, nil, false, "10.1.3.2")
	serverPod(t, ns, "other-probe", map[string]string{v1alpha1.LabelCapacityProbeOf: "site"}, []metav1.OwnerReference{siteOwner("other")}, false, "10.1.3.3")
	notOwner := siteOwner("site")
	notOwner.Controller = nil
	serverPod(t, ns, "owned-not-controlled", probeLabels, []metav1.OwnerReference{notOwner}, false, "10.1.3.4")
	starting := serverPod(t, ns, "starting", probeLabels, []metav1.OwnerReference{siteOwner("site")}, false, "")
	serverPod(t, ns, "no-tls", map[string]string{v1alpha1.LabelSite: "site"}, nil, false, "10.1.3.6")

	cases := []struct{ bench, pod, reason string }{
		{"missing", "nope", v1alpha1.BenchmarkReasonPodNotFound},
		{"other-site", "other-0", v1alpha1.BenchmarkReasonPodNotOfSite},
		{"fake-probe", "fake-probe", v1alpha1.BenchmarkReasonPodNotOfSite},
		{"other-probe", "other-probe", v1alpha1.BenchmarkReasonPodNotOfSite},
		{"not-controller", "owned-not-controlled", v1alpha1.BenchmarkReasonPodNotOfSite},
		{"starting", "starting", v1alpha1.BenchmarkReasonPodNotReady},
		{"h2-no-tls", "no-tls", v1alpha1.BenchmarkReasonNoHTTPSPort},
	}
	for _, c := range cases {
		b := podBenchmark(ns, c.bench, c.pod)
		if c.bench == "h2-no-tls" {
			b.Spec.Protocol = v1alpha1.ProtocolHTTP2
		}
		testenv.Must(t, k8s.Create(ctx, b))
	}
	for _, c := range cases {
		waitBenchmark(t, ns, c.bench, c.bench+" refused", func(b *v1alpha1.Benchmark) error {
			if err := condition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionFalse, c.reason); err != nil {
				return err
			}
			if msg := conditionMessage(b, v1alpha1.BenchmarkTargetResolved); !strings.Contains(msg, c.pod) {
				return fmt.Errorf("the message %q does not name the pod %s", msg, c.pod)
			}
			return nil
		})
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: c.bench}, &batchv1.Job{}); !apierrors.IsNotFound(err) {
			t.Fatalf("%s: a Job for a refused pod: %v", c.bench, err)
		}
	}

	setReady(t, starting, "10.1.3.5")
	b := waitBenchmark(t, ns, "starting", "resolved once Ready", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResolved)
	})
	if b.Status.Target != "http://10.1.3.5:8080" {
		t.Fatalf("status.target %q", b.Status.Target)
	}
}

// Protocol HTTP/2 loads the pod's own https container port, over TLS.
func TestPodTargetHTTP2UsesThePodsHTTPSPort(t *testing.T) {
	ns := namespace(t)
	serverPod(t, ns, "site-0", map[string]string{v1alpha1.LabelSite: "site"}, nil, true, "10.1.4.1")
	b := podBenchmark(ns, "h2", "site-0")
	b.Spec.Protocol = v1alpha1.ProtocolHTTP2
	testenv.Must(t, k8s.Create(ctx, b))
	b = waitBenchmark(t, ns, "h2", "resolved", func(b *v1alpha1.Benchmark) error {
		return condition(b, v1alpha1.BenchmarkTargetResolved, metav1.ConditionTrue, v1alpha1.BenchmarkReasonResolved)
	})
	if b.Status.Target != "https://10.1.4.1:8443" {
		t.Fatalf("status.target %q", b.Status.Target)
	}
}

// conditionMessage is the message of the Benchmark's condition typ.
func conditionMessage(b *v1alpha1.Benchmark, typ string) string {
	for _, c := range b.Status.Conditions {
		if c.Type == typ {
			return c.Message
		}
	}
	return ""
}
