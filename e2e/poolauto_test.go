//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Automatic placement (step "auto-placement" of scenario 20, issue 40), on the scenario's pool: it is up and
// serves 200 sites already, so the step costs the CI only its own minute and a half, not a pool of its own.
//
// A ConfigMap site with spec.placement mode Auto starts in the pool (no pod of its own). k6 ramps its traffic
// through its Service (its DNS name, from a pod) above promoteAbove: the site is Promoted, its own pod gets Ready,
// and it moves there (MovedToDedicated) while the load goes on; the ramp ends, the site stays below demoteBelow
// for demoteAfter, is Demoted and moves back to the pool (MovedToPool, the pool already holds its tree), and its
// own pod is removed. k6 counts zero failed requests, every 200 the site's page. Then the first request to the
// site since the ramp, through its Service, is answered by the pool with the page: MEASURED, goal 50 ms (Knative's
// best cold start is 800 ms, past which the step fails: a pool that slow would have a cold start).
//
// Every timer is a spec field set short (promoteAbove 10 req/s, demoteBelow 2, demoteAfter 10 s, cooldown 10 s),
// and every wait is bounded by the ramp's own timeline, so the step takes about 100 s.
const (
	autoPromoteAbove = 10 // req/s
	autoDemoteBelow  = 2  // req/s
	autoDemoteAfter  = 10 * time.Second
	autoCooldown     = 10 * time.Second
	// The ramp: up to autoRate in autoRampUp, held for autoRampHold, down to 0 in autoRampDown.
	autoRate     = 40
	autoRampUp   = 10 * time.Second
	autoRampHold = 60 * time.Second
	autoRampDown = 5 * time.Second
	// autoFirstRequestGoal is issue 40's goal for the first request after a demotion; autoFirstRequestLimit fails.
	autoFirstRequestGoal  = 50 * time.Millisecond
	autoFirstRequestLimit = 800 * time.Millisecond
)

// autoRampScenarios is the k6 ramp (options.scenarios of countingK6Script): an open model, so a slow answer
// during a move shows as a dropped or failed request rather than hiding behind a waiting VU.
const autoRampScenarios = `{
    ramp: {
      executor: 'ramping-arrival-rate', startRate: 1, timeUnit: '1s',
      preAllocatedVUs: 20, maxVUs: 60,
      stages: [
        { target: Number(__ENV.RATE), duration: __ENV.UP },
        { target: Number(__ENV.RATE), duration: __ENV.HOLD },
        { target: 0, duration: __ENV.DOWN },
      ],
    },
  }`

// firstRequestScript makes one request to TARGET and prints K6FIRST {status, exact, ms}: its status, whether the
// body is WANT, and the time from connecting to its last byte (k6's connecting + duration: the name's lookup
// is the cluster's DNS, not the site's).
const firstRequestScript = `import http from 'k6/http';
import { Counter, Trend } from 'k6/metrics';

const exact = new Counter('first_exact');
const status = new Trend('first_status');
const ms = new Trend('first_ms', true);

export const options = { vus: 1, iterations: 1, summaryTrendStats: ['max'] };

export default function () {
  const r = http.get(__ENV.TARGET);
  status.add(r.status);
  ms.add(r.timings.connecting + r.timings.duration);
  if (r.status === 200 && r.body === __ENV.WANT) exact.add(1);
}

export function handleSummary(data) {
  const m = data.metrics;
  const max = (x) => (x ? x.values.max : -1);
  const out = { status: max(m.first_status), exact: m.first_exact ? m.first_exact.values.count : 0, ms: max(m.first_ms) };
  return { stdout: 'K6FIRST ' + JSON.stringify(out) + '\n' };
}
`

func testPoolAutoPlacement(t *testing.T, pool *v1alpha1.StaticSitePool, ns string) {
	t.Helper()
	ctx := ctxFor(t, 6*time.Minute)
	const name = "auto"
	page := "auto placement page " + ns // no newline: it travels in an environment variable too
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Data: map[string]string{"index.html": page}}
	if err := k8s.Create(ctx, cm); err != nil {
		t.Fatal(err)
	}
	site := newSite(ns, name, v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: name}}}, "100m")
	site.Spec.Placement = &v1alpha1.PlacementSpec{
		Mode: v1alpha1.PlacementAuto, Pool: pool.Name,
		PromoteAbove: ptr.To[int64](autoPromoteAbove), DemoteBelow: ptr.To[int64](autoDemoteBelow),
		DemoteAfter: &metav1.Duration{Duration: autoDemoteAfter}, Cooldown: &metav1.Duration{Duration: autoCooldown},
	}
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatalf("create the Auto site: %v", err)
	}
	waitAutoPlacement(t, ns, name, 2*time.Minute, "in the pool, served by every pool pod", func(s *v1alpha1.StaticSite) bool {
		p := s.Status.Placement
		return p != nil && p.Mode == v1alpha1.PlacementPool && p.ReadyPods > 0 && p.ServedBy == p.ReadyPods
	})
	if pods := sitePods(ctx, t, ns, name); len(pods) != 0 {
		t.Fatalf("an Auto site in the pool has pods of its own: %d", len(pods))
	}
	// The ramp, through the site's Service. Each wait below is bounded by the part of the ramp it belongs to.
	target := fmt.Sprintf("http://%s.%s.svc.cluster.local/", name, ns)
	ramp := autoRampUp + autoRampHold + autoRampDown
	runK6(t, ns, "auto-ramp", countingK6Script(autoRampScenarios), []corev1.EnvVar{
		{Name: "TARGET", Value: target}, {Name: "RATE", Value: fmt.Sprint(autoRate)},
		{Name: "UP", Value: k6Duration(autoRampUp)}, {Name: "HOLD", Value: k6Duration(autoRampHold)},
		{Name: "DOWN", Value: k6Duration(autoRampDown)},
		{Name: "V1_MARKER", Value: page}, {Name: "V2_MARKER", Value: "no such body"},
	}, ramp)
	started := time.Now()
	holdEnds := started.Add(autoRampUp + autoRampHold)

	promoted := waitSiteEvent(t, ns, name, v1alpha1.PlacementReasonPromoted, started, time.Until(holdEnds))
	t.Logf("MEASURED pool auto: ramp start -> Promoted: %.1f s (%s)", promoted.FirstTimestamp.Sub(started).Seconds(), promoted.Message)
	moved := waitSiteEvent(t, ns, name, eventReasonMovedToDedicated, started, time.Until(holdEnds))
	s := getSite(t, ns, name)
	if p := s.Status.Placement; p == nil || p.Mode != v1alpha1.PlacementDedicated || p.Reason != v1alpha1.PlacementReasonPromoted {
		t.Fatalf("after MovedToDedicated, status.placement %+v, want Dedicated, Promoted", s.Status.Placement)
	}
	if moved.FirstTimestamp.Before(&promoted.FirstTimestamp) {
		t.Errorf("MovedToDedicated (%s) before Promoted (%s)", moved.FirstTimestamp, promoted.FirstTimestamp)
	}
	readyAt := ownPodReadyAt(ctx, t, ns, name)
	// Event times have whole seconds: the pod's Ready, truncated, must not come after the move.
	if readyAt.IsZero() || readyAt.Truncate(time.Second).After(moved.FirstTimestamp.Time) {
		t.Errorf("moved to its own pods at %s, its own pod Ready at %s", moved.FirstTimestamp, readyAt)
	}
	t.Logf("MEASURED pool auto: Promoted -> own pod Ready %.1f s -> MovedToDedicated %.1f s, with %.0f s of the ramp's hold left",
		readyAt.Sub(promoted.FirstTimestamp.Time).Seconds(), moved.FirstTimestamp.Sub(promoted.FirstTimestamp.Time).Seconds(),
		time.Until(holdEnds).Seconds())

	r := loadResult(t, ns, "auto-ramp", ramp+2*time.Minute)
	rampEnded := time.Now()
	t.Logf("MEASURED pool auto: k6 ramp to %d req/s through the Service across the promotion: %d requests, %d failed, %d dropped, p99 %.1f ms",
		autoRate, r.Requests, r.Failed, r.Dropped, r.P99ms)
	if r.Requests == 0 || r.Failed != 0 || r.V1 != r.Requests {
		t.Errorf("k6 across the promotion: %+v; want no failed request and every answer the site's page", r)
	}

	// Quiet: below demoteBelow for demoteAfter, then back to the pool and its own pod removed.
	demoted := waitSiteEvent(t, ns, name, v1alpha1.PlacementReasonDemoted, started, autoDemoteAfter+90*time.Second)
	// The site's creation recorded MovedToPool too: this one is at or after the demotion.
	waitSiteEvent(t, ns, name, eventReasonMovedToPool, demoted.FirstTimestamp.Time, time.Minute)
	waitAutoPlacement(t, ns, name, time.Minute, "back in the pool, Demoted, served by every pool pod", func(s *v1alpha1.StaticSite) bool {
		p := s.Status.Placement
		c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionPlaced)
		return p != nil && p.Mode == v1alpha1.PlacementPool && p.Reason == v1alpha1.PlacementReasonDemoted &&
			p.ReadyPods > 0 && p.ServedBy == p.ReadyPods && c != nil && c.Status == metav1.ConditionTrue
	})
	eventually(t, time.Minute, "the Auto site's own pods removed", func(ctx context.Context) (bool, string, error) {
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: v1alpha1.LabelSite + "=" + name})
		if err != nil {
			return false, err.Error(), nil
		}
		return len(pods.Items) == 0, fmt.Sprintf("%d pods", len(pods.Items)), nil
	})
	t.Logf("MEASURED pool auto: ramp end -> Demoted %.1f s (demoteAfter %s; %s) -> own pods removed %.1f s",
		demoted.FirstTimestamp.Sub(rampEnded).Seconds(), autoDemoteAfter, demoted.Message, time.Since(demoted.FirstTimestamp.Time).Seconds())

	// The first request since the ramp, through the Service: the pool answers it.
	startK6(t, ns, "auto-first", map[string]string{"load.js": firstRequestScript},
		[]corev1.EnvVar{{Name: "TARGET", Value: target}, {Name: "WANT", Value: page}}, 10*time.Second, nil)
	first := firstRequestResult(t, ns, "auto-first")
	latency := time.Duration(first.MS * float64(time.Millisecond))
	t.Logf("MEASURED pool auto: first request after the demotion, through the Service: HTTP %d in %.1f ms (goal %s: %s)",
		int(first.Status), first.MS, autoFirstRequestGoal, goalWord(first.Status == 200 && first.Exact == 1 && latency <= autoFirstRequestGoal))
	if first.Status != 200 || first.Exact != 1 {
		t.Errorf("first request after the demotion: %+v, want 200 with the site's page", first)
		explainFirstRequest(t, ns, name, "auto-first")
	}
	if latency > autoFirstRequestLimit {
		t.Errorf("first request after the demotion took %s, over %s: a cold start", latency, autoFirstRequestLimit)
	}
}

// Event reasons of the site controller's placement events (controllers/staticsite/events.go).
const (
	eventReasonMovedToPool      = "MovedToPool"
	eventReasonMovedToDedicated = "MovedToDedicated"
)

// k6Duration is d as k6 writes a duration.
func k6Duration(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }

func goalWord(met bool) string {
	if met {
		return "met"
	}
	return "missed"
}

// waitAutoPlacement waits until the site's status for its current generation passes ok.
func waitAutoPlacement(t *testing.T, ns, name string, timeout time.Duration, what string, ok func(*v1alpha1.StaticSite) bool) {
	t.Helper()
	eventually(t, timeout, ns+"/"+name+" "+what, func(ctx context.Context) (bool, string, error) {
		s := &v1alpha1.StaticSite{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return false, err.Error(), nil
		}
		done := s.Status.ObservedGeneration == s.Generation && ok(s)
		return done, fmt.Sprintf("placement %+v, Placed %s", s.Status.Placement,
			condString(meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionPlaced))), nil
	})
}

// siteEvents are the site's events by reason (the recorder folds repeats of one reason and message into one event
// with a count).
func siteEvents(ctx context.Context, t *testing.T, ns, name string) map[string]corev1.Event {
	t.Helper()
	evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		t.Fatalf("list events: %v", err)
	}
	out := map[string]corev1.Event{}
	for _, e := range evs.Items {
		if e.InvolvedObject.Kind != "StaticSite" {
			continue
		}
		if was, ok := out[e.Reason]; !ok || e.LastTimestamp.After(was.LastTimestamp.Time) {
			out[e.Reason] = e
		}
	}
	return out
}

// waitSiteEvent waits until the site has an event of reason last recorded at or after since (event times are whole
// seconds: since is truncated alike), and returns it.
func waitSiteEvent(t *testing.T, ns, name, reason string, since time.Time, timeout time.Duration) corev1.Event {
	t.Helper()
	since = since.Truncate(time.Second)
	var got corev1.Event
	eventually(t, max(timeout, time.Second), "event "+reason+" of "+ns+"/"+name, func(ctx context.Context) (bool, string, error) {
		evs := siteEvents(ctx, t, ns, name)
		var seen []string
		for r, e := range evs {
			seen = append(seen, fmt.Sprintf("%s×%d", r, e.Count))
		}
		e, ok := evs[reason]
		got = e
		return ok && !e.LastTimestamp.Time.Before(since), "events: " + strings.Join(seen, ", "), nil
	})
	return got
}

// ownPodReadyAt is when the site's own running pod became Ready (zero if none is).
func ownPodReadyAt(ctx context.Context, t *testing.T, ns, name string) time.Time {
	t.Helper()
	for _, p := range sitePods(ctx, t, ns, name) {
		if c := podCondition(&p, corev1.PodReady); c != nil && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// firstRequest is firstRequestScript's K6FIRST line.
type firstRequest struct {
	Status float64 `json:"status"`
	Exact  int     `json:"exact"`
	MS     float64 `json:"ms"`
}

func firstRequestResult(t *testing.T, ns, name string) firstRequest {
	t.Helper()
	var r firstRequest
	k6Summary(t, ns, name, "K6FIRST ", 3*time.Minute, &r)
	return r
}

// explainFirstRequest logs what the cluster routed a failed first request by: k6's own warnings (its error for a
// request that got no answer), the site's Service (selector, ports) and every EndpointSlice of it with each
// endpoint's address and readiness. The request failed intermittently in CI with no answer at all (HTTP 0 in 0 ms,
// 2026-12-03 and before); this is what the next occurrence needs to say why.
func explainFirstRequest(t *testing.T, ns, site, job string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	if pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job}); err == nil {
		for _, p := range pods.Items {
			raw, err := cs.CoreV1().Pods(ns).GetLogs(p.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
			if err != nil {
				t.Logf("k6 pod %s: logs: %v", p.Name, err)
				continue
			}
			for _, line := range strings.Split(string(raw), "\n") {
				if strings.Contains(line, "level=warn") || strings.Contains(line, "level=error") {
					t.Logf("k6 pod %s: %s", p.Name, line)
				}
			}
		}
	}
	if svc, err := cs.CoreV1().Services(ns).Get(ctx, site, metav1.GetOptions{}); err != nil {
		t.Logf("Service %s: %v", site, err)
	} else {
		t.Logf("Service %s: clusterIP %s, selector %v, ports %+v", site, svc.Spec.ClusterIP, svc.Spec.Selector, svc.Spec.Ports)
	}
	slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + site})
	if err != nil {
		t.Logf("EndpointSlices of %s: %v", site, err)
		return
	}
	for _, es := range slices.Items {
		var eps []string
		for _, e := range es.Endpoints {
			eps = append(eps, fmt.Sprintf("%v ready=%v serving=%v terminating=%v", e.Addresses,
				ptr.Deref(e.Conditions.Ready, false), ptr.Deref(e.Conditions.Serving, false), ptr.Deref(e.Conditions.Terminating, false)))
		}
		var ports []string
		for _, p := range es.Ports {
			ports = append(ports, fmt.Sprintf("%s:%d", ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0)))
		}
		t.Logf("EndpointSlice %s (managed by %q, created %s): ports %v, endpoints %v", es.Name,
			es.Labels[discoveryv1.LabelManagedBy], es.CreationTimestamp.UTC().Format(time.RFC3339), ports, eps)
	}
}
