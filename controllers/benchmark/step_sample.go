package benchmark

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// sample scrapes the target StaticSite's serving pods at the planned points that are due, and records the samples
// and the number of points handled in the results ConfigMap. It acts only while the run goes on: a run that is
// over is collected instead. A pod that cannot be scraped is logged and left out; the merge copes with gaps.
//
// Observes: the target's serving pods (or, for target.pod, that pod) and their metrics; when the next point is due.
func (r *Reconciler) sample(ctx context.Context, b *v1alpha1.Benchmark, o *observation) error {
	if ended, _ := o.runEnd(); ended {
		return nil
	}
	done := samplesDone(o.results)
	due, next := duePoints(samplePoints(*o.plan, o.startAt), done, o.now)
	o.nextSample = next
	if len(due) == 0 {
		return nil
	}
	samples, err := serverSamplesOf(o.results)
	if err != nil {
		return fmt.Errorf("ConfigMap %s: %s: %w", o.results.Name, benchresults.ServerSamplesKey, err)
	}
	var taken [][]benchresults.ServerSample
	for _, take := range due {
		if !take || b.Spec.Target.StaticSite == "" { // URL targets have no server columns
			continue
		}
		point, err := r.scrapeTarget(ctx, b.Namespace, b.Spec.Target.StaticSite, o.plan.TargetPod)
		if err != nil {
			return err
		}
		taken = append(taken, point)
	}
	raw, dropped, err := recordSamples(samples, taken, serverSamplesBudget)
	if err != nil {
		return err
	}
	annotations := map[string]string{annotationSampled: strconv.Itoa(done + len(due))}
	if dropped += samplesDropped(o.results); dropped > 0 {
		annotations[annotationSamplesDropped] = strconv.Itoa(dropped)
	}
	return r.updateResults(ctx, o, map[string]string{benchresults.ServerSamplesKey: string(raw)}, annotations)
}

// recordSamples appends each point's samples to those recorded while server-samples.json stays within budget
// bytes; a point that would pass it is left out (dropped counts them), so the results ConfigMap stays writable.
func recordSamples(recorded []benchresults.ServerSample, points [][]benchresults.ServerSample, budget int) (raw []byte, dropped int, err error) {
	if recorded == nil {
		recorded = []benchresults.ServerSample{} // "[]", not "null": the key holds a list
	}
	if raw, err = json.Marshal(recorded); err != nil {
		return nil, 0, err
	}
	for _, point := range points {
		more, err := json.Marshal(append(recorded, point...))
		if err != nil {
			return nil, 0, err
		}
		if len(more) > budget {
			dropped++
			continue
		}
		recorded, raw = append(recorded, point...), more
	}
	return raw, dropped, nil
}

// scrapeTarget reads the metrics of the loaded pod (target.pod: that pod only, while it is still the site's and
// serving), or else of every serving pod of the site.
func (r *Reconciler) scrapeTarget(ctx context.Context, ns, site, pod string) ([]benchresults.ServerSample, error) {
	pods, err := r.targetPods(ctx, ns, site, pod)
	if err != nil {
		return nil, err
	}
	var out []benchresults.ServerSample
	for i := range pods {
		s, err := r.Scraper.Scrape(ctx, &pods[i])
		if err != nil {
			log.FromContext(ctx).Info("server sample failed", "pod", pods[i].Name, "error", err.Error())
			continue
		}
		out = append(out, benchresults.ServerSample{Pod: pods[i].Name, UnixMs: s.Time.UnixMilli(),
			Requests: s.Requests, CPUSeconds: s.CPUSeconds, RSSBytes: s.ResidentBytes})
	}
	return out, nil
}

// targetPods are the pods whose metrics describe the load: the one loaded pod, or the site's serving pods.
func (r *Reconciler) targetPods(ctx context.Context, ns, site, name string) ([]corev1.Pod, error) {
	if name == "" {
		return r.sitePods(ctx, ns, site)
	}
	pod := &corev1.Pod{}
	err := r.getFresh(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod)
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil // gone: no sample, the step's server columns stay empty
	case err != nil:
		return nil, err
	case !podOfSite(pod, site) || !podstate.Serving(pod):
		return nil, nil
	}
	return []corev1.Pod{*pod}, nil
}
