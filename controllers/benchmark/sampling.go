package benchmark

import (
	"encoding/json"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

// Server sampling plan. The operator scrapes the target StaticSite's pods (internal/podmetrics) twice per step, at
// points it plans from the run's start time: 2.5 s after the step's k6 starts (k6 has initialised its VUs by then)
// and 0.5 s before the step's planned end. The merge uses only samples that fall inside the step's measured load
// window, so a late or missed sample leaves the server columns of that step empty, never wrong.
const (
	sampleAfterStart = 2500 * time.Millisecond
	sampleBeforeEnd  = 500 * time.Millisecond
	// sampleTolerance: a point whose pass comes later than this is skipped (its sample would be off-window).
	sampleTolerance = 1500 * time.Millisecond
	// annotationSampled on the results ConfigMap counts the sample points already handled (taken or skipped).
	annotationSampled = "hyperstatic.dev/sample-points-done"
	// annotationSamplesDropped counts the points whose samples were not recorded: server-samples.json was full.
	annotationSamplesDropped = "hyperstatic.dev/sample-points-dropped"
	// serverSamplesBudget bounds server-samples.json while the run goes on (about 100 bytes per pod and point:
	// 2 points per step), so that the results ConfigMap stays writable under its 1 MiB limit whatever the
	// number of steps and server pods, and leaves room for the results. Past it, the later steps have no server
	// columns, and status.dropped says so.
	serverSamplesBudget = 512 << 10
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

// duePoints walks the planned points from the first one not handled (done) while they are not in the future: each
// is taken (true) when now is within sampleTolerance of it, else skipped (false). next is how long until the first
// point left, 0 when none is.
func duePoints(points []time.Time, done int, now time.Time) (due []bool, next time.Duration) {
	for i := done; i < len(points) && !points[i].After(now); i++ {
		due = append(due, now.Sub(points[i]) <= sampleTolerance)
	}
	if left := done + len(due); left < len(points) {
		next = points[left].Sub(now)
	}
	return due, next
}

// samplesDone is how many sample points the results ConfigMap says were handled.
func samplesDone(cm *corev1.ConfigMap) int {
	done, _ := strconv.Atoi(cm.Annotations[annotationSampled])
	return done
}

// samplesDropped is how many sample points the results ConfigMap says were not recorded for want of room.
func samplesDropped(cm *corev1.ConfigMap) int {
	n, _ := strconv.Atoi(cm.Annotations[annotationSamplesDropped])
	return n
}

// serverSamplesOf reads the samples recorded so far.
func serverSamplesOf(cm *corev1.ConfigMap) ([]benchresults.ServerSample, error) {
	var samples []benchresults.ServerSample
	if raw := cm.Data[benchresults.ServerSamplesKey]; raw != "" {
		if err := json.Unmarshal([]byte(raw), &samples); err != nil {
			return nil, err
		}
	}
	return samples, nil
}
