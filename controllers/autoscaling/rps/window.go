// Package rps turns scrapes of a monotonically increasing request counter (hyperstatic_requests_total) into a
// per-pod request rate over a sliding window, the way Prometheus' rate() does: a decrease of the counter is a
// reset (the server restarted), and the increase across it is the new value.
package rps

import (
	"time"
)

type sample struct {
	at    time.Time
	value float64
}

// Window keeps recent counter samples per pod (keyed by pod UID, so a pod re-created under the same name starts
// afresh) and computes rates over the last Length of time. Not safe for concurrent use; the autoscaler keeps one
// Window per StaticSite and uses it from one reconcile at a time.
type Window struct {
	// Length is the span the rate is averaged over. The rate uses every sample inside [now-Length, now] plus
	// the newest sample before now-Length (the anchor), so scrapes that drift by a few milliseconds never
	// shrink the span by one interval; an anchor older than 2×Length (a long gap in scrapes) is not used.
	Length time.Duration
	pods   map[string][]sample
}

// New returns an empty window of the given length.
func New(length time.Duration) *Window {
	return &Window{Length: length, pods: map[string][]sample{}}
}

// Add records a scrape of pod's counter. Samples not newer than the pod's last one are dropped.
func (w *Window) Add(pod string, at time.Time, value float64) {
	s := w.pods[pod]
	if n := len(s); n > 0 && !at.After(s[n-1].at) {
		return
	}
	s = append(s, sample{at, value})
	// Forget what can no longer be an anchor: keep the newest sample at or before at-Length and everything after.
	cutoff := at.Add(-w.Length)
	first := 0
	for i := range s {
		if s[i].at.After(cutoff) {
			break
		}
		first = i
	}
	w.pods[pod] = append(s[:0], s[first:]...)
}

// Rate is the pod's requests per second over the window ending at now, using only samples taken at or after
// since (the autoscaler passes its last rescale, so load measured before the replica count changed does not
// leak into the next decision; the zero time means no such bound). ok is false when the rate is unknown: a new
// pod with a single sample, or no sample within the last Length (scrapes are failing), which the autoscaler
// treats as a missing metric.
func (w *Window) Rate(pod string, now, since time.Time) (rate float64, ok bool) {
	s := w.pods[pod]
	for len(s) > 0 && s[0].at.Before(since) {
		s = s[1:]
	}
	if len(s) < 2 {
		return 0, false
	}
	cutoff := now.Add(-w.Length)
	last := s[len(s)-1]
	if last.at.Before(cutoff) {
		return 0, false
	}
	// Start from the anchor (newest sample at or before the cutoff) if it is recent enough, else from the
	// oldest sample inside the window.
	start := -1
	for i := range s {
		if s[i].at.After(cutoff) {
			break
		}
		start = i
	}
	if start < 0 || s[start].at.Before(now.Add(-2*w.Length)) {
		start = -1
		for i := range s {
			if !s[i].at.Before(cutoff) {
				start = i
				break
			}
		}
	}
	if start < 0 || start == len(s)-1 {
		return 0, false
	}
	var increase float64
	for i := start + 1; i < len(s); i++ {
		d := s[i].value - s[i-1].value
		if d < 0 {
			d = s[i].value // counter reset: the server counted from zero since
		}
		increase += d
	}
	span := last.at.Sub(s[start].at).Seconds()
	if span <= 0 {
		return 0, false
	}
	return increase / span, true
}

// Retain forgets every pod not in keep (pods that are gone).
func (w *Window) Retain(keep map[string]bool) {
	for pod := range w.pods {
		if !keep[pod] {
			delete(w.pods, pod)
		}
	}
}

// Len is how many pods have samples.
func (w *Window) Len() int { return len(w.pods) }
