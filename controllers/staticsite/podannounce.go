package staticsite

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// What the server pods are told through their annotations. The kubelet refreshes a pod's ConfigMap volumes when it
// syncs the pod: about once a minute (60-90 s measured in kind), or at once when the pod's metadata changes. So when
// a ConfigMap a pod mounts changes, the operator sets an annotation naming the new revision on the pod (a merge patch
// of its metadata: nothing restarts), and the server, which watches the mounted files, reloads within a second:
//
//   - sitevalue.AnnotationRevision: the site value's revision, on pods that mount it (docs/design/site-value.md);
//   - AnnotationContentRevision: status.contentRevision, on the pods of a site whose content is ConfigMaps.
//
// The annotation is a nudge, not a source of truth: the pod reads the ConfigMap itself, and status says what each
// pod serves from what its server reports.

// AnnotationContentRevision is set on the server pods of a ConfigMap site to its content revision
// (status.contentRevision), so that the kubelet refreshes the projected volume when the ConfigMaps change.
const AnnotationContentRevision = "hyperstatic.dev/content-revision"

// reconcilePodAnnouncements sets the annotations each listed server pod lacks (podAnnouncements) in one patch.
func (r *Reconciler) reconcilePodAnnouncements(ctx context.Context, st *observation) error {
	for i := range st.pods {
		p := &st.pods[i]
		want := podAnnouncements(st, p)
		if len(want) == 0 {
			continue
		}
		if err := r.announce(ctx, p, want); err != nil {
			if !apierrors.IsForbidden(err) {
				return err
			}
			// RBAC without pods/patch (an older chart's role): the pods refresh at the kubelet's pace; the site
			// value's condition says so.
			log.FromContext(ctx).Info("may not annotate a server pod", "pod", p.Name, "error", err.Error())
			if st.siteValue != nil {
				st.siteValue.unannounced = append(st.siteValue.unannounced, p.Name+": "+err.Error())
			}
		}
	}
	return nil
}

// podAnnouncements are the annotations a pod should carry and does not, by key.
func podAnnouncements(st *observation, p *corev1.Pod) map[string]string {
	want := map[string]string{}
	if sv := st.siteValue; sv != nil && sv.notApplied == nil && mountsSiteValue(p, st.site) {
		want[sitevalue.AnnotationRevision] = sv.rendered.Revision
	}
	if st.content.Source == v1alpha1.ContentSourceConfigMaps && st.content.Revision != "" {
		want[AnnotationContentRevision] = st.content.Revision
	}
	maps.DeleteFunc(want, func(k, v string) bool { return p.Annotations[k] == v })
	return want
}

// announce sets annotations on a pod: a merge patch of its metadata only, so no field of the pod's spec is touched
// and nothing restarts. A pod gone meanwhile is no error.
func (r *Reconciler) announce(ctx context.Context, p *corev1.Pod, annotations map[string]string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": annotations}})
	if err != nil {
		return err
	}
	if err := r.Patch(ctx, p, client.RawPatch(types.MergePatchType, body)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("annotate pod %s with %v: %w", p.Name, slices.Sorted(maps.Keys(annotations)), err)
	}
	log.FromContext(ctx).V(1).Info("told pod of new revisions", "pod", p.Name, "annotations", annotations)
	return nil
}
