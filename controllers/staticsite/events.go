package staticsite

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// Event reasons the StaticSite controller records besides condition transitions (which use the condition's own
// reason, see api/v1alpha1/staticsite_reasons.go).
const (
	// eventCreated, eventUpdated, eventDeleted: a child object (Deployment, Service, PodDisruptionBudget) was
	// created, changed to the desired state, or deleted because it is no longer wanted.
	eventCreated = "Created"
	eventUpdated = "Updated"
	eventDeleted = "Deleted"
	// eventPinnedPrefix + the Pinned condition's status ("PinnedTrue", "PinnedFalse") when it changes.
	eventPinnedPrefix = "Pinned"
	// eventContentChanged: status.contentRevision moved to a new revision.
	eventContentChanged = "ContentChanged"
	// eventContentPartlyOnDisk (Warning): ContentInMemory turned False; the message names the bytes served from
	// disk and the memory limit that would hold the site. eventContentInMemory (Normal): it turned True after False.
	eventContentPartlyOnDisk = "ContentPartlyOnDisk"
	eventContentInMemory     = "ContentInMemory"
	// eventGitRevisionServed (Normal): every ready pod of a Git site serves a commit they did not all serve before.
	eventGitRevisionServed = "GitRevisionServed"
	// eventMovedToPool, eventMovedToDedicated (Normal): status.placement changed: the site runs in a pool now (or
	// another pool), or on its own pods again.
	eventMovedToPool      = "MovedToPool"
	eventMovedToDedicated = "MovedToDedicated"
)

// deploymentTimedOutReason is the reason the Deployment controller puts on Progressing=False when a rollout passes
// spec.progressDeadlineSeconds (k8s.io/kubernetes' deploymentutil.TimedOutReason, not importable from here).
const deploymentTimedOutReason = "ProgressDeadlineExceeded"

func (r *Reconciler) recordApply(site *v1alpha1.StaticSite, kind string, res applyResult) {
	r.recordApplyOf(site, kind, site.Name, res)
}

// recordApplyOf is recordApply for a child named name (a Git site's <site>-git objects).
func (r *Reconciler) recordApplyOf(site *v1alpha1.StaticSite, kind, name string, res applyResult) {
	switch res {
	case applyCreated:
		r.Recorder.Eventf(site, corev1.EventTypeNormal, eventCreated, "Created %s %s", kind, name)
	case applyUpdated:
		r.Recorder.Eventf(site, corev1.EventTypeNormal, eventUpdated, "Updated %s %s to the desired state", kind, name)
	}
}

// polarity is the StaticSite conditions' polarity, declared beside their types.
var polarity = reconcile.NewPolarity(v1alpha1.StaticSiteAbnormalTrueConditions)

// recordTransitions emits an event for each meaningful change of the controller's conditions between the site as
// the pass read it (before) and as it was just written (after). It runs only once the status write is in
// (reconcile.WriteStatus), so a lost write neither repeats nor invents an event.
func (r *Reconciler) recordTransitions(before, after *v1alpha1.StaticSite) {
	transition := func(t string) reconcile.Transition {
		return reconcile.TransitionOf(before.Status.Conditions, after.Status.Conditions, t)
	}
	if tr := transition(v1alpha1.ConditionReady); tr.Changed() {
		if c := *tr.After; c.Status == metav1.ConditionTrue {
			r.Recorder.Event(after, polarity.EventType(c), c.Reason, "Ready: "+c.Message)
		} else if tr.Was(metav1.ConditionTrue) {
			r.Recorder.Event(after, polarity.EventType(c), c.Reason, "No longer ready: "+c.Message)
		}
	}
	stalled := transition(v1alpha1.ConditionStalled)
	if stalled.Changed() { // present only while True
		r.Recorder.Event(after, polarity.EventType(*stalled.After), stalled.After.Reason, "Stalled: "+stalled.After.Message)
	}
	switch tr := transition(v1alpha1.ConditionContentAvailable); {
	case tr.Changed() && tr.Before != nil && tr.After.Status == metav1.ConditionTrue && !tr.Was(metav1.ConditionUnknown):
		r.Recorder.Event(after, polarity.EventType(*tr.After), tr.After.Reason, "Content available again: "+tr.After.Message)
	case tr.Changed() && tr.After.Status == metav1.ConditionFalse && !stalled.Changed():
		// Content that cannot be taken while the site keeps serving (a Git fetch failure once a commit is served):
		// no Stalled event says it, this Warning does. Each new reason is news, as for TLSReady.
		r.Recorder.Event(after, polarity.EventType(*tr.After), tr.After.Reason, "ContentAvailable False: "+tr.After.Message)
	}
	r.recordPlacement(before, after, stalled)
	r.recordAutoPlacement(before, after) // poolauto.go
	r.recordGitRevisionServed(before, after)
	r.recordDeployPinned(before, after) // deploystatus.go
	r.recordPreviews(before, after)     // previewevents.go
	if tr := transition(v1alpha1.ConditionPinned); tr.Changed() && tr.After.Status != metav1.ConditionUnknown {
		// Pinned=False is by design on fractional CPUs: news either way, never a Warning.
		r.Recorder.Event(after, corev1.EventTypeNormal, eventPinnedPrefix+string(tr.After.Status), tr.After.Message)
	}
	r.recordContentInMemory(before, after)
	r.recordCertificate(before, after) // eventscertificate.go
	// A certificate, route or PodMonitor that goes bad is a Warning (the site still serves); its recovery is news.
	// Each new set of hostname conflicts is news too (the message names each hostname and the site holding it).
	// A refused site value is a Warning too (the pods keep serving the previous one); its recovery is news.
	for _, t := range []string{v1alpha1.ConditionTLSReady, v1alpha1.ConditionRouteApplied, v1alpha1.ConditionPodMonitorApplied,
		v1alpha1.ConditionSiteValueApplied, v1alpha1.ConditionAccessApplied} {
		tr := transition(t)
		switch {
		case tr.Changed() && tr.After.Status == metav1.ConditionFalse, newHostnameConflict(tr):
			r.Recorder.Event(after, polarity.EventType(*tr.After), tr.After.Reason, t+" False: "+tr.After.Message)
		case tr.Changed() && tr.After.Status == metav1.ConditionTrue && tr.Was(metav1.ConditionFalse):
			r.Recorder.Event(after, polarity.EventType(*tr.After), tr.After.Reason, t+" again: "+tr.After.Message)
		}
	}
	if old, now := before.Status.ContentRevision, after.Status.ContentRevision; old != "" && old != now &&
		!strings.HasPrefix(now, old+"@") { // learning the digest of the same image is no change
		r.Recorder.Eventf(after, corev1.EventTypeNormal, eventContentChanged, "Content revision %s → %s", before.Status.ContentRevision, after.Status.ContentRevision)
	}
}

// recordContentInMemory: a Warning when part of the site turns out to be served from disk (the message names the
// bytes and the memory limit that would hold them), a Normal event when all of it is in memory again. Events mark
// changes between known states, never a pass: Unknown in between (a pod that could not be read for a moment, a
// rollout to a new memory limit, when the old pods no longer count and the new ones are not ready) neither records
// anything nor makes the next known state news. The last known state is kept in memory, like the pods' CPU sets;
// after an operator restart the condition as the last pass left it stands in.
func (r *Reconciler) recordContentInMemory(before, after *v1alpha1.StaticSite) {
	now := meta.FindStatusCondition(after.Status.Conditions, v1alpha1.ConditionContentInMemory)
	if now == nil || now.Status == metav1.ConditionUnknown {
		return
	}
	key := types.NamespacedName{Namespace: after.Namespace, Name: after.Name}
	r.contentMu.Lock()
	was, ok := r.contentKnown[key]
	if r.contentKnown == nil {
		r.contentKnown = map[types.NamespacedName]metav1.ConditionStatus{}
	}
	r.contentKnown[key] = now.Status
	r.contentMu.Unlock()
	if old := meta.FindStatusCondition(before.Status.Conditions, v1alpha1.ConditionContentInMemory); !ok && old != nil {
		was = old.Status
	}
	switch {
	case now.Status == metav1.ConditionFalse && was != metav1.ConditionFalse:
		r.Recorder.Event(after, corev1.EventTypeWarning, eventContentPartlyOnDisk, now.Message)
	case now.Status == metav1.ConditionTrue && was == metav1.ConditionFalse:
		r.Recorder.Event(after, corev1.EventTypeNormal, eventContentInMemory, now.Message)
	}
}

// recordGitRevisionServed: a Normal event when every ready pod of a Git site serves a commit they did not all serve
// before (the first one included). The last such commit is kept in memory per site, like ContentInMemory's state,
// so a reading that comes and goes (status.content is absent while no pod's metrics can be read) does not repeat
// it; after an operator restart the status as stored stands in.
func (r *Reconciler) recordGitRevisionServed(before, after *v1alpha1.StaticSite) {
	var now *v1alpha1.ContentRevision
	if c := after.Status.Content; c != nil {
		now = c.Revision
	}
	if !gitcontent.AllServe(now) {
		return
	}
	key := types.NamespacedName{Namespace: after.Namespace, Name: after.Name}
	r.contentMu.Lock()
	was, ok := r.servedKnown[key]
	if r.servedKnown == nil {
		r.servedKnown = map[types.NamespacedName]string{}
	}
	r.servedKnown[key] = now.Commit
	r.contentMu.Unlock()
	if c := before.Status.Content; !ok && c != nil && gitcontent.AllServe(c.Revision) {
		was = c.Revision.Commit
	}
	if was == now.Commit {
		return
	}
	msg := "commit " + now.ShortCommit
	if now.Ref != "" {
		msg += " of " + now.Ref
	}
	if now.CommitTime != nil {
		msg += " (committed " + now.CommitTime.UTC().Format(time.RFC3339) + ")"
	}
	r.Recorder.Eventf(after, corev1.EventTypeNormal, eventGitRevisionServed, "%s is served by all %d ready pods", msg, now.ReadyPods)
}

// newHostnameConflict: RouteApplied stays HostnameConflict with another message (another hostname or holder).
func newHostnameConflict(tr reconcile.Transition) bool {
	return tr.After != nil && tr.After.Reason == v1alpha1.ReasonHostnameConflict && tr.Before != nil &&
		tr.Before.Reason == v1alpha1.ReasonHostnameConflict && tr.Before.Message != tr.After.Message
}

// recordPlacement: a Normal event when the site starts to run somewhere else (status.placement's mode or pool), a
// Warning when Placed turns False without the site being Stalled (a refusal says it in the Stalled event), and
// news when it is True again.
func (r *Reconciler) recordPlacement(before, after *v1alpha1.StaticSite, stalled reconcile.Transition) {
	was, now := before.Status.Placement, after.Status.Placement
	if now != nil && (was == nil || was.Mode != now.Mode || was.Pool != now.Pool) {
		switch {
		case now.Mode == v1alpha1.PlacementPool:
			r.Recorder.Eventf(after, corev1.EventTypeNormal, eventMovedToPool, "the site runs in StaticSitePool %s: it has no pod of its own", now.Pool)
		case was != nil:
			r.Recorder.Event(after, corev1.EventTypeNormal, eventMovedToDedicated, "the site runs on its own pods again")
		}
	}
	switch tr := reconcile.TransitionOf(before.Status.Conditions, after.Status.Conditions, v1alpha1.ConditionPlaced); {
	case tr.Changed() && tr.After.Status == metav1.ConditionFalse && !stalled.Changed():
		r.Recorder.Event(after, polarity.EventType(*tr.After), tr.After.Reason, "Placed False: "+tr.After.Message)
	case tr.Changed() && tr.After.Status == metav1.ConditionTrue && tr.Was(metav1.ConditionFalse):
		r.Recorder.Event(after, polarity.EventType(*tr.After), tr.After.Reason, "Placed again: "+tr.After.Message)
	}
}
