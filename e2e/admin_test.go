//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// slowlorisSummary mirrors e2e/cmd/slowloris's result line.
type slowlorisSummary struct {
	Conns          int            `json:"conns"`
	DurationMs     int64          `json:"durationMs"`
	Connects       int64          `json:"connects"`
	DialErrors     int64          `json:"dialErrors"`
	ClosedByServer int64          `json:"closedByServer"`
	BytesSent      int64          `json:"bytesSent"`
	PeakOpen       int64          `json:"peakOpen"`
	Probe          slowlorisProbe `json:"probe"`
	Check          slowlorisProbe `json:"check"`
}

type slowlorisProbe struct {
	URL                    string   `json:"url"`
	Requests               int      `json:"requests"`
	Failures               int      `json:"failures"`
	MaxConsecutiveFailures int      `json:"maxConsecutiveFailures"`
	MaxMs                  int64    `json:"maxMs"`
	Errors                 []string `json:"errors"`
}

// Slowloris attack parameters: more connections than the admin listener's table (128), each trickling a byte
// every 500 ms of a request head that never ends, for a minute.
const (
	slowlorisConns    = 200
	slowlorisDuration = 60 * time.Second
)

// testAdminSlowloris: a slowloris attack on a server pod's admin port (the port the kubelet probes) does not make
// the pod unready nor restart it, the StaticSite stays Ready and its Service keeps serving. The attacker reaches
// the admin port only on the pod IP: the site's Service does not publish it.
func testAdminSlowloris(t *testing.T) {
	requireOperator(t)
	ns := newNamespace(t, "slowloris", false)
	ctx := ctxFor(t, 10*time.Minute)

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "content"},
		Data: map[string]string{"index.html": "<!doctype html><title>slowloris</title><p>still serving</p>\n"}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	site := newSite(ns, "target", v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "content"}}}, "250m")
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatalf("create StaticSite: %v", err)
	}
	site = waitSiteReady(t, ns, "target", 3*time.Minute)

	// The Service publishes the http port only.
	svc, err := cs.CoreV1().Services(ns).Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get Service: %v", err)
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == v1alpha1.AdminPortName || p.Port == v1alpha1.AdminPort ||
			p.TargetPort.String() == v1alpha1.AdminPortName || p.TargetPort.IntValue() == v1alpha1.AdminPort {
			t.Errorf("Service %s publishes the admin port: %+v", svc.Name, p)
		}
	}
	if len(svc.Spec.Ports) != 1 {
		t.Errorf("Service %s has %d ports, want only the http port: %+v", svc.Name, len(svc.Spec.Ports), svc.Spec.Ports)
	}

	pods := sitePods(ctx, t, ns, "target")
	if len(pods) != 1 || pods[0].Status.PodIP == "" {
		t.Fatalf("want 1 running server pod with an IP, got %d", len(pods))
	}
	pod := pods[0]
	readyBefore := podCondition(&pod, corev1.PodReady)
	if readyBefore == nil || readyBefore.Status != corev1.ConditionTrue {
		t.Fatalf("server pod %s is not Ready before the attack: %+v", pod.Name, readyBefore)
	}
	restartsBefore := restarts(&pod)
	droppedBefore := adminDropped(ctx, t, &pod)

	admin := net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(v1alpha1.AdminPort)) // [fd00::1]:9090 on IPv6
	c := restrictedContainer("slowloris", slowlorisImage(),
		"-target", admin, "-conns", fmt.Sprint(slowlorisConns), "-duration", slowlorisDuration.String(),
		"-trickle", "500ms",
		// Probe like the readiness probe (its timeout is 2 s), and fetch the site through its Service.
		"-probe", "http://"+admin+"/readyz", "-probe-timeout", "2s",
		"-check", urlFor(site.Status.URL, "/index.html"))
	runJob(t, ns, "slowloris", corev1.PodSpec{Containers: []corev1.Container{c}}, slowlorisDuration+2*time.Minute)

	// Watch the pod and the site every 500 ms until the attacker is done (it stops by itself).
	observations, attackRunning := 0, false
	var problems []string
	note := func(format string, args ...any) {
		if len(problems) < 20 {
			problems = append(problems, time.Now().UTC().Format("15:04:05.000")+" "+fmt.Sprintf(format, args...))
		}
	}
	watchStart := time.Now()
	deadline := time.After(slowlorisDuration + 3*time.Minute)
	for done := false; !done; {
		select {
		case <-deadline:
			t.Fatalf("the slowloris job did not finish within %s", slowlorisDuration+3*time.Minute)
		case <-time.After(500 * time.Millisecond):
		}
		octx, cancel := context.WithTimeout(ctx, 5*time.Second)
		p, podErr := cs.CoreV1().Pods(ns).Get(octx, pod.Name, metav1.GetOptions{})
		var s v1alpha1.StaticSite
		err := k8s.Get(octx, client.ObjectKeyFromObject(site), &s)
		var attacker *corev1.PodList
		if err == nil {
			attacker, err = cs.CoreV1().Pods(ns).List(octx, metav1.ListOptions{LabelSelector: "job-name=slowloris"})
		}
		cancel()
		if err == nil && podErr != nil && !apierrors.IsNotFound(podErr) {
			err = podErr
		}
		if err != nil {
			t.Logf("observation failed (retrying): %v", err)
			continue
		}
		observations++
		switch {
		case podErr != nil:
			note("server pod %s is gone: %v", pod.Name, podErr)
		case podCondition(p, corev1.PodReady) == nil || podCondition(p, corev1.PodReady).Status != corev1.ConditionTrue:
			note("pod %s Ready=%+v", p.Name, podCondition(p, corev1.PodReady))
		case restarts(p) != restartsBefore:
			note("pod %s restarts %d -> %d", p.Name, restartsBefore, restarts(p))
		}
		if ok, why, _ := siteReady(&s); !ok {
			note("StaticSite not Ready: %s", why)
		}
		for _, a := range attacker.Items {
			switch a.Status.Phase {
			case corev1.PodRunning:
				if !attackRunning {
					t.Logf("slowloris running against %s (pod %s) after %s", admin, pod.Name, time.Since(watchStart).Round(100*time.Millisecond))
				}
				attackRunning = true
			case corev1.PodSucceeded, corev1.PodFailed:
				done = true
			}
		}
	}
	t.Logf("%d observations of pod %s and StaticSite target during the attack", observations, pod.Name)
	if !attackRunning {
		t.Errorf("never saw the slowloris pod running")
	}
	for _, p := range problems {
		t.Errorf("during the attack: %s", p)
	}

	ok, log := waitJob(t, ns, "slowloris", time.Minute)
	sum := parseSlowloris(t, log)
	t.Logf("slowloris: %d conns for %.1f s: %d connects, %d closed by the server, %d dial errors, peak %d open, %d bytes trickled",
		sum.Conns, float64(sum.DurationMs)/1000, sum.Connects, sum.ClosedByServer, sum.DialErrors, sum.PeakOpen, sum.BytesSent)
	t.Logf("probe %s: %d requests, %d failed (max %d in a row), slowest %d ms; errors %v",
		sum.Probe.URL, sum.Probe.Requests, sum.Probe.Failures, sum.Probe.MaxConsecutiveFailures, sum.Probe.MaxMs, sum.Probe.Errors)
	t.Logf("check %s: %d requests, %d failed, slowest %d ms; errors %v",
		sum.Check.URL, sum.Check.Requests, sum.Check.Failures, sum.Check.MaxMs, sum.Check.Errors)
	if !ok {
		t.Errorf("slowloris job failed")
	}
	// The attack was real: the connections outnumbered the admin table and the server kept cutting them off.
	if sum.PeakOpen < slowlorisConns*9/10 {
		t.Errorf("only %d slow connections were open at once, want about %d", sum.PeakOpen, slowlorisConns)
	}
	if sum.ClosedByServer == 0 || sum.Connects <= int64(sum.Conns) {
		t.Errorf("the server never closed a slow connection (%d closed, %d connects)", sum.ClosedByServer, sum.Connects)
	}
	// Honest clients got their answers meanwhile: the probe-like GETs never failed the kubelet's threshold (3 in a
	// row), and the Service never failed a request.
	if sum.Probe.Requests < int(slowlorisDuration.Seconds())/2 {
		t.Errorf("only %d probes during the attack", sum.Probe.Requests)
	}
	if sum.Probe.MaxConsecutiveFailures >= 3 {
		t.Errorf("%d probes in a row failed during the attack (the readiness probe's failure threshold is 3)", sum.Probe.MaxConsecutiveFailures)
	}
	if sum.Check.Requests < int(slowlorisDuration.Seconds())/2 || sum.Check.Failures != 0 {
		t.Errorf("the site's Service failed %d of %d requests during the attack", sum.Check.Failures, sum.Check.Requests)
	}

	// After the attack: still the same Ready pod that never left Ready (its Ready condition's last transition is
	// the one from before the attack, so no flip between two observations went unseen), no restart.
	p, err := cs.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("server pod %s after the attack: %v", pod.Name, err)
	}
	readyAfter := podCondition(p, corev1.PodReady)
	if readyAfter == nil || readyAfter.Status != corev1.ConditionTrue || !readyAfter.LastTransitionTime.Equal(&readyBefore.LastTransitionTime) {
		t.Errorf("pod Ready condition changed during the attack: before %+v, after %+v", readyBefore, readyAfter)
	}
	if r := restarts(p); r != restartsBefore {
		t.Errorf("server pod restarted during the attack: %d -> %d", restartsBefore, r)
	}
	if now := sitePods(ctx, t, ns, "target"); len(now) != 1 || now[0].UID != pod.UID {
		t.Errorf("the server pod was replaced during the attack")
	}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(site), site); err != nil {
		t.Fatal(err)
	}
	if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("StaticSite not Ready after the attack: %s", condString(c))
	}
	// The server counted what it cut off (it does not log it).
	droppedAfter := adminDropped(ctx, t, p)
	t.Logf("server admin connections dropped: deadline %d -> %d, overflow %d -> %d",
		droppedBefore["deadline"], droppedAfter["deadline"], droppedBefore["overflow"], droppedAfter["overflow"])
	if droppedAfter["deadline"]+droppedAfter["overflow"] <= droppedBefore["deadline"]+droppedBefore["overflow"] {
		t.Errorf("the server's hyperstatic_admin_connections_dropped_total did not grow")
	}
}

func slowlorisImage() string {
	if v := os.Getenv("E2E_SLOWLORIS_IMAGE"); v != "" {
		return v
	}
	return "hyperstatic/e2e-slowloris:" + cfg.version
}

func parseSlowloris(t *testing.T, log string) slowlorisSummary {
	t.Helper()
	for _, line := range strings.Split(log, "\n") {
		if rest, found := strings.CutPrefix(strings.TrimSpace(line), "SLOWLORIS "); found {
			var s slowlorisSummary
			if err := json.Unmarshal([]byte(rest), &s); err != nil {
				t.Fatalf("slowloris result %q: %v", rest, err)
			}
			return s
		}
	}
	t.Fatalf("slowloris printed no result; log:\n%s", shorten(log, 4000))
	return slowlorisSummary{}
}

// adminDropped reads hyperstatic_admin_connections_dropped_total by reason from a server pod's /metrics (through
// the API server's pod proxy).
func adminDropped(ctx context.Context, t *testing.T, pod *corev1.Pod) map[string]int64 {
	t.Helper()
	raw, err := cs.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, fmt.Sprint(v1alpha1.AdminPort), "/metrics", nil).DoRaw(ctx)
	if err != nil {
		t.Fatalf("scrape %s /metrics: %v", pod.Name, err)
	}
	out := map[string]int64{}
	for _, line := range strings.Split(string(raw), "\n") {
		var reason string
		var n int64
		if _, err := fmt.Sscanf(line, "hyperstatic_admin_connections_dropped_total{reason=%q} %d", &reason, &n); err == nil {
			out[reason] = n
		}
	}
	if _, ok := out["deadline"]; !ok {
		t.Fatalf("%s /metrics has no hyperstatic_admin_connections_dropped_total{reason=\"deadline\"}", pod.Name)
	}
	return out
}
