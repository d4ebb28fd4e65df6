//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// loadScript is the k6 script of the load scenarios: an open-model load (constant arrival rate, so a slow
// response never hides behind a waiting VU) that also counts which version of the site each 200 carried: a body
// with V1_MARKER is v1, one with V2_MARKER v2 (see loadSite). handleSummary prints one line, K6RESULT {...}, that
// the test parses.
var loadScript = countingK6Script(`{
    load: {
      executor: 'constant-arrival-rate',
      rate: Number(__ENV.RATE), timeUnit: '1s', duration: __ENV.DURATION,
      preAllocatedVUs: Number(__ENV.VUS), maxVUs: Number(__ENV.VUS),
    },
  }`)

// countingK6Script is loadScript with scenarios (a JavaScript object literal: k6's options.scenarios) in place of
// its constant arrival rate: the same requests to TARGET, the same counts and the same K6RESULT line.
func countingK6Script(scenarios string) string {
	return `import http from 'k6/http';
import { Counter } from 'k6/metrics';

const v1 = new Counter('body_v1');
const v2 = new Counter('body_v2');

export const options = {
  summaryTrendStats: ['avg', 'p(99)', 'max'],
  scenarios: ` + scenarios + `,
};

export default function () {
  const r = http.get(__ENV.TARGET);
  if (r.status === 200 && r.body) {
    if (r.body.includes(__ENV.V1_MARKER)) v1.add(1);
    if (r.body.includes(__ENV.V2_MARKER)) v2.add(1);
  }
}

function count(m) { return m ? m.values.count : 0; }

export function handleSummary(data) {
  const m = data.metrics;
  const failed = m.http_req_failed ? m.http_req_failed.values.passes : -1;
  const out = {
    requests: count(m.http_reqs), failed: failed, dropped: count(m.dropped_iterations),
    v1: count(m.body_v1), v2: count(m.body_v2),
    p99ms: m.http_req_duration ? m.http_req_duration.values['p(99)'] : 0,
  };
  return { stdout: 'K6RESULT ' + JSON.stringify(out) + '\n' };
}
`
}

type k6Result struct {
	Requests int64   `json:"requests"`
	Failed   int64   `json:"failed"`
	Dropped  int64   `json:"dropped"`
	V1       int64   `json:"v1"`
	V2       int64   `json:"v2"`
	P99ms    float64 `json:"p99ms"`
}

// loadSite is a site the load scenarios (rollout, autoscaling) run on: the synthetic sites built from
// e2e/testdata and images/server/example, or the real one, the Python docs (make e2e-pydocs-images).
type loadSite struct {
	name           string // StaticSite name (and namespace prefix)
	image, v2Image string // content images: the site, and the next version the rollout moves to
	path           string // URL path under load; it differs between image and v2Image
	// v1Marker and v2Marker are text that only the v1 body, respectively only the v2 body, at path contains.
	v1Marker, v2Marker string
	// v2Files are the files v2Image changes, with their new bytes: checked served once the rollout is done.
	v2Files []siteFile
	// memory is spec.memory ("" leaves it to the operator: 256Mi for an image); rolloutCPU and scaleCPU are spec.cpu in
	// the rollout and autoscaling scenarios, which run two server pods at a time next to a 400m k6 pod, on a node with
	// 1 CPU to spare.
	memory, rolloutCPU, scaleCPU string
	// scaleReadyBound, when set, is the most the autoscaling scenario accepts from the scale decision
	// (status.autoscaling.lastScaleTime) to the new pod's Ready condition.
	scaleReadyBound time.Duration
}

// syntheticSite is the tiny site of the original rollout and autoscaling scenarios, named name, with content
// image (the example site for autoscaling, e2e/testdata/rollout-v1 for the rollout, which moves to rollout-v2).
func syntheticSite(name, image string) loadSite {
	return loadSite{name: name, image: image, v2Image: cfg.rolloutV2Image, path: "/",
		v1Marker: "rollout-version-1", v2Marker: "rollout-version-2", memory: "64Mi",
		rolloutCPU: "200m", scaleCPU: "150m"}
}

// newLoadSite returns the StaticSite for s (one replica, content s.image) in namespace ns.
func newLoadSite(ns string, s loadSite, cpu string) *v1alpha1.StaticSite {
	site := newSite(ns, s.name, v1alpha1.ContentSource{Image: s.image}, cpu)
	if s.memory == "" {
		site.Spec.Memory = nil
	} else {
		m := resource.MustParse(s.memory)
		site.Spec.Memory = &m
	}
	return site
}

// startLoad runs k6 (our k6 image) in a Job against s.path of the site at base at rate requests/s for duration,
// counting s's v1 and v2 bodies.
func startLoad(t *testing.T, ns, name, base string, s loadSite, rate int, duration time.Duration) {
	t.Helper()
	runK6(t, ns, name, loadScript, []corev1.EnvVar{
		{Name: "TARGET", Value: urlFor(base, s.path)}, {Name: "RATE", Value: fmt.Sprint(rate)},
		{Name: "DURATION", Value: fmt.Sprintf("%ds", int(duration.Seconds()))},
		{Name: "VUS", Value: "50"},
		{Name: "V1_MARKER", Value: s.v1Marker}, {Name: "V2_MARKER", Value: s.v2Marker},
	}, duration)
}

// runK6 runs script with k6 (our k6 image) in a Job named name, with env, for about duration, and waits for the k6
// container to run, so the caller knows load is on.
func runK6(t *testing.T, ns, name, script string, env []corev1.EnvVar, duration time.Duration) {
	t.Helper()
	runK6With(t, ns, name, map[string]string{"load.js": script}, env, duration)
}

// runK6With is runK6 with more files beside the script (load.js) in /scripts, e.g. a CA for https targets.
func runK6With(t *testing.T, ns, name string, files map[string]string, env []corev1.EnvVar, duration time.Duration) {
	t.Helper()
	runK6Placed(t, ns, name, files, env, duration, nil)
}

// runK6Placed is runK6With with place (when not nil) adjusting the k6 pod's spec: e.g. onControlPlane.
func runK6Placed(t *testing.T, ns, name string, files map[string]string, env []corev1.EnvVar, duration time.Duration, place func(*corev1.PodSpec)) {
	t.Helper()
	startK6(t, ns, name, files, env, duration, place)
	eventually(t, 2*time.Minute, "k6 pod "+name+" running", func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + name})
		if err != nil || len(pods.Items) == 0 {
			return false, fmt.Sprint(err), nil
		}
		p := pods.Items[0]
		if p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
			return false, "", fmt.Errorf("k6 pod ended early: %s", p.Status.Phase)
		}
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase), nil
	})
}

// startK6 creates the k6 Job of runK6Placed and returns without waiting for it (a script of one request may be
// done before its pod is seen running).
func startK6(t *testing.T, ns, name string, files map[string]string, env []corev1.EnvVar, duration time.Duration, place func(*corev1.PodSpec)) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-script"}, Data: files}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	c := restrictedContainer("k6", cfg.k6Image, "run", "--quiet", "--no-usage-report", "/scripts/load.js")
	c.Command = []string{"/k6"}
	c.Env = append(append([]corev1.EnvVar{}, env...), corev1.EnvVar{Name: "HOME", Value: "/tmp"})
	// Guaranteed with a fraction of a CPU: the node's only exclusive CPU is not for the client.
	res := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("400m"), corev1.ResourceMemory: resource.MustParse("256Mi")}
	c.Resources = corev1.ResourceRequirements{Requests: res, Limits: res}
	c.VolumeMounts = []corev1.VolumeMount{{Name: "script", MountPath: "/scripts"}, {Name: "tmp", MountPath: "/tmp"}}
	spec := corev1.PodSpec{
		Containers: []corev1.Container{c},
		Volumes: []corev1.Volume{
			{Name: "script", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
				LocalObjectReference: corev1.LocalObjectReference{Name: cm.Name}}}},
			{Name: "tmp", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
		},
	}
	if place != nil {
		place(&spec)
	}
	runJob(t, ns, name, spec, duration+3*time.Minute)
}

// loadResult waits for the k6 Job and parses its K6RESULT line.
func loadResult(t *testing.T, ns, name string, timeout time.Duration) k6Result {
	t.Helper()
	var r k6Result
	k6Summary(t, ns, name, "K6RESULT ", timeout, &r)
	return r
}

// k6Summary waits for the k6 Job and decodes the JSON after prefix on the line its handleSummary printed into
// into; a Job that failed is an error, one that printed no such line fails the test.
func k6Summary(t *testing.T, ns, name, prefix string, timeout time.Duration, into any) {
	t.Helper()
	ok, log := waitJob(t, ns, name, timeout)
	for _, line := range strings.Split(log, "\n") {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), prefix); found {
			if err := json.Unmarshal([]byte(rest), into); err != nil {
				t.Fatalf("k6 result %q: %v", rest, err)
			}
			if !ok {
				t.Errorf("k6 job %s failed (result %s)", name, rest)
			}
			return
		}
	}
	t.Fatalf("k6 job %s (succeeded=%v) printed no %sline; log:\n%s", name, ok, prefix, shorten(log, 4000))
}

// testRolloutUnderLoad: while k6 loads the site, its content image changes; the rolling update (surge one, never
// below the ready count, drain on SIGTERM) must not fail a single request, and both versions must have been served.
func testRolloutUnderLoad(t *testing.T) {
	rolloutUnderLoad(t, syntheticSite("rollout", cfg.rolloutV1Image))
}

// rolloutUnderLoad is testRolloutUnderLoad on site s; afterwards every file s.v2Files lists is served with its
// new bytes.
func rolloutUnderLoad(t *testing.T, s loadSite) {
	t.Helper()
	requireOperator(t)
	ns := newNamespace(t, s.name, false)
	ctx := ctxFor(t, 10*time.Minute)
	site := newLoadSite(ns, s, s.rolloutCPU)
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	site = waitSiteReady(t, ns, s.name, 3*time.Minute)

	startLoad(t, ns, "load", site.Status.URL, s, 200, 70*time.Second)
	time.Sleep(10 * time.Second) // let the load settle on the v1 pod first
	patch := fmt.Sprintf(`{"spec":{"content":{"image":%q}}}`, s.v2Image)
	if err := k8s.Patch(ctx, site, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	rolloutStart := time.Now()
	waitSiteReady(t, ns, s.name, 3*time.Minute)
	eventually(t, 2*time.Minute, "only v2 pods left", func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelSite + "=" + s.name})
		if err != nil {
			return false, err.Error(), nil
		}
		var images []string
		for _, p := range pods.Items {
			images = append(images, p.Spec.Containers[0].Image)
		}
		return len(images) == 1 && images[0] == s.v2Image, strings.Join(images, ","), nil
	})
	t.Logf("rollout under load took %s", time.Since(rolloutStart).Round(time.Second))

	r := loadResult(t, ns, "load", 3*time.Minute)
	t.Logf("MEASURED %s rollout under load: k6: %d requests, %d failed, %d dropped, %d served v1, %d served v2, p99 %.1f ms",
		s.name, r.Requests, r.Failed, r.Dropped, r.V1, r.V2, r.P99ms)
	if r.Requests == 0 || r.Failed != 0 {
		t.Errorf("want zero failed requests out of many, got %d failed of %d", r.Failed, r.Requests)
	}
	if r.V1 == 0 || r.V2 == 0 {
		t.Errorf("the load did not span the rollout: %d v1 and %d v2 responses", r.V1, r.V2)
	}
	if len(s.v2Files) > 0 {
		checkBytes(t, ns, "fetch-v2", site.Status.URL, s.v2Files)
		checkBrotli(t, ns, "fetch-v2-br", site.Status.URL, s.v2Files)
	}
}

// testAutoscaling: under k6 load above the per-pod target, the operator's RPS autoscaler takes the site from 1 to
// 2 replicas (ready), and back to 1 once the load stops (short scale-down stabilization for the test). Scaled
// pods get a fraction of a CPU: the node has at most one exclusive CPU.
func testAutoscaling(t *testing.T) { autoscaleUnderLoad(t, syntheticSite("scale", cfg.siteImage)) }

// autoscaleUnderLoad is testAutoscaling on site s. It also measures the time from the scale decision (the
// autoscaler's status.autoscaling.lastScaleTime) to the new pod's Ready condition, both whole seconds on the
// cluster's clock, and fails when it exceeds s.scaleReadyBound (if set).
func autoscaleUnderLoad(t *testing.T, s loadSite) {
	t.Helper()
	requireOperator(t)
	ns := newNamespace(t, s.name, false)
	ctx := ctxFor(t, 10*time.Minute)
	site := newLoadSite(ns, s, s.scaleCPU)
	site.Spec.Autoscaling = &v1alpha1.AutoscalingSpec{
		MinReplicas:     ptr.To[int32](1),
		MaxReplicas:     2,
		TargetRPSPerPod: ptr.To[int64](50),
		Behavior:        fastScaleBehavior(),
	}
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	site = waitSiteReady(t, ns, s.name, 3*time.Minute)
	before := map[types.UID]bool{}
	for _, p := range sitePods(ctx, t, ns, s.name) {
		before[p.UID] = true
	}

	startLoad(t, ns, "load", site.Status.URL, s, 300, 150*time.Second)
	loadOn := time.Now()
	eventually(t, 2*time.Minute, "scaled up to 2 ready replicas", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(site), site); err != nil {
			return false, err.Error(), nil
		}
		return ptr.Deref(site.Spec.Replicas, 0) >= 2 && site.Status.ReadyReplicas >= 2, scaleState(site), nil
	})
	t.Logf("load step to 2 ready replicas: %s (%s)", time.Since(loadOn).Round(time.Second), scaleState(site))
	measureScaleOut(ctx, t, s, site, before)

	t.Logf("load stop to 1 replica: %s", stopLoadUntilOneReplica(ctx, t, site))
}

// fastScaleBehavior is the load scenarios' autoscaling behavior: scale up at once, down after 10 s of agreement
// (the default 300 s would outlast the test).
func fastScaleBehavior() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)},
		ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](10)},
	}
}

// stopLoadUntilOneReplica stops the load (deletes the k6 Job "load" and its pod), waits until the autoscaler took
// site back to one replica, and returns how long that took.
func stopLoadUntilOneReplica(ctx context.Context, t *testing.T, site *v1alpha1.StaticSite) time.Duration {
	t.Helper()
	if err := cs.BatchV1().Jobs(site.Namespace).Delete(ctx, "load", metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationForeground)}); err != nil {
		t.Fatal(err)
	}
	loadOff := time.Now()
	eventually(t, 3*time.Minute, "scaled back down to 1 replica", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(site), site); err != nil {
			return false, err.Error(), nil
		}
		return ptr.Deref(site.Spec.Replicas, 0) == 1 && site.Status.Replicas == 1, scaleState(site), nil
	})
	return time.Since(loadOff).Round(time.Second)
}

// measureScaleOut logs (and bounds, when s.scaleReadyBound is set) the time from the scale-up decision to the new
// pod's Ready condition. Both are whole seconds from the cluster (the autoscaler truncates lastScaleTime, the
// kubelet the condition's lastTransitionTime), so the figure is good to about a second either way.
func measureScaleOut(ctx context.Context, t *testing.T, s loadSite, site *v1alpha1.StaticSite, before map[types.UID]bool) {
	t.Helper()
	a := site.Status.Autoscaling
	if a == nil || a.LastScaleTime == nil {
		t.Fatalf("scaled to 2 replicas but status.autoscaling has no lastScaleTime (%s)", scaleState(site))
	}
	var fresh []corev1.Pod
	for _, p := range sitePods(ctx, t, site.Namespace, site.Name) {
		if !before[p.UID] {
			fresh = append(fresh, p)
		}
	}
	if len(fresh) != 1 {
		t.Fatalf("%d new server pods after the scale-up, want 1", len(fresh))
	}
	p := fresh[0]
	ready := podCondition(&p, corev1.PodReady)
	if ready == nil || ready.Status != corev1.ConditionTrue {
		t.Fatalf("new pod %s is not Ready: %+v", p.Name, ready)
	}
	decisionToReady := ready.LastTransitionTime.Sub(a.LastScaleTime.Time)
	startToReady, _ := containerStartToReady(&p)
	t.Logf("MEASURED %s scale decision -> new pod Ready: %s (lastScaleTime %s, pod %s Ready %s; its container start -> Ready %s)",
		s.name, decisionToReady, a.LastScaleTime.UTC().Format(time.TimeOnly), p.Name,
		ready.LastTransitionTime.UTC().Format(time.TimeOnly), startToReady)
	if s.scaleReadyBound > 0 && decisionToReady > s.scaleReadyBound {
		t.Errorf("new pod Ready %s after the scale decision, want at most %s", decisionToReady, s.scaleReadyBound)
	}
}

// containerStartToReady is the time from the server container's start (state.running.startedAt) to the pod's Ready
// condition (lastTransitionTime), both whole seconds as the kubelet reports them; ok is false when either is missing.
func containerStartToReady(p *corev1.Pod) (d time.Duration, ok bool) {
	ready := podCondition(p, corev1.PodReady)
	if ready == nil || ready.Status != corev1.ConditionTrue || len(p.Status.ContainerStatuses) == 0 {
		return 0, false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.Name == p.Spec.Containers[0].Name && c.State.Running != nil {
			return ready.LastTransitionTime.Sub(c.State.Running.StartedAt.Time), true
		}
	}
	return 0, false
}

func scaleState(s *v1alpha1.StaticSite) string {
	a := s.Status.Autoscaling
	if a == nil {
		return fmt.Sprintf("spec.replicas=%d ready=%d, no autoscaling status", ptr.Deref(s.Spec.Replicas, 0), s.Status.ReadyReplicas)
	}
	return fmt.Sprintf("spec.replicas=%d ready=%d currentRPS=%d avg=%d desired=%d measuredPods=%d",
		ptr.Deref(s.Spec.Replicas, 0), s.Status.ReadyReplicas, a.CurrentRPS, a.CurrentAverageRPS, a.DesiredReplicas, a.MeasuredPods)
}
