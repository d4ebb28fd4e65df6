package benchmark

import (
	"context"
	"encoding/json"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// Server sampling. The operator scrapes the target StaticSite's pods (internal/podmetrics) twice per step, at
// points it plans from the run's start time: 2.5 s after the step's k6 starts (k6 has initialised its VUs by then)
// and 0.5 s before the step's planned end. The merge uses only samples that fall inside the step's measured
// load window, so a late or missed sample leaves the server columns of that step empty, never wrong.
const (
	sampleAfterStart = 2500 * time.Millisecond
	sampleBeforeEnd  = 500 * time.Millisecond
	// sampleTolerance: a point whose reconcile comes later than this is skipped (its sample would be off-window).
	sampleTolerance = 1500 * time.Millisecond
	// annotationSampled on the results ConfigMap counts the sample points already handled (taken or skipped).
	annotationSampled = "hyperstatic.dev/sample-points-done"
)

// samplePoints are the planned scrape times of a run.
func samplePoints(plan k6script.Plan, startAt time.Time) []time.Time {
	var out []time.Time
	for i, st := range plan.Steps {
		s := plan.StepStart(startAt, i)
		out = append(out, s.Add(sampleAfterStart), s.Add(time.Duration(st.DurationSeconds*float64(time.Second))-sampleBeforeEnd))
	}
	return out
}

// sampleServer takes the due sample points, recording samples in the results ConfigMap (changed tells whether
// to write it back), and returns how long until the next point (0 when none is left).
func (r *Reconciler) sampleServer(ctx context.Context, cm *corev1.ConfigMap, site, ns string, points []time.Time) (changed bool, next time.Duration, err error) {
	done, _ := strconv.Atoi(cm.Annotations[annotationSampled])
	now := r.Clock.Now()
	var samples []benchresults.ServerSample
	if raw := cm.Data[benchresults.ServerSamplesKey]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &samples); err != nil {
			return false, 0, err
		}
	}
	for done < len(points) && !points[done].After(now) {
		if now.Sub(points[done]) <= sampleTolerance && site != "" {
			pods, err := r.sitePods(ctx, ns, site)
			if err != nil {
				return false, 0, err
			}
			for i := range pods {
				s, err := r.Scraper.Scrape(ctx, &pods[i])
				if err != nil {
					log.FromContext(ctx).Info("server sample failed", "pod", pods[i].Name, "error", err.Error())
					continue
				}
				samples = append(samples, benchresults.ServerSample{Pod: pods[i].Name, UnixMs: s.Time.UnixMilli(),
					Requests: s.Requests, CPUSeconds: s.CPUSeconds, RSSBytes: s.ResidentBytes})
			}
		}
		done++
		changed = true
	}
	if changed {
		raw, err := json.Marshal(samples)
		if err != nil {
			return false, 0, err
		}
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data[benchresults.ServerSamplesKey] = string(raw)
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations[annotationSampled] = strconv.Itoa(done)
	}
	if done < len(points) {
		next = points[done].Sub(now)
	}
	return changed, next, nil
}

// serverSamplesOf reads the samples recorded so far.
func serverSamplesOf(cm *corev1.ConfigMap) []benchresults.ServerSample {
	var samples []benchresults.ServerSample
	if cm != nil && cm.Data[benchresults.ServerSamplesKey] != "" {
		_ = json.Unmarshal([]byte(cm.Data[benchresults.ServerSamplesKey]), &samples)
	}
	return samples
}
