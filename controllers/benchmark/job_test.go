package benchmark

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

func testBenchmark() *v1alpha1.Benchmark {
	cpu := resource.MustParse("1500m")
	return &v1alpha1.Benchmark{
		ObjectMeta: metav1.ObjectMeta{Name: "b1", Namespace: "ns", UID: "uid-1"},
		Spec: v1alpha1.BenchmarkSpec{
			Target:      v1alpha1.BenchmarkTarget{StaticSite: "site"},
			Parallelism: 3, CPU: &cpu,
			Workload: v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{From: 3, To: 9, Step: 3}},
		},
	}
}

func TestDesiredJob(t *testing.T) {
	b := testBenchmark()
	start := time.UnixMilli(1_800_000_000_000)
	job := desiredJob(b, nil, "hyperstatic/k6:1", start.Add(-15*time.Second), start, 10*time.Minute)
	s := job.Spec
	if *s.Completions != 3 || *s.Parallelism != 3 || *s.BackoffLimit != 0 || string(*s.CompletionMode) != "Indexed" {
		t.Fatalf("job spec %+v", s)
	}
	if *s.ActiveDeadlineSeconds != 660 || job.Annotations[AnnotationStartAt] != "1800000000000" {
		t.Fatalf("deadline %d annotations %v", *s.ActiveDeadlineSeconds, job.Annotations)
	}
	if got, err := startAtOf(job); err != nil || !got.Equal(start) {
		t.Fatalf("startAtOf: %v %v", got, err)
	}
	if got, err := deadlineOf(job); err != nil || !got.Equal(start.Add(-15*time.Second+10*time.Minute)) {
		t.Fatalf("deadlineOf: %v %v", got, err)
	}
	if len(job.OwnerReferences) != 1 || !*job.OwnerReferences[0].Controller || job.Labels[v1alpha1.LabelBenchmark] != "b1" {
		t.Fatalf("owner %+v labels %v", job.OwnerReferences, job.Labels)
	}
	pod := s.Template.Spec
	c := pod.Containers[0]
	// Guaranteed: requests == limits for CPU and memory.
	for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
		if req.IsZero() || req.Cmp(lim) != 0 {
			t.Errorf("%s: request %s limit %s", r, req.String(), lim.String())
		}
	}
	if q := c.Resources.Limits[corev1.ResourceCPU]; q.String() != "1500m" {
		t.Errorf("cpu %s", q.String())
	}
	if q := c.Resources.Limits[corev1.ResourceMemory]; q.String() != "512Mi" {
		t.Errorf("memory default %s", q.String())
	}
	// Restricted Pod Security Standard.
	sc, psc := c.SecurityContext, pod.SecurityContext
	if !*psc.RunAsNonRoot || *psc.RunAsUser != 65532 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault ||
		*sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" {
		t.Fatalf("security %+v %+v", psc, sc)
	}
	if *pod.AutomountServiceAccountToken || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Fatal("pod must not mount a token and never restart")
	}
	// Away from the server pods first (weight 100), then from each other.
	terms := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 2 || terms[0].Weight != 100 || terms[0].PodAffinityTerm.LabelSelector.MatchLabels[v1alpha1.LabelSite] != "site" ||
		terms[0].PodAffinityTerm.TopologyKey != corev1.LabelHostname {
		t.Fatalf("anti-affinity %+v", terms)
	}
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
	}
	if env["HS_PARALLELISM"] != "3" || env["HS_START_AT_MS"] != "1800000000000" || env["K6_NO_USAGE_REPORT"] != "true" {
		t.Fatalf("env %v", env)
	}
	if c.Image != "hyperstatic/k6:1" || c.Command[0] != "/runner" {
		t.Fatalf("image %s command %v", c.Image, c.Command)
	}
	b.Spec.Image = "mine/k6:2"
	b.Spec.Target = v1alpha1.BenchmarkTarget{URL: "http://x"}
	job = desiredJob(b, nil, "hyperstatic/k6:1", start, start, time.Minute)
	if job.Spec.Template.Spec.Containers[0].Image != "mine/k6:2" || len(job.Spec.Template.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 {
		t.Fatal("image override / URL target affinity")
	}
}

func TestSamplePoints(t *testing.T) {
	plan, err := k6script.NewPlan(testBenchmark().Spec, "http://x")
	if err != nil {
		t.Fatal(err)
	}
	start := time.Unix(1000, 0)
	pts := samplePoints(plan, start)
	if len(pts) != 6 {
		t.Fatalf("%d points", len(pts))
	}
	// Step 1 starts at 35 s (30 s load + 5 s gap): samples at +2.5 s and +29.5 s.
	if !pts[2].Equal(start.Add(37500*time.Millisecond)) || !pts[3].Equal(start.Add(64500*time.Millisecond)) {
		t.Fatalf("points %v", pts)
	}
}

func TestThresholdsAndPhase(t *testing.T) {
	b := testBenchmark()
	b.Spec.Thresholds = &v1alpha1.BenchmarkThresholds{P99: &metav1.Duration{Duration: 2500 * time.Microsecond}, MaxErrorRate: "0.5%"}
	th, err := thresholdsOf(b)
	if err != nil || th.P99Ms != 2.5 || th.MaxErrorRate != 0.005 {
		t.Fatalf("%+v %v", th, err)
	}
	conds := []metav1.Condition{{Type: v1alpha1.BenchmarkRunning, Status: metav1.ConditionTrue}}
	if phaseOf(conds) != "Running" || phaseOf(nil) != "Pending" {
		t.Fatal("phase")
	}
	conds = append(conds, metav1.Condition{Type: v1alpha1.BenchmarkFailed, Status: metav1.ConditionTrue})
	if phaseOf(conds) != "Failed" {
		t.Fatal("failed wins")
	}
}

func TestParseContent(t *testing.T) {
	got, err := ParseContentList(stringsReader("/index.html\n\n/a/b.css\tdisk\tidentity,br,gzip\n/c d.txt\tmemory\tidentity\n"))
	if err != nil || len(got) != 3 || got[1] != "/a/b.css" || got[2] != "/c d.txt" {
		t.Fatalf("%q %v", got, err)
	}
	if _, err := ParseContentList(stringsReader("index.html\n")); err == nil {
		t.Fatal("a line without / must be refused")
	}
}

func stringsReader(s string) *strings.Reader { return strings.NewReader(s) }
