package autoscaling

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/autoscaling/hpa"
)

// metricDescription names the metric in condition messages and rescale reasons.
const metricDescription = "requests per second per pod"

// passResult is what one pass observed and decided: the autoscaler's part of the StaticSite status.
type passResult struct {
	// stale: the cached StaticSite is older than the scale just read; nothing was decided or should be written.
	stale         bool
	status        v1alpha1.AutoscalingStatus
	ableToScale   *hpa.Condition
	scalingActive *hpa.Condition
}

// pass reads the scale subresource, measures the pods, decides, and rescales when the decision says so.
func (r *Reconciler) pass(ctx context.Context, site *v1alpha1.StaticSite, state *siteState) passResult {
	logger := log.FromContext(ctx)
	spec := site.Spec.Autoscaling
	var res passResult
	switch {
	case state.lastScale != nil:
		res.status.LastScaleTime = state.lastScale
	case site.Status.Autoscaling != nil:
		res.status.LastScaleTime = site.Status.Autoscaling.LastScaleTime
	}

	scale := &autoscalingv1.Scale{}
	if err := r.client.SubResource("scale").Get(ctx, site, scale); err != nil {
		res.ableToScale = &hpa.Condition{Status: false, Reason: "FailedGetScale",
			Message: fmt.Sprintf("the autoscaler was unable to get the StaticSite's current scale: %v", err)}
		return res
	}
	if scale.ResourceVersion != site.ResourceVersion {
		// The site changed since the cache saw it (maybe autoscaling was just turned off): decide only on a
		// consistent view. The scale update below carries this resourceVersion, so it also fails if the site
		// changes between here and there.
		res.stale = true
		return res
	}
	current := scale.Spec.Replicas
	res.status.CurrentReplicas = current
	res.status.DesiredReplicas = current

	target, err := targetPerPod(site)
	if err != nil {
		res.scalingActive = &hpa.Condition{Status: false, Reason: "InvalidSpec", Message: err.Error()}
		return res
	}
	res.status.TargetRPSPerPod = int64(math.Round(target))

	pods, settling, err := r.measure(ctx, site, state)
	if err == nil && settling {
		// Just started, rescaled or the ready pods changed: hold, and keep the last reported figures and
		// conditions until rates over the new set of pods exist.
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
		metricReplicas, usage, err = hpa.ReplicaCount(current, pods, target, hpa.TolerancesFor(behavior, tolerance))
	}
	res.status.CurrentRPS = int64(math.Round(usage.Total))
	res.status.CurrentAverageRPS = int64(math.Round(usage.Average))
	res.status.MeasuredPods = int32(usage.Measured)

	minReplicas := int32(1)
	if spec.MinReplicas != nil {
		minReplicas = *spec.MinReplicas
	}
	now := r.clock.Now()
	d := state.hpa.Decide(hpa.Input{
		Now: now, CurrentReplicas: current, MinReplicas: minReplicas, MaxReplicas: spec.MaxReplicas,
		Behavior: behavior, MetricReplicas: metricReplicas, MetricErr: err, MetricDescription: metricDescription,
	})
	res.status.DesiredReplicas = d.DesiredReplicas
	res.ableToScale, res.scalingActive = &d.AbleToScale, &d.ScalingActive
	if !d.Rescale {
		return res
	}

	scale.Spec.Replicas = d.DesiredReplicas
	if err := r.client.SubResource("scale").Update(ctx, site, client.WithSubResourceBody(scale)); err != nil {
		res.ableToScale = &hpa.Condition{Status: false, Reason: "FailedUpdateScale",
			Message: fmt.Sprintf("the autoscaler was unable to update the StaticSite's scale: %v", err)}
		r.recorder.Eventf(site, corev1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v",
			d.DesiredReplicas, d.Reason, err)
		return res
	}
	state.hpa.RecordScale(now, behavior, current, d.DesiredReplicas)
	state.lastScaleAt = now
	state.lastScale = &metav1.Time{Time: now.Truncate(time.Second)} // the API keeps whole seconds
	res.status.LastScaleTime = state.lastScale
	res.ableToScale = &hpa.Condition{Status: true, Reason: "SucceededRescale",
		Message: fmt.Sprintf("the autoscaler was able to update the StaticSite's scale to %d", d.DesiredReplicas)}
	msg := fmt.Sprintf("Rescaled %d → %d: %s; %d req/s per pod over %d measured pods (total %d req/s), target %d",
		current, d.DesiredReplicas, d.Reason, res.status.CurrentAverageRPS, usage.Measured, res.status.CurrentRPS,
		res.status.TargetRPSPerPod)
	if d.Limited {
		msg += fmt.Sprintf(" (limited: %s)", d.LimitReason)
	}
	r.recorder.Event(site, corev1.EventTypeNormal, "Rescaled", msg)
	logger.Info("rescaled", "from", current, "to", d.DesiredReplicas, "reason", d.Reason,
		"averageRPS", usage.Average, "target", target, "limit", d.LimitReason)
	return res
}

// targetPerPod is the effective per-pod target: targetRPSPerPod, or targetRPSPerCPU × spec.cpu (default 1 CPU).
func targetPerPod(site *v1alpha1.StaticSite) (float64, error) {
	a := site.Spec.Autoscaling
	switch {
	case a.TargetRPSPerPod != nil && a.TargetRPSPerCPU == nil:
		if *a.TargetRPSPerPod <= 0 {
			return 0, errors.New("spec.autoscaling.targetRPSPerPod must be positive")
		}
		return float64(*a.TargetRPSPerPod), nil
	case a.TargetRPSPerCPU != nil && a.TargetRPSPerPod == nil:
		cpu := 1.0
		if site.Spec.CPU != nil {
			cpu = site.Spec.CPU.AsApproximateFloat64()
		}
		t := float64(*a.TargetRPSPerCPU) * cpu
		if t <= 0 {
			return 0, errors.New("spec.autoscaling.targetRPSPerCPU × spec.cpu must be positive")
		}
		return t, nil
	}
	return 0, errors.New("exactly one of spec.autoscaling.targetRPSPerPod and spec.autoscaling.targetRPSPerCPU must be set")
}

// measure lists the site's pods, scrapes the ready ones, feeds the window and returns every pod with its rate
// (or none) as the HPA calculation groups them.
//
// Rates only use samples taken since the set of ready pods last changed (and since this process's last
// rescale): a pod's share of the load depends on how many pods share it, so a window reaching back before a
// change would mix the old pods' pre-change load with the new pods' share and overshoot.
//
// settling is true when fresh scrapes succeeded but no pod has two samples since that change yet, for less
// than one window: the next pass will know, so this one should neither decide nor report a metric failure.
func (r *Reconciler) measure(ctx context.Context, site *v1alpha1.StaticSite, state *siteState) (pods []hpa.Pod, settling bool, err error) {
	list := &corev1.PodList{}
	if err := r.client.List(ctx, list, client.InNamespace(site.Namespace),
		client.MatchingLabels{v1alpha1.LabelSite: site.Name}); err != nil {
		return nil, false, fmt.Errorf("list pods: %w", err)
	}
	states := make([]hpa.PodState, len(list.Items))
	var toScrape []*corev1.Pod
	keep := make(map[string]bool, len(list.Items))
	var readyKeys []string
	for i := range list.Items {
		p := &list.Items[i]
		keep[podKey(p)] = true
		states[i] = classify(p)
		if states[i] == hpa.PodReady {
			toScrape = append(toScrape, p)
			readyKeys = append(readyKeys, podKey(p))
		}
	}
	state.window.Retain(keep)
	sort.Strings(readyKeys)
	if key := strings.Join(readyKeys, ","); key != state.readyKey || state.readySince.IsZero() {
		state.readyKey, state.readySince = key, r.clock.Now()
	}

	scraped := 0
	for _, s := range r.scrapeAll(ctx, toScrape) {
		if s.err != nil {
			log.FromContext(ctx).V(1).Info("scrape failed; the pod counts as missing", "pod", s.pod.Name, "error", s.err.Error())
			continue
		}
		scraped++
		at := s.sample.Time
		if at.IsZero() {
			at = r.clock.Now()
		}
		state.window.Add(podKey(s.pod), at, s.sample.Requests)
	}

	now := r.clock.Now()
	since := state.readySince
	if state.lastScaleAt.After(since) {
		since = state.lastScaleAt
	}
	pods = make([]hpa.Pod, len(list.Items))
	known := 0
	for i := range list.Items {
		p := &list.Items[i]
		pods[i] = hpa.Pod{Name: p.Name, State: states[i]}
		if states[i] == hpa.PodReady {
			pods[i].Value, pods[i].HasValue = state.window.Rate(podKey(p), now, since)
			if pods[i].HasValue {
				known++
			}
		}
	}
	return pods, known == 0 && scraped > 0 && now.Sub(since) < r.window, nil
}

// classify groups a pod as the HPA does for a metric that only ready pods produce: deleted, failed or
// completed pods are ignored; pending or not-Ready pods are unready (they receive no Service traffic, so their
// rate says nothing about load); the rest are ready.
func classify(p *corev1.Pod) hpa.PodState {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed || p.Status.Phase == corev1.PodSucceeded {
		return hpa.PodIgnored
	}
	if p.Status.Phase != corev1.PodRunning {
		return hpa.PodUnready
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status == corev1.ConditionTrue {
				return hpa.PodReady
			}
			break
		}
	}
	return hpa.PodUnready
}

type scrapeResult struct {
	pod    *corev1.Pod
	sample podSample
	err    error
}

// scrapeAll scrapes pods in parallel (at most DefaultMaxConcurrentScrapes at once), each bounded by the
// scrape interval so a stuck pod cannot delay the decision for the others.
func (r *Reconciler) scrapeAll(ctx context.Context, pods []*corev1.Pod) []scrapeResult {
	results := make([]scrapeResult, len(pods))
	sem := make(chan struct{}, DefaultMaxConcurrentScrapes)
	var wg sync.WaitGroup
	for i, p := range pods {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			sctx, cancel := context.WithTimeout(ctx, max(r.interval, time.Second))
			defer cancel()
			s, err := r.scraper.Scrape(sctx, p)
			results[i] = scrapeResult{pod: p, sample: podSample{Time: s.Time, Requests: s.Requests}, err: err}
		}()
	}
	wg.Wait()
	return results
}

// podSample is the part of a podmetrics.Sample the autoscaler uses.
type podSample struct {
	Time     time.Time
	Requests float64
}
