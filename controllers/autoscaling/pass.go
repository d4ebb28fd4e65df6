package autoscaling

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"sync"
	"time"

	"hyperstatic.dev/hyperstatic/internal/reconcile"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/autoscaling/hpa"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// metricDescription names the metric in condition messages and rescale reasons.
const metricDescription = "requests per second per pod"

// passResult is what one pass observed and decided: the autoscaler's part of the StaticSite status.
type passResult struct {
	// stale: the cached StaticSite is older than what this process wrote or the API server holds; nothing was
	// decided or should be written.
	stale bool
	// now is the clock reading the pass decided at (its start, when it stopped before deciding): the conditions'
	// transition time.
	now           time.Time
	status        v1alpha1.AutoscalingStatus
	ableToScale   *condition
	scalingActive *condition
}

// pass reads the current scale from the cached site, measures the pods, decides, and rescales when the decision says so.
func (r *Reconciler) pass(ctx context.Context, site *v1alpha1.StaticSite, state *siteState) passResult {
	logger := log.FromContext(ctx)
	spec := site.Spec.Autoscaling
	res := passResult{now: reconcile.Now(r.clock)}
	switch {
	case state.lastScale != nil:
		res.status.LastScaleTime = state.lastScale
	case site.Status.Autoscaling != nil:
		res.status.LastScaleTime = site.Status.Autoscaling.LastScaleTime
	}

	// The current count comes from the cached StaticSite (the scale subresource is its spec.replicas): a GET of the
	// subresource in every pass was one quorum read per site every interval, 200 reads/s at 1,000 sites (issue 28,
	// docs/bench/operator-2026-11-27.md). Two guards keep a cache that lags from deciding: after this process
	// rescaled, passes wait until the cache has seen that write; and the scale update carries the cached
	// resourceVersion, so it fails with a conflict if the site changed since, which retries soon (rescale below).
	if state.scaledFrom != "" && site.ResourceVersion == state.scaledFrom {
		res.stale = true
		return res
	}
	current := int32(1) // the CRD's default, for an object stored before defaulting
	if site.Spec.Replicas != nil {
		current = *site.Spec.Replicas
	}
	res.status.CurrentReplicas = current
	res.status.DesiredReplicas = current

	// status.capacity is read from the same cached site: the watch wakes a pass when it changes (SetupWithManager).
	t, err := resolveTarget(spec, site.CPUOrDefault(), site.Status.Capacity)
	if err != nil {
		res.scalingActive = &condition{status: false, reason: v1alpha1.ReasonInvalidAutoscalingSpec, message: err.Error()}
		return res
	}
	target := t.rps
	res.status.TargetRPSPerPod = int64(math.Round(target))
	res.status.TargetSource, res.status.TargetMessage = t.source, t.message

	m, err := r.measure(ctx, site, state)
	if err == nil && m.settling {
		// Just started or rescaled: hold, and keep the last reported figures and conditions until rates since
		// then exist.
		if prev := site.Status.Autoscaling; prev != nil {
			res.status.CurrentRPS, res.status.CurrentAverageRPS = prev.CurrentRPS, prev.CurrentAverageRPS
			res.status.MeasuredPods = prev.MeasuredPods
		}
		return res
	}
	var (
		metricReplicas int32
		usage          hpa.Usage
		tolerance      = hpa.DefaultTolerance
	)
	if spec.Tolerance != nil {
		tolerance = spec.Tolerance.AsApproximateFloat64()
	}
	behavior := hpa.WithDefaults(spec.Behavior)
	if err == nil {
		metricReplicas, usage, err = hpa.ReplicaCount(current, m.pods, target, hpa.TolerancesFor(behavior, tolerance))
		if errors.Is(err, hpa.ErrNoMetrics) && m.scrapeErr != nil {
			err = fmt.Errorf("%w; last scrape error: %w", err, m.scrapeErr)
		}
	}
	res.status.CurrentRPS = int64(math.Round(usage.Total))
	res.status.CurrentAverageRPS = int64(math.Round(usage.Average))
	res.status.MeasuredPods = int32(usage.Measured)

	minReplicas := int32(1)
	if spec.MinReplicas != nil {
		minReplicas = *spec.MinReplicas
	}
	now := reconcile.Now(r.clock)
	res.now = now
	d := state.hpa.Decide(hpa.Input{
		Now: now, CurrentReplicas: current, MinReplicas: minReplicas, MaxReplicas: spec.MaxReplicas,
		Behavior: behavior, MetricReplicas: metricReplicas, MetricErr: err, MetricDescription: metricDescription,
	})
	res.status.DesiredReplicas = d.DesiredReplicas
	res.ableToScale, res.scalingActive = fromDecision(d.AbleToScale), fromDecision(d.ScalingActive)
	if !d.Rescale {
		return res
	}

	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Name: site.Name, Namespace: site.Namespace, ResourceVersion: site.ResourceVersion},
		Spec:       autoscalingv1.ScaleSpec{Replicas: d.DesiredReplicas},
	}
	err = r.client.SubResource("scale").Update(ctx, site, client.WithSubResourceBody(scale))
	if apierrors.IsConflict(err) {
		// The site changed after the cache saw it: decide again on the newer view, without a failure to report.
		res.stale = true
		return res
	}
	if err != nil {
		res.ableToScale = &condition{status: false, reason: v1alpha1.ReasonFailedUpdateScale,
			message: fmt.Sprintf("the autoscaler was unable to update the StaticSite's scale: %v", err)}
		r.recorder.Eventf(site, corev1.EventTypeWarning, v1alpha1.EventReasonFailedRescale, "New size: %d; reason: %s; error: %v",
			d.DesiredReplicas, d.Reason, err)
		return res
	}
	state.scaledFrom = site.ResourceVersion
	state.hpa.RecordScale(now, behavior, current, d.DesiredReplicas)
	state.lastScaleAt = now
	state.lastScale = &metav1.Time{Time: now.Truncate(time.Second)} // the API keeps whole seconds
	res.status.LastScaleTime = state.lastScale
	res.ableToScale = &condition{status: true, reason: v1alpha1.ReasonSucceededRescale,
		message: fmt.Sprintf("the autoscaler was able to update the StaticSite's scale to %d", d.DesiredReplicas)}
	msg := fmt.Sprintf("Rescaled %d → %d: %s; %d req/s per pod over %d measured pods (total %d req/s), target %d",
		current, d.DesiredReplicas, d.Reason, res.status.CurrentAverageRPS, usage.Measured, res.status.CurrentRPS,
		res.status.TargetRPSPerPod)
	if d.Limited {
		msg += fmt.Sprintf(" (limited: %s)", d.LimitReason)
	}
	r.recorder.Event(site, corev1.EventTypeNormal, v1alpha1.EventReasonRescaled, msg)
	logger.Info("rescaled", "from", current, "to", d.DesiredReplicas, "reason", d.Reason,
		"averageRPS", usage.Average, "target", target, "limit", d.LimitReason)
	return res
}

// measure lists the site's pods, scrapes the ready ones, feeds the window and returns every pod with its rate
// (or none) as the HPA calculation groups them.
//
// Each pod's rate only uses samples taken since that pod became Ready and since this process's last rescale
// (after a rescale, the load a pod measured before it does not say what the new count should be), and, once it
// can, since the set of ready pods last changed (see rate). A pod that just became Ready has no rate until its
// second scrape and counts as the HPA counts a pod without a metric (at 0 on a scale-up, at the target on a
// scale-down), while the pods already serving keep a rate: a rollout, or pods turning Ready one by one under
// overload, does not stop the autoscaler from deciding.
//
// A pod whose scrape failed is left out of the next 1, 2, 4, ... (at most maxBackoffPasses) passes; until it is
// scraped again it counts as ready without a metric (or with what its window still holds).
//
// The error is only for a failed pod list; failed scrapes are in the measurement.
func (r *Reconciler) measure(ctx context.Context, site *v1alpha1.StaticSite, state *siteState) (measurement, error) {
	logger := log.FromContext(ctx)
	list := &corev1.PodList{}
	if err := r.client.List(ctx, list, client.InNamespace(site.Namespace),
		client.MatchingLabels{v1alpha1.LabelSite: site.Name}); err != nil {
		return measurement{}, fmt.Errorf("list pods: %w", err)
	}
	now := reconcile.Now(r.clock)
	states := make([]hpa.PodState, len(list.Items))
	var toScrape []*corev1.Pod
	keep := make(map[string]bool, len(list.Items))
	tracked := make(map[string]*podState, len(list.Items))
	for i := range list.Items {
		p := &list.Items[i]
		key := podKey(p)
		keep[key] = true
		states[i] = classify(p)
		if states[i] != hpa.PodReady {
			continue // not tracked: readiness starts over when it is Ready again
		}
		ps := state.pods[key]
		if ps == nil {
			ps = &podState{readySince: now}
		}
		tracked[key] = ps
		if ps.skip > 0 {
			ps.skip--
			logger.V(1).Info("scrape backed off after failures", "pod", p.Name, "failures", ps.failures, "passesLeft", ps.skip)
			continue
		}
		toScrape = append(toScrape, p)
	}
	state.pods = tracked
	state.window.Retain(keep)
	readyKeys := slices.Sorted(maps.Keys(tracked))
	if key := strings.Join(readyKeys, ","); key != state.readyKey || state.readyChanged.IsZero() {
		state.readyKey, state.readyChanged = key, now
	}

	scraped := 0
	var oldestScraped time.Time // the oldest start of the windows of the pods scraped now
	for _, s := range r.scrapeAll(ctx, toScrape) {
		ps := state.pods[podKey(s.pod)]
		if s.err != nil {
			ps.lastErr = s.err
			if !s.started {
				// The pass's deadline passed before this scrape could start: not the pod's fault.
				continue
			}
			ps.failures++
			ps.skip = backoffPasses(ps.failures)
			// The first failure is worth an operator's attention (e.g. a body over podmetrics' limits); the
			// repeats only while debugging.
			logger.V(min(ps.failures-1, 1)).Info("scrape failed; the pod counts as missing and is backed off",
				"pod", s.pod.Name, "error", s.err.Error(), "failures", ps.failures, "skipPasses", ps.skip)
			continue
		}
		ps.failures, ps.skip, ps.lastErr = 0, 0, nil
		scraped++
		if since := r.since(state, ps); oldestScraped.IsZero() || since.Before(oldestScraped) {
			oldestScraped = since
		}
		at := s.sample.Time
		if at.IsZero() {
			at = reconcile.Now(r.clock)
		}
		state.window.Add(podKey(s.pod), at, s.sample.Requests)
	}

	now = reconcile.Now(r.clock)
	m := measurement{pods: make([]hpa.Pod, len(list.Items))}
	known := 0
	for i := range list.Items {
		p := &list.Items[i]
		m.pods[i] = hpa.Pod{Name: p.Name, State: states[i]}
		if states[i] != hpa.PodReady {
			continue
		}
		ps := state.pods[podKey(p)]
		m.pods[i].Value, m.pods[i].HasValue = r.rate(state, podKey(p), ps, now)
		if m.pods[i].HasValue {
			known++
		} else if m.scrapeErr == nil {
			m.scrapeErr = ps.lastErr
		}
	}
	m.settling = known == 0 && scraped > 0 && now.Sub(oldestScraped) < r.window
	return m, nil
}

// measurement is what measure found.
type measurement struct {
	// pods is every pod of the site with its rate, if known, as the HPA calculation groups them.
	pods []hpa.Pod
	// settling is true when fresh scrapes succeeded but no pod has a rate yet, less than one window after the
	// oldest of their windows started (a first pass, or the pass after a rescale): the next pass will know, so
	// this one should neither decide nor report a metric failure.
	settling bool
	// scrapeErr is the last failed scrape of the first ready pod (by name) without a rate, if any: when no pod
	// has a rate, it says why in the ScalingActive condition.
	scrapeErr error
}

// rate is the pod's request rate, if known.
//
// A pod's share of the load depends on how many pods share it. A window reaching back across a change of the
// ready pods mixes the share a pod had before with the one it has now, and next to the new pods' rates (all
// after the change) the average overshoots: near capacity, one pod too many, kept for a whole scale-down window
// (TestNoOvershootWhenNewPodsJoinNearCapacity). So once the pod has two samples since the ready pods last
// changed, its rate uses only those: every pod is then measured over the same span. Until then (the pass that
// saw the change) it keeps its rate over its own window, since it became Ready or the last rescale: the share it
// had before the change, next to new pods that count at 0 on a scale-up, so the estimate does not overshoot
// either, and the autoscaler still decides.
func (r *Reconciler) rate(state *siteState, key string, ps *podState, now time.Time) (float64, bool) {
	own := r.since(state, ps)
	if state.readyChanged.After(own) {
		if v, ok := state.window.Rate(key, now, state.readyChanged); ok {
			return v, true
		}
	}
	return state.window.Rate(key, now, own)
}

// since is where a pod's own rate window starts: when it became Ready, or the last rescale if that is later.
func (r *Reconciler) since(state *siteState, ps *podState) time.Time {
	if state.lastScaleAt.After(ps.readySince) {
		return state.lastScaleAt
	}
	return ps.readySince
}

// backoffPasses is how many passes leave a pod out after its failures-th consecutive failed scrape: 1, 2, 4, ...
// up to maxBackoffPasses.
func backoffPasses(failures int) int {
	n := 1
	for i := 1; i < failures && n < maxBackoffPasses; i++ {
		n *= 2
	}
	return min(n, maxBackoffPasses)
}

// classify groups a pod as the HPA does for a metric that only ready pods produce: deleted, failed or
// completed pods are ignored; pending or not-Ready pods are unready (they receive no Service traffic, so their
// rate says nothing about load); the rest are ready.
func classify(p *corev1.Pod) hpa.PodState {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return hpa.PodIgnored
	}
	if p.Status.Phase != corev1.PodRunning || !podstate.Ready(p) {
		return hpa.PodUnready
	}
	return hpa.PodReady
}

type scrapeResult struct {
	pod    *corev1.Pod
	sample podSample
	err    error
	// started is false when the pass's deadline passed before the scrape could start.
	started bool
}

// scrapeAll scrapes pods in parallel (at most DefaultMaxConcurrentScrapes at once), all under one deadline,
// r.scrapeTimeout from now: however many pods hang, the pass ends by then and decides on the pods that answered.
func (r *Reconciler) scrapeAll(ctx context.Context, pods []*corev1.Pod) []scrapeResult {
	ctx, cancel := context.WithTimeout(ctx, r.scrapeTimeout)
	defer cancel()
	results := make([]scrapeResult, len(pods))
	sem := make(chan struct{}, DefaultMaxConcurrentScrapes)
	var wg sync.WaitGroup
	for i, p := range pods {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			results[i] = scrapeResult{pod: p, err: fmt.Errorf("scrape %s not started: %w", p.Name, ctx.Err())}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			s, err := r.scraper.Scrape(ctx, p)
			results[i] = scrapeResult{pod: p, sample: podSample{Time: s.Time, Requests: s.Requests}, err: err, started: true}
		}()
	}
	// Scrapers honour ctx (podmetrics.HTTPScraper's request does), so this wait ends by the deadline.
	wg.Wait()
	return results
}

// podSample is the part of a podmetrics.Sample the autoscaler uses.
type podSample struct {
	Time     time.Time
	Requests float64
}
