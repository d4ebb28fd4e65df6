package staticsite

// Capacity measurements and the performance gate against a real API server. No kubelet and no Benchmark
// controller run: the tests play them, setting a measurement pod Ready and a Benchmark's status as they would.

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/capacitygate"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// advanceClock moves the controller's clock by d until the test ends.
func advanceClock(t *testing.T, d time.Duration) {
	t.Helper()
	suiteClock.SetTime(suiteClock.Now().Add(d))
	t.Cleanup(func() { suiteClock.SetTime(clockTime) })
}

// measurementPodOf waits for the one measurement pod of site with role, and returns it.
func measurementPodOf(t *testing.T, ns, site, role string) *corev1.Pod {
	t.Helper()
	var pod *corev1.Pod
	testenv.Eventually(t, role+" pod of "+site, func() error {
		list := &corev1.PodList{}
		if err := k8s.List(context.Background(), list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelCapacityProbeOf: site}); err != nil {
			return err
		}
		var found []corev1.Pod
		for _, p := range list.Items {
			if p.Labels[v1alpha1.LabelCapacityRole] == role && p.DeletionTimestamp.IsZero() {
				found = append(found, p)
			}
		}
		if len(found) != 1 {
			return fmt.Errorf("%d %s pods, want 1", len(found), role)
		}
		pod = &found[0]
		return nil
	})
	return pod
}

// noMeasurementChildren waits until site has neither measurement pods nor Benchmarks.
func noMeasurementChildren(t *testing.T, ns, site string) {
	t.Helper()
	testenv.Eventually(t, "measurement children of "+site+" deleted", func() error {
		sel := client.MatchingLabels{v1alpha1.LabelCapacityProbeOf: site}
		pods, benches := &corev1.PodList{}, &v1alpha1.BenchmarkList{}
		if err := k8s.List(context.Background(), pods, client.InNamespace(ns), sel); err != nil {
			return err
		}
		if err := k8s.List(context.Background(), benches, client.InNamespace(ns), sel); err != nil {
			return err
		}
		if len(pods.Items)+len(benches.Items) > 0 {
			return fmt.Errorf("%d pods and %d Benchmarks left", len(pods.Items), len(benches.Items))
		}
		return nil
	})
}

// setPodReady plays the kubelet: the pod runs and is Ready.
func setPodReady(t *testing.T, p *corev1.Pod) {
	t.Helper()
	testenv.Eventually(t, "pod "+p.Name+" Ready", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = "10.0.0.9"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
		return k8s.Status().Update(context.Background(), p)
	})
}

// benchmarkNamed waits for a Benchmark.
func benchmarkNamed(t *testing.T, ns, name string) *v1alpha1.Benchmark {
	t.Helper()
	b := &v1alpha1.Benchmark{}
	testenv.Eventually(t, "Benchmark "+name, func() error { return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, b) })
	return b
}

// finishBenchmark plays the Benchmark controller: the run completed with summary, or failed (summary nil).
func finishBenchmark(t *testing.T, b *v1alpha1.Benchmark, summary *v1alpha1.BenchmarkSummary) {
	t.Helper()
	testenv.Eventually(t, "Benchmark "+b.Name+" finished", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(b), b); err != nil {
			return err
		}
		now := metav1.Now()
		if summary == nil {
			b.Status.Phase = v1alpha1.BenchmarkPhaseFailed
			b.Status.Conditions = []metav1.Condition{{Type: v1alpha1.BenchmarkFailed, Status: metav1.ConditionTrue, Reason: "JobFailed",
				Message: "the k6 Job failed", LastTransitionTime: now}}
		} else {
			b.Status.Phase = v1alpha1.BenchmarkPhaseComplete
			b.Status.Summary = summary
			b.Status.Conditions = []metav1.Condition{{Type: v1alpha1.BenchmarkComplete, Status: metav1.ConditionTrue, Reason: "ResultsCollected",
				Message: "done", LastTransitionTime: now}}
		}
		return k8s.Status().Update(context.Background(), b)
	})
}

// serverFigures is a summary with the server's own figures.
func serverFigures(serverCPU string, serverRPS, perCPU int64, p99 string) *v1alpha1.BenchmarkSummary {
	return &v1alpha1.BenchmarkSummary{Peak: fmt.Sprint(serverRPS), PeakRPS: serverRPS, MeasuredPeakRPS: serverRPS, P50: "1ms", P90: "2ms", P99: p99,
		ServerCPU: serverCPU, ServerRPS: serverRPS, RequestsPerCPUSecond: perCPU, ServerCPULimit: "1", Requests: serverRPS * 10, ErrorRate: "0%", Steps: 1}
}

// measure plays one measurement through: the pod of role becomes Ready, its Benchmark finishes with summary.
// It returns the Benchmark's name.
func measure(t *testing.T, ns, site, role string, summary *v1alpha1.BenchmarkSummary) string {
	t.Helper()
	pod := measurementPodOf(t, ns, site, role)
	setPodReady(t, pod)
	b := benchmarkNamed(t, ns, pod.Name)
	finishBenchmark(t, b, summary)
	return b.Name
}

func capacitySite(t *testing.T, ns, name string, gate bool) *v1alpha1.StaticSite {
	t.Helper()
	spec := v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/" + name + ":v1"}, Capacity: &v1alpha1.CapacitySpec{}}
	if gate {
		spec.Capacity = nil // the gate alone asks for measurements
		spec.Rollout = &v1alpha1.RolloutSpec{PerformanceGate: &v1alpha1.PerformanceGateSpec{}}
	}
	site := createSite(t, ns, name, spec)
	// No measurement before the Deployment's rollout completes.
	waitSite(t, ns, name, "waiting for the rollout", conditionWith(v1alpha1.ConditionCapacityMeasured, metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity, "rollout"))
	rollOutAndWaitReady(t, ns, name)
	return site
}

func capacityIs(rps int64, source v1alpha1.CapacitySource, reason string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		c := s.Status.Capacity
		if c == nil || c.RPSPerPod != rps || c.Source != source || !c.Current {
			return fmt.Errorf("status.capacity %+v, want %d req/s (%s), current", c, rps, source)
		}
		return condition(s, v1alpha1.ConditionCapacityMeasured, metav1.ConditionTrue, reason)
	}
}

func TestCapacityProbeMeasuresTheServingTemplate(t *testing.T) {
	ns := namespace(t)
	site := capacitySite(t, ns, "cap", false)
	d := getDeployment(t, ns, "cap")
	pod := measurementPodOf(t, ns, "cap", capacitygate.RoleProbe)

	// The probe is invisible to the site's selectors, placed alone, and runs the serving template's resources.
	for k := range sitechild.SelectorLabels(site) {
		if _, ok := pod.Labels[k]; ok {
			t.Errorf("probe pod carries selector label %s: %v", k, pod.Labels)
		}
	}
	if pod.Labels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue || !metav1.IsControlledBy(pod, site) {
		t.Errorf("probe pod labels %v / owners %v", pod.Labels, pod.OwnerReferences)
	}
	want := capacitygate.Identify(&d.Spec.Template, capacityContent(desired.Content{})).ID
	if pod.Labels[v1alpha1.LabelCapacityTemplate] != want {
		t.Errorf("probe template label %q, want the Deployment's template id %q", pod.Labels[v1alpha1.LabelCapacityTemplate], want)
	}
	// Required: no other measurement pod of its namespace on the node; preferred: none of any namespace.
	terms := pod.Spec.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution
	if n := len(terms); n != 1 || terms[0].TopologyKey != corev1.LabelHostname || terms[0].NamespaceSelector != nil || len(terms[0].Namespaces) != 0 ||
		terms[0].LabelSelector.MatchExpressions[0].Key != v1alpha1.LabelCapacityRole || terms[0].LabelSelector.MatchExpressions[0].Operator != metav1.LabelSelectorOpExists {
		t.Errorf("required anti-affinity: %+v", terms)
	}
	// The template's own preferred zone spread stays first; the measurement's term is added after it.
	preferred := pod.Spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if n := len(preferred); n != 2 || preferred[1].Weight != 100 || preferred[1].PodAffinityTerm.TopologyKey != corev1.LabelHostname ||
		preferred[1].PodAffinityTerm.NamespaceSelector == nil || !reflect.DeepEqual(*preferred[1].PodAffinityTerm.NamespaceSelector, metav1.LabelSelector{}) ||
		preferred[1].PodAffinityTerm.LabelSelector.MatchExpressions[0].Key != v1alpha1.LabelCapacityRole {
		t.Errorf("preferred anti-affinity: %+v", preferred)
	}
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed || pod.Spec.Containers[0].Resources.Limits.Cpu().String() != "1" {
		t.Errorf("probe QoS %s, resources %v", pod.Status.QOSClass, pod.Spec.Containers[0].Resources)
	}
	if sc := pod.Spec.Containers[0].SecurityContext; sc == nil || sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Errorf("probe security context %+v", sc)
	}
	waitSite(t, ns, "cap", "CapacityMeasured Unknown", conditionWith(v1alpha1.ConditionCapacityMeasured, metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity, "Ready"))

	// Ready: a Benchmark loads it.
	setPodReady(t, pod)
	b := benchmarkNamed(t, ns, pod.Name)
	s := b.Spec
	if s.Target.StaticSite != "cap" || s.Target.Pod != pod.Name || s.Workload.Constant == nil || s.Workload.Constant.VUs != 16 ||
		s.Workload.Constant.Duration.Duration != 10*time.Second || !*s.Workload.Constant.KeepAlive || s.Paths == nil || !s.Paths.AllFiles ||
		s.AcceptEncoding != "br, gzip" || s.Protocol != v1alpha1.ProtocolHTTP11 || s.Parallelism != 1 || s.CPU.String() != "1" ||
		s.Memory.String() != "256Mi" || s.Timeout.Duration != 10*time.Second+3*time.Minute || s.Cleanup != v1alpha1.CleanupDelete ||
		!metav1.IsControlledBy(b, site) || b.Labels[v1alpha1.LabelCapacityRole] != capacitygate.RoleProbe {
		t.Errorf("Benchmark spec %+v labels %v", s, b.Labels)
	}

	// The server had CPU to spare: its requests per CPU-second times its CPU.
	finishBenchmark(t, b, serverFigures("0.5", 2000, 4000, "3ms"))
	got := waitSite(t, ns, "cap", "capacity from server CPU", capacityIs(4000, v1alpha1.CapacitySourceServerCPU, v1alpha1.ReasonCapacityFromServerCPU))
	if got.Status.Capacity.MeasuredAgainst.ID != want || got.Status.Capacity.Benchmark != b.Name || !got.Status.Capacity.LatencyObjectiveMet {
		t.Errorf("status.capacity %+v", got.Status.Capacity)
	}
	noMeasurementChildren(t, ns, "cap")
	waitEvent(t, ns, "cap", "4000 req/s per pod")

	// A new request measures again; a saturated server gives the rate measured.
	updateSite(t, site, func(s *v1alpha1.StaticSite) {
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, v1alpha1.AnnotationMeasureCapacity, "again")
	})
	measure(t, ns, "cap", capacitygate.RoleProbe, serverFigures("0.97", 3000, 3100, "150ms"))
	got = waitSite(t, ns, "cap", "measured capacity", capacityIs(3000, v1alpha1.CapacitySourceMeasured, v1alpha1.ReasonCapacityMeasured))
	if got.Status.Capacity.Request != "again" || got.Status.Capacity.LatencyObjectiveMet {
		t.Errorf("status.capacity %+v", got.Status.Capacity)
	}
	noMeasurementChildren(t, ns, "cap")

	// Nothing wants capacity any more: the figures and conditions go.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Capacity = nil })
	waitSite(t, ns, "cap", "capacity dropped", func(s *v1alpha1.StaticSite) error {
		if s.Status.Capacity != nil {
			return fmt.Errorf("status.capacity still %+v", s.Status.Capacity)
		}
		return condition(s, v1alpha1.ConditionCapacityMeasured, "", "")
	})
}

// gatedSite is a site with the gate on, its serving template measured at 2000 req/s per pod, and its content
// changed to v2: the candidate's canary pod is up.
func gatedSite(t *testing.T, ns, name string) (*v1alpha1.StaticSite, *corev1.Pod) {
	t.Helper()
	site := capacitySite(t, ns, name, true)
	measure(t, ns, name, capacitygate.RoleProbe, serverFigures("0.95", 2000, 2100, "4ms"))
	waitSite(t, ns, name, "baseline", capacityIs(2000, v1alpha1.CapacitySourceMeasured, v1alpha1.ReasonCapacityMeasured))
	noMeasurementChildren(t, ns, name)
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Content.Image = "example/" + name + ":v2" })
	canary := measurementPodOf(t, ns, name, capacitygate.RoleCanary)
	if img := canary.Spec.Containers[0].Image; img != "example/"+name+":v2" {
		t.Fatalf("canary runs %s, want the new template's image", img)
	}
	return site, canary
}

func deploymentImage(d *appsv1.Deployment) string { return d.Spec.Template.Spec.Containers[0].Image }

func TestPerformanceGateBlocksASlowerCandidate(t *testing.T) {
	ns := namespace(t)
	site, canary := gatedSite(t, ns, "slow")
	for k := range sitechild.SelectorLabels(site) {
		if _, ok := canary.Labels[k]; ok {
			t.Errorf("canary carries selector label %s", k)
		}
	}
	s := waitSite(t, ns, "slow", "measuring the canary", conditionWith(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonMeasuringCanary, canary.Labels[v1alpha1.LabelCapacityTemplate]))
	testenv.Must(t, condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, ""))
	if d := getDeployment(t, ns, "slow"); deploymentImage(d) != "example/slow:v1" {
		t.Fatalf("held Deployment runs %s", deploymentImage(d))
	}
	// A scale change during the hold still reaches the Deployment, with the template still held.
	scaleTo(t, site, 3)
	testenv.Eventually(t, "3 replicas on the held template", func() error {
		d := getDeployment(t, ns, "slow")
		if *d.Spec.Replicas != 3 || deploymentImage(d) != "example/slow:v1" {
			return fmt.Errorf("replicas %d, image %s", *d.Spec.Replicas, deploymentImage(d))
		}
		return nil
	})
	rollOutAndWaitReady(t, ns, "slow")

	measure(t, ns, "slow", capacitygate.RoleCanary, serverFigures("0.96", 800, 830, "5ms"))
	s = waitSite(t, ns, "slow", "blocked", conditionWith(v1alpha1.ConditionRolloutBlocked, metav1.ConditionTrue, v1alpha1.ReasonCapacityDropped, "60% less than the serving 2000 (limit 25%)"))
	testenv.Must(t, condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable))
	g := s.Status.PerformanceGate
	if g.Phase != v1alpha1.GateBlocked || *g.CapacityChangePercent != -60 || g.Canary.RPSPerPod != 800 || g.Baseline.RPSPerPod != 2000 || g.DecidedAt == nil {
		t.Errorf("gate %+v", g)
	}
	noMeasurementChildren(t, ns, "slow")
	waitEvent(t, ns, "slow", "Warning CapacityDropped rollout blocked: candidate "+g.Candidate.ID)
	if d := getDeployment(t, ns, "slow"); deploymentImage(d) != "example/slow:v1" {
		t.Fatalf("blocked candidate reached the Deployment: %s", deploymentImage(d))
	}

	// The override rolls the blocked candidate out.
	updateSite(t, site, func(s *v1alpha1.StaticSite) {
		metav1.SetMetaDataAnnotation(&s.ObjectMeta, v1alpha1.AnnotationPerformanceGateOverride, g.Candidate.ID)
	})
	testenv.Eventually(t, "overridden candidate rolls out", func() error {
		if img := deploymentImage(getDeployment(t, ns, "slow")); img != "example/slow:v2" {
			return fmt.Errorf("Deployment runs %s", img)
		}
		return nil
	})
	s = waitSite(t, ns, "slow", "overridden", conditionWith(v1alpha1.ConditionRolloutBlocked, metav1.ConditionFalse, v1alpha1.ReasonGateOverridden, g.Candidate.ID))
	if s.Status.PerformanceGate.Phase != v1alpha1.GateOverridden {
		t.Errorf("gate phase %s", s.Status.PerformanceGate.Phase)
	}
	// Once it serves, the canary's figure is the site's capacity: no second measurement.
	rollOutAndWaitReady(t, ns, "slow")
	waitSite(t, ns, "slow", "canary figure promoted", func(s *v1alpha1.StaticSite) error {
		if c := s.Status.Capacity; c == nil || c.MeasuredAgainst.ID != g.Candidate.ID || !c.Current || c.RPSPerPod != 800 {
			return fmt.Errorf("status.capacity %+v", c)
		}
		return nil
	})
}

func TestPerformanceGatePassesAHarmlessCandidate(t *testing.T) {
	ns := namespace(t)
	_, canary := gatedSite(t, ns, "fine")
	candidate := canary.Labels[v1alpha1.LabelCapacityTemplate]
	bench := measure(t, ns, "fine", capacitygate.RoleCanary, serverFigures("0.96", 1900, 1950, "4ms"))
	s := waitSite(t, ns, "fine", "passed", conditionWith(v1alpha1.ConditionRolloutBlocked, metav1.ConditionFalse, v1alpha1.ReasonGatePassed, "5% less than the serving 2000"))
	if g := s.Status.PerformanceGate; g.Phase != v1alpha1.GatePassed || g.Candidate.ID != candidate || *g.CapacityChangePercent != -5 {
		t.Errorf("gate %+v", g)
	}
	waitEvent(t, ns, "fine", "Normal GatePassed candidate "+candidate)
	testenv.Eventually(t, "candidate rolls out", func() error {
		if img := deploymentImage(getDeployment(t, ns, "fine")); img != "example/fine:v2" {
			return fmt.Errorf("Deployment runs %s", img)
		}
		return nil
	})
	rollOutAndWaitReady(t, ns, "fine")
	s = waitSite(t, ns, "fine", "canary figure promoted", capacityIs(1900, v1alpha1.CapacitySourceMeasured, v1alpha1.ReasonCapacityMeasured))
	if c := s.Status.Capacity; c.MeasuredAgainst.ID != candidate || c.Benchmark != bench {
		t.Errorf("status.capacity %+v, want the canary's (%s, %s)", c, candidate, bench)
	}
	noMeasurementChildren(t, ns, "fine")
}

func TestProbeNotReadyByTheDeadline(t *testing.T) {
	ns := namespace(t)
	capacitySite(t, ns, "stuck", false)
	pod := measurementPodOf(t, ns, "stuck", capacitygate.RoleProbe)
	waitSite(t, ns, "stuck", "measuring", conditionWith(v1alpha1.ConditionCapacityMeasured, metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity, "Ready"))

	advanceClock(t, capacitygate.ProbeReadyTimeout+time.Second)
	// Wake a pass, as the requeue at the deadline would.
	testenv.Eventually(t, "touch the probe", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		pod.Labels["touched"] = "1"
		return k8s.Update(context.Background(), pod)
	})
	waitSite(t, ns, "stuck", "ProbeNotReady", conditionWith(v1alpha1.ConditionCapacityMeasured, metav1.ConditionFalse, v1alpha1.ReasonProbeNotReady, "did not become Ready within 3m0s"))
	noMeasurementChildren(t, ns, "stuck")
	waitEvent(t, ns, "stuck", "Warning ProbeNotReady")
}

func TestFailedBenchmarkIsRetriedLater(t *testing.T) {
	ns := namespace(t)
	site := capacitySite(t, ns, "flaky", false)
	measure(t, ns, "flaky", capacitygate.RoleProbe, nil)
	waitSite(t, ns, "flaky", "MeasurementFailed", conditionWith(v1alpha1.ConditionCapacityMeasured, metav1.ConditionFalse, v1alpha1.ReasonMeasurementFailed, "JobFailed: the k6 Job failed"))
	noMeasurementChildren(t, ns, "flaky")

	// A Benchmark without server figures fails the measurement too; it is tried again once the retry is due.
	advanceClock(t, capacitygate.MeasurementRetry+time.Second)
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Labels = map[string]string{"touched": "1"} })
	measure(t, ns, "flaky", capacitygate.RoleProbe, serverFigures("", 100, 0, "1ms"))
	waitSite(t, ns, "flaky", "no server figures", conditionWith(v1alpha1.ConditionCapacityMeasured, metav1.ConditionFalse, v1alpha1.ReasonMeasurementFailed, "no server figures"))
	noMeasurementChildren(t, ns, "flaky")
}

// The desired template (an apply configuration) and the same template as the API server stores and defaults it
// in a Deployment have one identity.
func TestTemplateIdentityOfDesiredAndLive(t *testing.T) {
	ns := namespace(t)
	site := createSite(t, ns, "ident", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/ident:v1"}, CPU: ptr.To(resource.MustParse("1000m"))})
	d := getDeployment(t, ns, "ident")
	c := desired.ImageContent(v1alpha1.ContentSourceImage, "example/ident:v1", "")
	want, err := capacitygate.PodTemplateOf(desired.Deployment(site, testServerImage, c, desired.MemoryFor(site, c)).Spec.Template)
	testenv.Must(t, err)
	a, b := capacitygate.Identify(&want, capacityContent(c)), capacitygate.Identify(&d.Spec.Template, capacityContent(c))
	if a.ID != b.ID || a.ContentRevision != "example/ident:v1" || a.ServerImage != "example/ident:v1" {
		t.Errorf("desired %+v, live %+v", a, b)
	}
}

// A canary that never becomes Ready blocks the candidate (CanaryFailed) without touching the serving pods, and is
// measured again once the retry is due.
func TestPerformanceGateCanaryNotReady(t *testing.T) {
	ns := namespace(t)
	_, canary := gatedSite(t, ns, "nocanary")
	advanceClock(t, capacitygate.ProbeReadyTimeout+time.Second)
	testenv.Eventually(t, "touch the canary", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(canary), canary); err != nil {
			return err
		}
		canary.Labels["touched"] = "1"
		return k8s.Update(context.Background(), canary)
	})
	s := waitSite(t, ns, "nocanary", "CanaryFailed", conditionWith(v1alpha1.ConditionRolloutBlocked, metav1.ConditionTrue, v1alpha1.ReasonCanaryFailed, "did not become Ready"))
	testenv.Must(t, condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable))
	testenv.Must(t, condition(s, v1alpha1.ConditionCapacityMeasured, metav1.ConditionTrue, v1alpha1.ReasonCapacityMeasured))
	noMeasurementChildren(t, ns, "nocanary")
	if img := deploymentImage(getDeployment(t, ns, "nocanary")); img != "example/nocanary:v1" {
		t.Fatalf("Deployment runs %s", img)
	}
	waitEvent(t, ns, "nocanary", "Warning CanaryFailed")

	advanceClock(t, capacitygate.MeasurementRetry)
	updateSite(t, s, func(s *v1alpha1.StaticSite) { s.Labels = map[string]string{"touched": "1"} })
	measurementPodOf(t, ns, "nocanary", capacitygate.RoleCanary)
	waitSite(t, ns, "nocanary", "measuring again", conditionWith(v1alpha1.ConditionRolloutBlocked, metav1.ConditionFalse, v1alpha1.ReasonMeasuringCanary, "to become Ready"))

	// The spec goes back to the serving template: the candidate is withdrawn, its canary deleted, nothing blocked.
	updateSite(t, s, func(s *v1alpha1.StaticSite) { s.Spec.Content.Image = "example/nocanary:v1" })
	waitSite(t, ns, "nocanary", "candidate withdrawn", func(s *v1alpha1.StaticSite) error {
		if s.Status.PerformanceGate != nil {
			return fmt.Errorf("status.performanceGate %+v", s.Status.PerformanceGate)
		}
		return condition(s, v1alpha1.ConditionRolloutBlocked, "", "")
	})
	noMeasurementChildren(t, ns, "nocanary")
}

// target ServingPod: no pod of its own; the Benchmark loads a ready serving pod.
func TestCapacityOfAServingPod(t *testing.T) {
	ns := namespace(t)
	createSite(t, ns, "direct", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/direct:v1"},
		Capacity: &v1alpha1.CapacitySpec{Target: v1alpha1.CapacityTargetServingPod}})
	rollOutAndWaitReady(t, ns, "direct")
	d := getDeployment(t, ns, "direct")
	waitSite(t, ns, "direct", "waiting for a serving pod", conditionWith(v1alpha1.ConditionCapacityMeasured, metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity, "ready serving pod"))
	serverPod(t, d, "direct-0", "10.0.0.20")
	b := benchmarkNamed(t, ns, capacitygate.MeasurementName("direct", capacitygate.Identify(&d.Spec.Template, capacityContent(desired.Content{})).ID))
	if b.Spec.Target.Pod != "direct-0" {
		t.Fatalf("Benchmark loads %q, want the serving pod", b.Spec.Target.Pod)
	}
	finishBenchmark(t, b, serverFigures("0.95", 2500, 2600, "2ms"))
	waitSite(t, ns, "direct", "capacity", capacityIs(2500, v1alpha1.CapacitySourceMeasured, v1alpha1.ReasonCapacityMeasured))
	noMeasurementChildren(t, ns, "direct")
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "direct-0"}, &corev1.Pod{}); err != nil {
		t.Errorf("the serving pod: %v", err)
	}
}

// Without the gate a new template rolls out at once: the figure of the old one is kept, marked not current, until
// the new template's measurement replaces it.
func TestStaleCapacityIsKeptUntilReplaced(t *testing.T) {
	ns := namespace(t)
	site := capacitySite(t, ns, "stale", false)
	measure(t, ns, "stale", capacitygate.RoleProbe, serverFigures("0.95", 2000, 2100, "4ms"))
	old := waitSite(t, ns, "stale", "first figure", capacityIs(2000, v1alpha1.CapacitySourceMeasured, v1alpha1.ReasonCapacityMeasured)).Status.Capacity
	noMeasurementChildren(t, ns, "stale")

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Content.Image = "example/stale:v2" })
	waitSite(t, ns, "stale", "stale figure kept", func(s *v1alpha1.StaticSite) error {
		if c := s.Status.Capacity; c == nil || c.Current || c.RPSPerPod != 2000 || c.MeasuredAgainst.ID != old.MeasuredAgainst.ID {
			return fmt.Errorf("status.capacity %+v, want the old figure, not current", c)
		}
		return nil
	})
	rollOutAndWaitReady(t, ns, "stale")
	probe := measurementPodOf(t, ns, "stale", capacitygate.RoleProbe)
	if probe.Labels[v1alpha1.LabelCapacityTemplate] == old.MeasuredAgainst.ID || probe.Spec.Containers[0].Image != "example/stale:v2" {
		t.Fatalf("probe of template %s runs %s", probe.Labels[v1alpha1.LabelCapacityTemplate], probe.Spec.Containers[0].Image)
	}
	measure(t, ns, "stale", capacitygate.RoleProbe, serverFigures("0.95", 2400, 2500, "4ms"))
	waitSite(t, ns, "stale", "new figure", capacityIs(2400, v1alpha1.CapacitySourceMeasured, v1alpha1.ReasonCapacityMeasured))
}
