package staticsite

import (
	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
)

// recordPreviews emits the events of a change of status.previews (gitcontent.PreviewEvents decides them), after
// the status write that holds it: PreviewPublished, PreviewFailed (Warning), PreviewRemoved.
func (r *Reconciler) recordPreviews(before, after *v1alpha1.StaticSite) {
	for _, e := range gitcontent.PreviewEvents(before.Status.Previews, after.Status.Previews) {
		kind := corev1.EventTypeNormal
		if e.Warning {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Event(after, kind, e.Reason, e.Message)
	}
}
