package staticsite

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// imagePullReasons are the container waiting reasons that mean the content image cannot be pulled.
var imagePullReasons = map[string]bool{"ErrImagePull": true, "ImagePullBackOff": true, "InvalidImageName": true, "ErrImageNeverPull": true}

// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch

// reconcilePods looks at the site's pods: image pull failures, the digest they run, servers that refuse the content
// (loadfailure.go), the content one of them serves (status.content, ContentInMemory), and their CPU pinning.
func (r *Reconciler) reconcilePods(ctx context.Context, st *observation) error {
	site := st.site
	list := &corev1.PodList{}
	if err := r.List(ctx, list, client.InNamespace(site.Namespace), client.MatchingLabels(sitechild.SelectorLabels(site))); err != nil {
		return fmt.Errorf("list pods: %w", err)
	}
	st.pods = st.pods[:0]
	for _, p := range list.Items {
		if p.DeletionTimestamp.IsZero() {
			st.pods = append(st.pods, p)
		}
	}
	r.prunePodSamples(types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, st.pods)
	if st.content.RollHash != "" {
		r.observeImagePods(st)
		// Keep the digest learned earlier while no ready pod shows it (e.g. during a restart of every pod).
		if prev := site.Status.ContentRevision; !strings.Contains(st.content.Revision, "@") &&
			strings.HasPrefix(prev, st.content.Revision+"@") {
			st.content.Revision = prev
		}
	}
	observeStartFailures(st)
	r.observeServedContent(ctx, st)
	st.pinned = r.pinnedCondition(ctx, st)
	return nil
}

// current says whether a pod runs the current content (its template carries the current content hash).
func current(p *corev1.Pod, c desired.Content) bool {
	return p.Annotations[sitechild.AnnotationContentHash] == c.RollHash
}

// observeImagePods reports pull failures of the current content image and, for a baked image, the digest the
// ready pods run.
func (r *Reconciler) observeImagePods(st *observation) {
	for i := range st.pods {
		p := &st.pods[i]
		if !current(p, st.content) {
			continue
		}
		for _, cs := range p.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && imagePullReasons[w.Reason] && st.contentProblem == nil {
				st.contentProblem = &problem{Reason: v1alpha1.ReasonImagePullFailed, Message: fmt.Sprintf("pod %s: %s: %s", p.Name, w.Reason, w.Message)}
			}
			if st.content.Source == v1alpha1.ContentSourceImage && cs.Name == sitechild.ContainerName && cs.Ready &&
				!strings.Contains(st.content.Revision, "@") {
				if _, digest, ok := strings.Cut(cs.ImageID, "@"); ok && strings.HasPrefix(digest, "sha256:") {
					st.content.Revision += "@" + digest
				}
			}
		}
	}
}

// pinnedCondition: True when every ready pod is Guaranteed and its server reports workers pinned to exclusive
// CPUs; False for a fractional CPU (the shared pool, by design) or when a pod reports unpinned workers (typically
// a node without the static CPU manager policy); Unknown while no pod is ready or a pod's metrics cannot be read.
func (r *Reconciler) pinnedCondition(ctx context.Context, st *observation) metav1.Condition {
	cpu := st.site.CPUOrDefault()
	if !wholeCPUs(cpu) {
		return metav1.Condition{Type: v1alpha1.ConditionPinned, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonFractionalCPU,
			Message: fmt.Sprintf("cpu %s is not a whole number of CPUs: the pods are Guaranteed but share the node's CPU pool", cpu.String())}
	}
	var pinned, unpinned, unknown []string
	for i := range st.pods {
		p := &st.pods[i]
		if !podstate.Ready(p) {
			continue
		}
		if p.Status.QOSClass != corev1.PodQOSGuaranteed {
			unpinned = append(unpinned, fmt.Sprintf("%s is %s, not Guaranteed", p.Name, p.Status.QOSClass))
			continue
		}
		s, err := r.podSample(ctx, st, p)
		switch {
		case err != nil:
			log.FromContext(ctx).V(1).Info("cannot read pod metrics", "pod", p.Name, "error", err.Error())
			unknown = append(unknown, fmt.Sprintf("%s: %v", p.Name, err))
		case s.Pinned:
			pinned = append(pinned, fmt.Sprintf("%s=%s", p.Name, s.CPUs))
		default:
			unpinned = append(unpinned, fmt.Sprintf("%s runs on shared CPUs %s", p.Name, s.CPUs))
		}
	}
	c := metav1.Condition{Type: v1alpha1.ConditionPinned}
	switch {
	case len(unpinned) > 0:
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonSharedCPUs
		c.Message = strings.Join(unpinned, "; ") + " (does the node's kubelet use the static CPU manager policy?)"
	case len(unknown) > 0:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonMetricsUnavailable, strings.Join(unknown, "; ")
		st.requeue(st.tun.scrapeRetry)
	case len(pinned) == 0:
		c.Status, c.Reason, c.Message = metav1.ConditionUnknown, v1alpha1.ReasonNoReadyPods, "no ready pod has reported its CPUs yet"
	default:
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonExclusiveCPUs
		c.Message = "workers pinned to exclusive CPUs: " + strings.Join(pinned, ", ")
	}
	return c
}

// podSample returns a pod's metrics sample, scraping it once per pod: the CPU set a pod is given is fixed for its
// life, so later reconciles cost no HTTP request.
func (r *Reconciler) podSample(ctx context.Context, st *observation, p *corev1.Pod) (podmetrics.Sample, error) {
	r.samplesMu.Lock()
	c, ok := r.samples[p.UID]
	r.samplesMu.Unlock()
	if ok {
		return c.sample, nil
	}
	s, err := r.scrapeInPass(ctx, st, p)
	if err != nil {
		return s, err
	}
	if s.CPUs == "" {
		return s, fmt.Errorf("the server reports no worker CPU set yet")
	}
	r.rememberCPUs(st, p, s)
	return s, nil
}

// scrape reads a pod's admin port: the one place the controller does.
func (r *Reconciler) scrape(ctx context.Context, p *corev1.Pod) (podmetrics.Sample, error) {
	if r.Scraper == nil {
		return podmetrics.Sample{}, fmt.Errorf("no metrics scraper configured")
	}
	return r.Scraper.Scrape(ctx, p)
}

// scrapeInPass reads a pod's admin port once per pass: the steps that read the same pod in a pass (content,
// pinning, the site value) share the answer, or the error.
func (r *Reconciler) scrapeInPass(ctx context.Context, st *observation, p *corev1.Pod) (podmetrics.Sample, error) {
	if s, ok := st.scraped[p.UID]; ok {
		return s, nil
	}
	s, err := r.scrape(ctx, p)
	if err != nil {
		return s, err
	}
	if st.scraped == nil {
		st.scraped = map[types.UID]podmetrics.Sample{}
	}
	st.scraped[p.UID] = s
	return s, nil
}

// rememberCPUs keeps a sample for the Pinned condition once it reports the pod's CPU set.
func (r *Reconciler) rememberCPUs(st *observation, p *corev1.Pod, s podmetrics.Sample) {
	if s.CPUs == "" {
		return
	}
	r.samplesMu.Lock()
	defer r.samplesMu.Unlock()
	if r.samples == nil {
		r.samples = map[types.UID]cachedSample{}
	}
	r.samples[p.UID] = cachedSample{site: types.NamespacedName{Namespace: st.site.Namespace, Name: st.site.Name}, sample: s, restarts: serverRestarts(p)}
}

// prunePodSamples forgets the samples of a site's pods that are gone.
func (r *Reconciler) prunePodSamples(site types.NamespacedName, pods []corev1.Pod) {
	live := make(map[types.UID]bool, len(pods))
	for i := range pods {
		live[pods[i].UID] = true
	}
	r.samplesMu.Lock()
	defer r.samplesMu.Unlock()
	for uid, c := range r.samples {
		if c.site == site && !live[uid] {
			delete(r.samples, uid)
		}
	}
	for uid, c := range r.siteValues {
		if c.site == site && !live[uid] {
			delete(r.siteValues, uid)
		}
	}
}

func (r *Reconciler) forgetSite(site types.NamespacedName) {
	r.prunePodSamples(site, nil)
	if r.gitWatch != nil {
		r.gitWatch.Forget(site)
	}
	r.pins.Forget(site)
	r.stalledBudget().Unstuck(site.Namespace + "/" + site.Name)
	r.contentMu.Lock()
	delete(r.contentKnown, site)
	delete(r.servedKnown, site)
	r.contentMu.Unlock()
}

// wholeCPUs reports whether a CPU quantity is a whole number of CPUs, the condition for exclusive CPUs under the
// kubelet's static CPU manager policy.
func wholeCPUs(q resource.Quantity) bool {
	return q.MilliValue() > 0 && q.MilliValue()%1000 == 0
}
