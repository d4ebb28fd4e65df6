package staticsite

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// status.content and the ContentInMemory condition: what one ready server pod says about the content it serves.
//
// The numbers move while a pod lives when its content does (a reload of ConfigMap or claim content changes them
// without a new pod) and while the background encoder adds variants after start, so such readings are taken
// fresh in every pass and the pass is repeated every ContentRefresh: they are never older than that. A reading
// that can no longer move is settled (settled.go) and kept instead: content fixed for the pod's life (an image,
// an image volume), every variant made, no failed load. Then a site in steady state costs no scrape and no
// periodic pass at all, so the operator's idle cost does not grow with the number of sites (issue 28: 1,000
// image sites were 1,000 passes and scrapes a minute, ≈ 0.05 CPU). When no pod can be read the status says
// Unknown and drops status.content: an old reading shown as current would be worse than none.

// maxContentScrapes bounds the pods one pass tries for the content reading: each try may wait for the scraper's
// timeout, and the pass should not wait for every pod of a large site whose admin ports do not answer.
const maxContentScrapes = 3

// observeServedContent reads the content gauges of one ready pod that runs the current spec into st.served, or
// says in st.notMeasured why there is no reading.
func (r *Reconciler) observeServedContent(ctx context.Context, st *observation) {
	pods := contentPods(st)
	if len(pods) == 0 {
		st.notMeasured = "no ready pod runs the current spec (memory and content) yet"
		return
	}
	var failures []string
	for _, p := range pods[:min(len(pods), maxContentScrapes)] {
		s, ok := r.settledReading(st, p)
		if !ok {
			var err error
			if s, err = r.scrapeInPass(ctx, st, p); err != nil {
				log.FromContext(ctx).V(1).Info("cannot read pod metrics", "pod", p.Name, "error", err.Error())
				failures = append(failures, fmt.Sprintf("%s: %v", p.Name, err))
				continue
			}
			r.rememberCPUs(st, p, s) // saves the Pinned condition a second request to the same pod
		}
		observeReloadFailure(st, p.Name, s)
		if !settles(st, s) {
			st.requeue(st.tun.contentRefresh)
		}
		if s.Content == nil {
			st.notMeasured = fmt.Sprintf("the server of pod %s does not report its content (an image older than the content metrics?)", p.Name)
			return
		}
		st.served = servedContent(p.Name, s.Content)
		return
	}
	st.notMeasured = "cannot read the admin port of " + strings.Join(failures, "; ")
	st.requeue(st.tun.scrapeRetry)
}

// contentPods are the pods whose reading describes the site as specified, in name order so that passes read the
// same pod while it lives: ready, not terminating, with the current memory limit (the reading depends on it) and,
// for image content, the current content.
func contentPods(st *observation) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range st.pods {
		p := &st.pods[i]
		if !podstate.Ready(p) || (st.content.RollHash != "" && !current(p, st.content)) || !runsMemory(p, st.memory) {
			continue
		}
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// runsMemory says whether the pod's server container has the memory limit m.
func runsMemory(p *corev1.Pod, m resource.Quantity) bool {
	for _, c := range p.Spec.Containers {
		if c.Name == sitechild.ContainerName {
			l, ok := c.Resources.Limits[corev1.ResourceMemory]
			return ok && l.Cmp(m) == 0
		}
	}
	return false
}

// servedContent is status.content for a pod's content gauges.
func servedContent(pod string, c *podmetrics.Content) *v1alpha1.ServedContent {
	out := &v1alpha1.ServedContent{
		Pod:              pod,
		Files:            c.Files,
		Bytes:            c.Bytes,
		MemoryBytes:      c.MemoryBytes,
		DiskBytes:        c.DiskBytes,
		FitMemoryLimit:   *resource.NewQuantity(c.FitMemoryLimitBytes, resource.BinarySI),
		EncodingsPending: c.EncodingsPending,
	}
	if c.MemoryLimitBytes > 0 {
		out.MemoryLimit = resource.NewQuantity(c.MemoryLimitBytes, resource.BinarySI)
	}
	return out
}

// contentInMemoryCondition is the ContentInMemory condition for a reading (nil: none, for the reason notMeasured).
// It is informational: deriveStatus never lets it touch Ready, since a file served from disk is served correctly.
func contentInMemoryCondition(served *v1alpha1.ServedContent, notMeasured string) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionContentInMemory}
	switch {
	case served == nil:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonNotMeasured, notMeasured
	case served.DiskBytes == 0:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonAllInMemory
		c.Message = fmt.Sprintf("pod %s serves all %d files (%d bytes) from memory", served.Pod, served.Files, served.Bytes)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonPartlyOnDisk
		c.Message = fmt.Sprintf("pod %s serves %d of %d bytes from disk", served.Pod, served.DiskBytes, served.Bytes)
		fit := served.FitMemoryLimit.String()
		switch limit := served.MemoryLimit; {
		case limit != nil && served.FitMemoryLimit.Cmp(*limit) > 0:
			c.Message += fmt.Sprintf(": they do not fit its memory limit of %s; a memory limit of %s (spec.memory) would hold "+
				"every file up to the server's --max-memory-file-size in memory", limit.String(), fit)
		default:
			// The budget is not what keeps them out (no limit, or one at least the fit): the files are larger than
			// --max-memory-file-size, or extraArgs set --memory-budget. More memory would change nothing.
			c.Message += fmt.Sprintf(" although %s of memory would hold the rest: the files are larger than the server's "+
				"--max-memory-file-size, or spec.server.extraArgs sets --memory-budget; more memory would not change it", fit)
		}
	}
	if served != nil && served.EncodingsPending > 0 {
		c.Message += fmt.Sprintf(" (compressed variants of %d files are still being made)", served.EncodingsPending)
	}
	return c
}
