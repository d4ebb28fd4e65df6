package staticsite

import (
	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
)

// A settled content reading is one that cannot change until the pod's server restarts, so the controller keeps it
// (in the per-pod sample cache, beside the CPU set) instead of reading the pod again every ContentRefresh:
//
//   - the content is fixed for the pod's life: an image or an image volume (RollHash set: new content means new
//     pods). ConfigMap and claim content reload under a running server and are never settled;
//   - the background encoder is done (no variant pending): until then the memory figures still grow;
//   - the server refused no load.
//
// A restart of the server container (same pod UID) starts the server afresh, encoder included, so the reading is
// tied to the container's restart count as well.

// settles says whether reading s of the site's content can be kept for the rest of the pod's server's life.
func settles(st *observation, s podmetrics.Sample) bool {
	return st.content.RollHash != "" && s.Content != nil && s.Content.EncodingsPending == 0 && !s.LoadFailed
}

// settledReading returns the kept reading of pod p when there is one that settles and was taken from the server
// that runs now.
func (r *Reconciler) settledReading(st *observation, p *corev1.Pod) (podmetrics.Sample, bool) {
	r.samplesMu.Lock()
	c, ok := r.samples[p.UID]
	r.samplesMu.Unlock()
	if !ok || c.restarts != serverRestarts(p) || !settles(st, c.sample) {
		return podmetrics.Sample{}, false
	}
	return c.sample, true
}

// serverRestarts is the restart count of the pod's server container (0 before it has a status).
func serverRestarts(p *corev1.Pod) int32 {
	for _, cs := range p.Status.ContainerStatuses {
		if cs.Name == sitechild.ContainerName {
			return cs.RestartCount
		}
	}
	return 0
}
