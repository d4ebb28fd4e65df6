package pool

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch;patch

// annotationIndexRevision on a pool server pod and on the fetcher pod: the index revision (status.indexRevision)
// the operator last told the kubelet about.
const annotationIndexRevision = "hyperstatic.dev/index-revision"

// deliverIndex hastens the index into the pods that read it. The index reaches a pod through a projected volume
// of its shard ConfigMaps, which the kubelet refreshes only when it syncs the pod: on its periodic resync (every
// 60-90 s) or when the pod changes. A new site therefore waited up to a minute and a half for the fetcher to see
// it, and as long again for each pool pod (e2e scenario 20 saw one wait past two minutes). Any change of a pod
// makes the kubelet sync it at once, remounting its ConfigMap volumes (Kubernetes documents the trick for
// ConfigMaps mounted as volumes), so after each change of the index every pod that reads it gets the new
// revision in one annotation: one patch per pod per index change, whatever the number of sites; a pass that
// changes nothing patches nothing. Should the kubelet sync a pod before it has the new ConfigMap, its next
// resync still brings the index, as before.
func (r *Reconciler) deliverIndex(ctx context.Context, o *observation) error {
	if o.indexRevision == "" {
		return nil
	}
	ns := o.pool.Spec.Namespace
	for _, selector := range []map[string]string{poolplacement.PodSelector(o.pool.Name), poolplacement.FetcherSelector(o.pool.Name)} {
		pods := &corev1.PodList{}
		if err := r.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels(selector)); err != nil {
			return fmt.Errorf("list the pods that read the pool's index: %w", err)
		}
		for _, p := range podsBehind(pods.Items, o.indexRevision) {
			if err := r.patchPodAnnotations(ctx, p, map[string]string{annotationIndexRevision: o.indexRevision}); err != nil {
				return fmt.Errorf("tell pod %s of index %s: %w", p.Name, o.indexRevision, err)
			}
		}
	}
	return nil
}

// podsBehind are the pods, not terminating, whose annotation does not name index revision.
func podsBehind(pods []corev1.Pod, revision string) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp.IsZero() && p.Annotations[annotationIndexRevision] != revision {
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
