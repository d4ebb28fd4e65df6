//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// The pool's autoscaler in kind (step "autoscaling" of scenario 20, issue 40: "the autoscaler scales the pool on
// its aggregate traffic"), on the scenario's pool after its other steps: spec.replicas 1 and autoscaling up to 2
// pods at poolScaleTarget req/s each. k6 sends poolScaleHigh req/s to one pool site through its Service, more than
// one pod's target: the pool goes to 2 pods, the second one Ready only once it holds every site's tree (its puller
// gates readiness), and the site is served by both, with zero failed requests and every answer the site's page.
// The load ends: back to 1 pod after scaleDownDelaySeconds, and the time from the removed pod's termination to the
// site's EndpointSlice dropping it is measured (not asserted: below, and docs/design/pools.md).
// MEASURED: load start -> 2 pods serving the site; load end -> 1 pod; the slice's lag.
//
// Opt-in (E2E_POOL_AUTOSCALING=1): in the one local CI run with it on (2026-12-04), scenario 13a, which ran beside
// it, failed its capacity measurement ("no server sample fell inside the run": the operator's sample passes came
// more than 1.5 s late). Each pool pod the step adds or removes fans out to every one of the pool's 200 sites'
// passes in the operator: a likely cause, not shown. It runs by default once the scale-down drains first and the
// suite keeps load-measuring scenarios apart from it.
//
// The requests at the step's peak (2 pool pods, the fetcher, the Git server, k6) stay within the scenario's
// declared peak (the auto-placement step's, suite_test.go).
const (
	poolScaleTarget = 10                // req/s per pod
	poolScaleHigh   = 30                // req/s: needs 3 pods at the target, 2 at most
	poolScaleDelay  = 10                // scaleDownDelaySeconds
	poolScaleHold   = 150 * time.Second // at poolScaleHigh: the reading, the new pod, its trees, Ready, the site's pass
	poolScaleDown   = 90 * time.Second  // after the load: the window, the reading, the pod's removal
)

// poolScaleScenarios is one k6 run at RATE req/s (options.scenarios of countingK6Script): an open model, so a
// request a move loses shows as failed or dropped, not as a VU that waited.
const poolScaleScenarios = `{
    load: {
      executor: 'ramping-arrival-rate', startRate: 1, timeUnit: '1s',
      preAllocatedVUs: 20, maxVUs: 60,
      stages: [
        { target: Number(__ENV.RATE), duration: '3s' },
        { target: Number(__ENV.RATE), duration: __ENV.HOLD },
      ],
    },
  }`

func testPoolAutoscaling(t *testing.T, poolName string, sites []poolSite) {
	t.Helper()
	ctx := ctxFor(t, 8*time.Minute)
	pool := &v1alpha1.StaticSitePool{}
	if err := k8s.Get(ctx, client.ObjectKey{Name: poolName}, pool); err != nil {
		t.Fatal(err)
	}
	orig := pool.DeepCopy()
	pool.Spec.Replicas = ptr.To[int32](1)
	pool.Spec.Autoscaling = &v1alpha1.PoolAutoscalingSpec{MaxReplicas: 2, TargetRPSPerPod: poolScaleTarget,
		ScaleDownDelaySeconds: ptr.To[int32](poolScaleDelay)}
	if err := k8s.Patch(ctx, pool, client.MergeFrom(orig)); err != nil {
		t.Fatalf("patch the pool's autoscaling: %v", err)
	}
	waitPoolScaled(t, poolName, 1, 2*time.Minute)
	waitPoolSitesServed(t, sites, 1, 2*time.Minute)

	var site poolSite // the first ConfigMap site
	for _, s := range sites {
		if s.gitRepo == "" {
			site = s
			break
		}
	}
	index := site.files[0]
	marker := strings.SplitN(string(index.data), "\n", 2)[0] // "ns name /index.html": this site's page only
	runK6(t, site.ns, "pool-scale", countingK6Script(poolScaleScenarios), []corev1.EnvVar{
		{Name: "TARGET", Value: fmt.Sprintf("http://%s.%s.svc.cluster.local%s", site.name, site.ns, index.path)},
		{Name: "RATE", Value: fmt.Sprint(poolScaleHigh)}, {Name: "HOLD", Value: k6Duration(poolScaleHold)},
		{Name: "V1_MARKER", Value: marker}, {Name: "V2_MARKER", Value: "no such body"},
	}, poolScaleHold+3*time.Second)
	started := time.Now()
	waitPoolScaled(t, poolName, 2, poolScaleHold)
	// The loaded site's status: both pods serve it (every site's status follows at the fan-out's pace, which a
	// loaded CI machine makes slow; it is not what this step measures).
	waitPoolSitesServed(t, []poolSite{site}, 2, max(time.Until(started.Add(poolScaleHold)), 10*time.Second))
	t.Logf("MEASURED pool autoscaling: %d req/s on one site (target %d per pod) -> 2 ready pool pods, the site served by both: %.1f s after the load began (%s)",
		poolScaleHigh, poolScaleTarget, time.Since(started).Seconds(), autoscalingString(t, poolName))
	r := loadResult(t, site.ns, "pool-scale", poolScaleHold+2*time.Minute)
	t.Logf("MEASURED pool autoscaling: k6 across the scale-up: %d requests, %d failed, %d dropped, p99 %.1f ms", r.Requests, r.Failed, r.Dropped, r.P99ms)
	if r.Requests == 0 || r.Failed != 0 || r.V1 != r.Requests {
		t.Errorf("k6 across the pool's scale-up: %+v; want no failed request and every answer the site's page", r)
	}

	// The scale-down runs without load: a pool pod's termination does not wait for its sites' EndpointSlices to
	// drop it (each site's slice is rewritten by that site's own pass, a fan-out over every site of the pool), so
	// a client of a site whose slice is rewritten after the pod stopped loses requests (measured: 3 of 593 at
	// 5 req/s; docs/design/pools.md, "Scaling a pool"). The step measures that gap instead of asserting it away.
	ended := time.Now()
	gone := watchSliceDrop(t, site.ns, site.name+"-pool", poolName) // poolplacement.EndpointSliceName
	waitPoolScaled(t, poolName, 1, poolScaleDown)
	t.Logf("MEASURED pool autoscaling: load ended -> 1 ready pool pod: %.1f s (scaleDownDelaySeconds %d; %s); %s",
		time.Since(ended).Seconds(), poolScaleDelay, autoscalingString(t, poolName), gone(2*time.Minute))
}

// watchSliceDrop watches the pool's pods and the site's EndpointSlice (every 200 ms); the returned func waits up to
// wait for the slice to drop the first pool pod seen terminating and says when each happened: the order that
// decides whether a terminating pool pod still gets the site's requests after its drain delay.
func watchSliceDrop(t *testing.T, ns, slice, pool string) func(wait time.Duration) string {
	t.Helper()
	ctx, cancel := context.WithCancel(ctxFor(t, 5*time.Minute))
	type seen struct {
		pod, ip           string
		terminating, gone time.Time
	}
	var mu sync.Mutex
	var victim *seen
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			time.Sleep(200 * time.Millisecond)
			var pods corev1.PodList
			var es discoveryv1.EndpointSlice
			if k8s.List(ctx, &pods, client.MatchingLabelsSelector{Selector: labels.SelectorFromSet(poolplacement.PodSelector(pool))}) != nil ||
				k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: slice}, &es) != nil {
				continue
			}
			now := time.Now()
			mu.Lock()
			if victim == nil {
				for _, p := range pods.Items {
					if p.DeletionTimestamp != nil && p.Status.PodIP != "" {
						victim = &seen{pod: p.Name, ip: p.Status.PodIP, terminating: now}
					}
				}
			}
			if v := victim; v != nil && v.gone.IsZero() && !sliceLists(&es, v.ip) {
				v.gone = now
			}
			mu.Unlock()
		}
	}()
	return func(wait time.Duration) string {
		for deadline := time.Now().Add(wait); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			mu.Lock()
			dropped := victim != nil && !victim.gone.IsZero()
			mu.Unlock()
			if dropped {
				break
			}
		}
		cancel()
		<-done
		mu.Lock()
		defer mu.Unlock()
		switch {
		case victim == nil:
			return "no terminating pool pod seen"
		case victim.gone.IsZero():
			return fmt.Sprintf("pod %s terminating, still in %s's EndpointSlice when the watch ended", victim.pod, slice)
		}
		return fmt.Sprintf("pod %s seen terminating, then out of the loaded site's EndpointSlice %.1f s later (the pool pods' drain delay: 5 s)",
			victim.pod, victim.gone.Sub(victim.terminating).Seconds())
	}
}

// sliceLists says whether the EndpointSlice lists ip.
func sliceLists(es *discoveryv1.EndpointSlice, ip string) bool {
	for _, e := range es.Endpoints {
		if slices.Contains(e.Addresses, ip) {
			return true
		}
	}
	return false
}

// waitPoolScaled waits until the autoscaler decided want pods and exactly that many pool pods are ready and
// running (a scaled-down pod gone, not only unready).
func waitPoolScaled(t *testing.T, name string, want int32, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("pool %s at %d ready pods", name, want), func(ctx context.Context) (bool, string, error) {
		pool := &v1alpha1.StaticSitePool{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
			return false, err.Error(), nil
		}
		a := pool.Status.Autoscaling
		if a == nil {
			return false, "no status.autoscaling", nil
		}
		var list corev1.PodList
		sel := labels.SelectorFromSet(poolplacement.PodSelector(name))
		if err := k8s.List(ctx, &list, client.InNamespace(pool.Spec.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
			return false, err.Error(), nil
		}
		pods := len(list.Items) // terminating ones too: a scaled-down pod counts until it is gone
		ok := a.DesiredReplicas == want && pool.Status.ReadyReplicas == want && pods == int(want)
		return ok, fmt.Sprintf("desired %d, ready %d, %d pods: %s", a.DesiredReplicas, pool.Status.ReadyReplicas, pods, a.Message), nil
	})
}

// autoscalingString is the pool's status.autoscaling, for a log line.
func autoscalingString(t *testing.T, name string) string {
	t.Helper()
	pool := &v1alpha1.StaticSitePool{}
	if err := k8s.Get(ctxFor(t, 30*time.Second), client.ObjectKey{Name: name}, pool); err != nil || pool.Status.Autoscaling == nil {
		return fmt.Sprintf("status.autoscaling unreadable: %v", err)
	}
	a := pool.Status.Autoscaling
	return fmt.Sprintf("status %d req/s, measured %v, desired %d: %s", a.CurrentRPS, a.Measured, a.DesiredReplicas, a.Message)
}
