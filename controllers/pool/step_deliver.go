package pool

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;patch

// annotationIndexRevision on a pool server pod and on the fetcher pod: the index revision (status.indexRevision)
// the operator last told the kubelet about, "<revision>/<n>" once told it again n times (toldValue).
const annotationIndexRevision = "hyperstatic.dev/index-revision"

// deliverIndex hastens the index into the pods that read it. The index reaches a pod through a projected volume
// of its shard ConfigMaps, which the kubelet refreshes only when it syncs the pod: on its periodic resync (every
// 60-90 s) or when the pod changes. A new site therefore waited up to a minute and a half for the fetcher to see
// it, and as long again for each pool pod (e2e scenario 20 saw one wait past two minutes). Any change of a pod
// makes the kubelet sync it at once, remounting its ConfigMap volumes (Kubernetes documents the trick for
// ConfigMaps mounted as volumes), so after each change of the index every pod that reads it gets the new
// revision in one annotation: one patch per pod per index change, whatever the number of sites; a pass that
// changes nothing patches nothing.
//
// The kubelet may sync a pod before its own copy of the new ConfigMap arrived: the pod then keeps the old index
// until the next resync, and its annotation already names the revision, so this step has nothing more to say.
// What the pod serves says it: retellIndex (step_retell.go), after reconcileServed read every pod's /sites, tells
// again a pod that still lacks sites of the revision 10 s after it was told, at most three times per revision.
// The time of each tell is kept in the pool's memory (the marks of pods no longer listed dropped here); the count
// is in the annotation, so it holds across an operator restart.
func (r *Reconciler) deliverIndex(ctx context.Context, o *observation) error {
	if o.indexRevision == "" {
		return nil
	}
	mem := r.memoryOf(o.pool.Name)
	listed := map[types.UID]bool{}
	ns := o.pool.Spec.Namespace
	for _, selector := range []map[string]string{poolplacement.PodSelector(o.pool.Name), poolplacement.FetcherSelector(o.pool.Name)} {
		pods := &corev1.PodList{}
		if err := r.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
			return fmt.Errorf("list the pods that read the pool's index: %w", err)
		}
		for i := range pods.Items {
			listed[pods.Items[i].UID] = true
		}
		for _, p := range podsBehind(pods.Items, o.indexRevision) {
			if err := r.patchPodAnnotations(ctx, p, map[string]string{annotationIndexRevision: toldValue(o.indexRevision, 0)}); err != nil {
				return fmt.Errorf("tell pod %s of index %s: %w", p.Name, o.indexRevision, err)
			}
			mem.told[p.UID] = toldMark{revision: o.indexRevision, since: o.now}
		}
	}
	maps.DeleteFunc(mem.told, func(uid types.UID, _ toldMark) bool { return !listed[uid] })
	return nil
}

// podsBehind are the pods, not terminating, whose annotation does not name index revision (told once or again).
func podsBehind(pods []corev1.Pod, revision string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if told, _ := parseTold(p.Annotations[annotationIndexRevision]); p.DeletionTimestamp.IsZero() && told != revision {
			out = append(out, p)
		}
	}
	return out
}

// patchPodAnnotations sets the annotations of p given a value and removes those given "", in a merge patch of
// those keys alone, without a resourceVersion: nothing else of the pod is sent, so the kubelet's status writes
// cannot make it conflict. A pod already gone is no error.
func (r *Reconciler) patchPodAnnotations(ctx context.Context, p *corev1.Pod, set map[string]string) error {
	before := p.DeepCopy()
	for k, v := range set {
		switch {
		case v == "":
			delete(p.Annotations, k)
		case p.Annotations == nil:
			p.Annotations = map[string]string{k: v}
		default:
			p.Annotations[k] = v
		}
	}
	if err := r.Patch(ctx, p, client.MergeFrom(before)); err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}
