package pool

import (
	"context"
	"fmt"
	"maps"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// indexRetells counts the re-tells per pool, on the operator's /metrics (controller-runtime's registry). A counter
// rather than an event: a re-tell is the kubelet's lag, not something a person acts on, and an event per pod per
// index change would bury the pool's events at scale; a counter that keeps rising (each pod bounded by maxRetells
// per revision) says the kubelets lag their ConfigMaps. One series per pool, removed with the pool.
var indexRetells = prometheus.NewCounterVec(prometheus.CounterOpts{
	Name: "hyperstatic_pool_index_retells_total",
	Help: "Times a pod of a StaticSitePool (a server pod or the fetcher) told of the pool's index revision, whose /sites still lacked sites of that index, was told it again (an annotation change that makes its kubelet remount the index).",
}, []string{"pool"})

func init() {
	crmetrics.Registry.MustRegister(indexRetells)
}

// retellIndex tells the index again to the pods that were told of it and still lack part of it (retell_rule.go).
// It runs after reconcileServed, on the answers that step read this pass: deliverIndex tells a pod once per
// revision, and the kubelet syncs at once, but a sync that comes before the kubelet has the new ConfigMap leaves
// the pod on the old index until its periodic resync (60-90 s, over two minutes seen in kind). What the pod says
// only decides whether its own annotation changes once more, bounded per pass and per revision.
func (r *Reconciler) retellIndex(ctx context.Context, o *observation) error {
	mem := r.memoryOf(o.pool.Name)
	plan := planRetells(o.indexLags, o.indexRevision, mem.told, o.now)
	maps.Copy(mem.told, plan.marks)
	for _, t := range plan.retell {
		if err := r.patchPodAnnotations(ctx, t.pod, map[string]string{annotationIndexRevision: t.value}); err != nil {
			delete(mem.told, t.pod.UID) // not told: the next pass reads what its annotation says
			return fmt.Errorf("tell pod %s of index %s again: %w", t.pod.Name, o.indexRevision, err)
		}
		indexRetells.WithLabelValues(o.pool.Name).Inc()
		log.FromContext(ctx).V(1).Info("told the index again to a pod that lacks part of it", "pod", t.pod.Name, "told", t.value)
	}
	if plan.wait > 0 {
		o.requeue(plan.wait)
	}
	return nil
}
