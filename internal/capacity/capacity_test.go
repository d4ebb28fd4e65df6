package capacity

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
)

var keys = TemplateKeys{ServerContainer: "server", ContentHashAnnotation: "hyperstatic.dev/content-hash"}

func template(image, cpu, hash string) *corev1.PodTemplateSpec {
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")}
	return &corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{keys.ContentHashAnnotation: hash}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "server", Image: image, Args: []string{"--root=/site"},
				Resources: corev1.ResourceRequirements{Limits: res, Requests: res}}},
			Volumes: []corev1.Volume{{Name: "site", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "content:v1"}}}},
		},
	}
}

// The API server defaults many fields of a stored template and may print quantities in another form: none of that
// changes the id; what decides serving speed does.
func TestIdentifyIsStableAcrossDefaulting(t *testing.T) {
	applied := template("server:1", "1", "abc")
	stored := applied.DeepCopy()
	stored.Spec.DNSPolicy = corev1.DNSClusterFirst
	stored.Spec.RestartPolicy = corev1.RestartPolicyAlways
	stored.Spec.SchedulerName = "default-scheduler"
	stored.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
	c := &stored.Spec.Containers[0]
	c.TerminationMessagePath, c.TerminationMessagePolicy, c.ImagePullPolicy = "/dev/termination-log", corev1.TerminationMessageReadFile, corev1.PullIfNotPresent
	c.Resources.Limits[corev1.ResourceCPU] = resource.MustParse("1000m")
	stored.Spec.Volumes[0].Image.PullPolicy = corev1.PullIfNotPresent
	stored.Labels = map[string]string{"pod-template-hash": "x"}

	a, b := Identify(applied, keys, "rev"), Identify(stored, keys, "rev")
	if a.ID != b.ID || len(a.ID) != IDLength {
		t.Fatalf("ids differ or have the wrong length: %q vs %q", a.ID, b.ID)
	}
	if a.ServerImage != "server:1" || a.CPU.MilliValue() != 1000 || a.Memory.Value() != 64<<20 || a.ContentRevision != "rev" {
		t.Fatalf("identity fields: %+v", a)
	}
	for name, changed := range map[string]*corev1.PodTemplateSpec{
		"image":        template("server:2", "1", "abc"),
		"cpu":          template("server:1", "2", "abc"),
		"content hash": template("server:1", "1", "def"),
	} {
		if Identify(changed, keys, "rev").ID == a.ID {
			t.Errorf("a %s change keeps the id", name)
		}
	}
	vol := template("server:1", "1", "abc")
	vol.Spec.Volumes[0].Image.Reference = "content:v2"
	args := template("server:1", "1", "abc")
	args.Spec.Containers[0].Args = []string{"--root=/other"}
	mem := template("server:1", "1", "abc")
	mem.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("128Mi")
	for name, changed := range map[string]*corev1.PodTemplateSpec{"image volume": vol, "args": args, "memory": mem} {
		if Identify(changed, keys, "rev").ID == a.ID {
			t.Errorf("a %s change keeps the id", name)
		}
	}
}

func summary(serverCPU string, serverRPS, perCPU int64, clientBound int32, p99 string) *v1alpha1.BenchmarkSummary {
	return &v1alpha1.BenchmarkSummary{ServerCPU: serverCPU, ServerRPS: serverRPS, RequestsPerCPUSecond: perCPU, MeasuredPeakRPS: serverRPS,
		ClientBoundSteps: clientBound, P99: p99, Steps: 1}
}

func result(cpu string) Result {
	q := resource.MustParse(cpu)
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return Result{Template: v1alpha1.TemplateIdentity{ID: "abc", CPU: &q}, LatencyObjective: 100 * time.Millisecond,
		Benchmark: "b", Started: start, At: start.Add(40 * time.Second)}
}

func TestCompute(t *testing.T) {
	// Saturated server, client not the limit: the rate measured is the capacity.
	m, err := Compute(summary("0.96", 2000, 2100, 0, "3ms"), result("1"))
	if err != nil || m.Source != v1alpha1.CapacitySourceMeasured || m.RPSPerPod != 2000 || !m.LatencyObjectiveMet || m.Took.Duration != 40*time.Second {
		t.Fatalf("saturated: %+v %v", m, err)
	}
	// Client-bound: extrapolated from the server's requests per CPU-second times its CPU.
	m, err = Compute(summary("0.95", 2000, 2100, 1, "3ms"), result("2"))
	if err != nil || m.Source != v1alpha1.CapacitySourceServerCPU || m.RPSPerPod != 4200 || !m.ClientBound {
		t.Fatalf("client-bound: %+v %v", m, err)
	}
	// Server with CPU to spare (below 90 %): extrapolated too; p99 over the objective.
	m, err = Compute(summary("0.5", 1000, 2000, 0, "150ms"), result("1"))
	if err != nil || m.Source != v1alpha1.CapacitySourceServerCPU || m.RPSPerPod != 2000 || m.LatencyObjectiveMet {
		t.Fatalf("spare CPU: %+v %v", m, err)
	}
	// The server CPU as the Benchmark writes it (benchresults.FormatCores): 0.049 of a 50m pod is saturated.
	m, err = Compute(summary(benchresults.FormatCores(0.049), 2700, 55000, 0, "60ms"), result("50m"))
	if err != nil || m.Source != v1alpha1.CapacitySourceMeasured || m.RPSPerPod != 2700 {
		t.Fatalf("FormatCores contract: %+v %v", m, err)
	}
	if _, err := Compute(summary("", 0, 0, 0, "1ms"), result("1")); err == nil || !strings.Contains(err.Error(), "no server figures") {
		t.Fatalf("no server figures: %v", err)
	}
	if _, err := Compute(nil, result("1")); err == nil {
		t.Fatal("no summary: no error")
	}
}

func measurement(rps int64, p99 string) v1alpha1.CapacityMeasurement {
	return v1alpha1.CapacityMeasurement{RPSPerPod: rps, P99: p99, MeasuredAgainst: v1alpha1.TemplateIdentity{ID: "1a2b3c", ServerImage: "server:2"}}
}

func TestDecide(t *testing.T) {
	d := Decide(measurement(2090, "4ms"), measurement(812, "4ms"), nil)
	if d.Phase != v1alpha1.GateBlocked || d.Reason != v1alpha1.ReasonCapacityDropped || d.CapacityChangePercent != -61 ||
		!strings.Contains(d.Message, "serves 812 req/s per pod, 61% less than the serving 2090 (limit 25%)") {
		t.Fatalf("drop: %+v", d)
	}
	if d := Decide(measurement(2000, "4ms"), measurement(1600, "40ms"), nil); d.Phase != v1alpha1.GatePassed || d.CapacityChangePercent != -20 || *d.P99ChangePercent != 900 {
		t.Fatalf("within the limit, p99 not deciding: %+v", d)
	}
	g := &v1alpha1.PerformanceGateSpec{MaxCapacityDropPercent: ptr.To[int32](10), MaxP99IncreasePercent: ptr.To[int32](50)}
	if d := Decide(measurement(2000, "4ms"), measurement(1950, "8ms"), g); d.Phase != v1alpha1.GateBlocked || d.Reason != v1alpha1.ReasonLatencyRose {
		t.Fatalf("p99 rise: %+v", d)
	}
	if d := Decide(measurement(2000, "4ms"), measurement(1700, "4ms"), g); d.Reason != v1alpha1.ReasonCapacityDropped {
		t.Fatalf("custom drop limit: %+v", d)
	}
	if d := Decide(measurement(2000, "4ms"), measurement(2500, "3ms"), g); d.Phase != v1alpha1.GatePassed || d.CapacityChangePercent != 25 {
		t.Fatalf("faster: %+v", d)
	}
}

func TestGateReason(t *testing.T) {
	drop := ptr.To[int32](-61)
	rise := ptr.To[int32](-5)
	canary := &v1alpha1.CapacityMeasurement{}
	for _, c := range []struct {
		gate    v1alpha1.PerformanceGateStatus
		blocked bool
		reason  string
	}{
		{v1alpha1.PerformanceGateStatus{Phase: v1alpha1.GatePassed}, false, v1alpha1.ReasonGatePassed},
		{v1alpha1.PerformanceGateStatus{Phase: v1alpha1.GateOverridden}, false, v1alpha1.ReasonGateOverridden},
		{v1alpha1.PerformanceGateStatus{Phase: v1alpha1.GateMeasuring}, false, v1alpha1.ReasonMeasuringCanary},
		{v1alpha1.PerformanceGateStatus{Phase: v1alpha1.GateBlocked}, true, v1alpha1.ReasonCanaryFailed},
		{v1alpha1.PerformanceGateStatus{Phase: v1alpha1.GateBlocked, Canary: canary, CapacityChangePercent: drop}, true, v1alpha1.ReasonCapacityDropped},
		{v1alpha1.PerformanceGateStatus{Phase: v1alpha1.GateBlocked, Canary: canary, CapacityChangePercent: rise}, true, v1alpha1.ReasonLatencyRose},
	} {
		if b, r := GateReason(&c.gate, nil); b != c.blocked || r != c.reason {
			t.Errorf("%+v: %v %s, want %v %s", c.gate, b, r, c.blocked, c.reason)
		}
	}
}
