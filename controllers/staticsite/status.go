package staticsite

import (
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// rollout is the state of the Deployment's rollout, judged like `kubectl rollout status`.
type rollout struct {
	done    bool
	stalled bool
	// sameTemplate: the pods counted in the Deployment's status run the current pod template; what is left is a
	// change of replicas (pods still starting, or a generation the Deployment controller has not observed that this
	// pass did not change the template in).
	sameTemplate    bool
	reason, message string
}

func rolloutOf(site *v1alpha1.StaticSite, d *appsv1.Deployment, templateChanged bool) rollout {
	want := replicasOf(site)
	if d == nil {
		return rollout{reason: v1alpha1.ReasonCreating, message: "the Deployment is being created"}
	}
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == deploymentTimedOutReason {
			return rollout{stalled: true, reason: v1alpha1.ReasonProgressDeadlineExceeded, message: c.Message}
		}
	}
	s := d.Status
	switch {
	case s.ObservedGeneration < d.Generation:
		return rollout{sameTemplate: !templateChanged, reason: v1alpha1.ReasonProgressing, message: "the Deployment controller has not yet observed the latest spec"}
	case s.UpdatedReplicas < want:
		return rollout{reason: v1alpha1.ReasonRollingOut, message: fmt.Sprintf("%d of %d pods updated", s.UpdatedReplicas, want)}
	case s.Replicas > s.UpdatedReplicas:
		return rollout{reason: v1alpha1.ReasonRollingOut, message: fmt.Sprintf("%d old pods are terminating", s.Replicas-s.UpdatedReplicas)}
	case s.ReadyReplicas < want:
		return rollout{sameTemplate: true, reason: v1alpha1.ReasonWaitingForReadyPods, message: fmt.Sprintf("%d of %d pods ready", s.ReadyReplicas, want)}
	}
	return rollout{done: true}
}

// summarize rebuilds the controller's own status fields and conditions from what the pass saw. It is the one place
// Ready, Reconciling and Stalled are derived. It never touches status.autoscaling nor conditions it does not own.
func (r *Reconciler) summarize(st *state, passErr error) {
	site := st.site
	s := &site.Status
	// What the last complete pass reported: a scale-up keeps Ready only if no pod that was ready has been lost.
	wasReady, readyBefore := meta.IsStatusConditionTrue(s.Conditions, v1alpha1.ConditionReady), s.ReadyReplicas
	set := func(t string, status metav1.ConditionStatus, reason, message string) {
		meta.SetStatusCondition(&s.Conditions, metav1.Condition{Type: t, Status: status, Reason: reason, Message: message,
			ObservedGeneration: site.Generation, LastTransitionTime: metav1.NewTime(r.now())})
	}
	if passErr != nil {
		// A transient failure: say so and keep the rest of the status as it was; the pass is retried.
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonRetryingAfterError, passErr.Error())
		return
	}

	s.ObservedGeneration = site.Generation
	s.Selector = Selector(site)
	s.URL = URL(site)
	s.HTTPSURL = HTTPSURL(site)
	s.PublicURLs = st.publicURLs
	s.ContentSource = st.content.Source
	s.ContentRevision = st.content.Revision
	mem := st.memory.DeepCopy()
	s.Memory = &mem
	if d := st.deployment; d != nil {
		s.Replicas, s.ReadyReplicas, s.UpdatedReplicas = d.Status.Replicas, d.Status.ReadyReplicas, d.Status.UpdatedReplicas
	} else if !st.skipDeployment {
		s.Replicas, s.ReadyReplicas, s.UpdatedReplicas = 0, 0, 0
	}

	if p := st.contentProblem; p != nil {
		set(v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, p.reason, p.message)
	} else {
		set(v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, st.contentReason, st.contentMessage)
	}
	set(st.pinned.Type, st.pinned.Status, st.pinned.Reason, st.pinned.Message)
	// Rebuilt every pass, like every field above: absent when no pod could be read (the condition says why).
	s.Content = st.served
	inMemory := contentInMemoryCondition(st.served, st.notMeasured)
	set(inMemory.Type, inMemory.Status, inMemory.Reason, inMemory.Message)
	// The exposure conditions are informational: none of them changes Ready (see exposure_reasons.go).
	for _, o := range []struct {
		typ string
		c   *metav1.Condition
	}{{v1alpha1.ConditionTLSReady, st.tls}, {v1alpha1.ConditionRouteApplied, st.route}, {v1alpha1.ConditionPodMonitorApplied, st.podMonitor}} {
		if o.c == nil {
			meta.RemoveStatusCondition(&s.Conditions, o.typ)
		} else {
			set(o.typ, o.c.Status, o.c.Reason, o.c.Message)
		}
	}

	ro := rolloutOf(site, st.deployment, st.templateChanged)
	var stalled *problem
	switch {
	case st.contentProblem != nil:
		stalled = st.contentProblem
	case st.rejected != nil:
		stalled = st.rejected
	case ro.stalled:
		stalled = &problem{ro.reason, ro.message}
	}

	switch {
	case stalled != nil:
		set(v1alpha1.ConditionStalled, metav1.ConditionTrue, stalled.reason, stalled.message)
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.ConditionReconciling)
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, stalled.reason, stalled.message)
		st.requeue(r.stalledRetry())
	case ro.sameTemplate && wasReady && s.ReadyReplicas > 0 && s.ReadyReplicas >= readyBefore:
		// A scale-up: the new pods are starting, the ones serving before still serve. Not "no longer ready".
		reason := ro.reason
		if reason == v1alpha1.ReasonWaitingForReadyPods {
			reason = v1alpha1.ReasonScalingUp
		}
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.ConditionStalled)
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, ro.message)
		set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable,
			fmt.Sprintf("%d of %d pods ready (scaling up), serving %s at %s", s.ReadyReplicas, replicasOf(site), s.ContentRevision, s.URL))
	case !ro.done:
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.ConditionStalled)
		set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, ro.reason, ro.message)
		set(v1alpha1.ConditionReady, metav1.ConditionFalse, ro.reason, ro.message)
	default:
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.ConditionStalled)
		meta.RemoveStatusCondition(&s.Conditions, v1alpha1.ConditionReconciling)
		if want := replicasOf(site); want == 0 {
			set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonScaledToZero, "the site is scaled to zero replicas")
		} else {
			set(v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable,
				fmt.Sprintf("%d of %d pods ready, serving %s at %s", s.ReadyReplicas, want, s.ContentRevision, s.URL))
		}
	}
}

// recordTransitions emits an event for each meaningful change of the controller's conditions.
func (r *Reconciler) recordTransitions(before, after *v1alpha1.StaticSite) {
	changed := func(t string) (*metav1.Condition, bool) {
		old := meta.FindStatusCondition(before.Status.Conditions, t)
		now := meta.FindStatusCondition(after.Status.Conditions, t)
		if now == nil {
			return nil, false
		}
		return now, old == nil || old.Status != now.Status || old.Reason != now.Reason
	}
	if c, ok := changed(v1alpha1.ConditionReady); ok {
		if c.Status == metav1.ConditionTrue {
			r.Recorder.Event(after, corev1.EventTypeNormal, c.Reason, "Ready: "+c.Message)
		} else if old := meta.FindStatusCondition(before.Status.Conditions, v1alpha1.ConditionReady); old != nil && old.Status == metav1.ConditionTrue {
			r.Recorder.Event(after, corev1.EventTypeWarning, c.Reason, "No longer ready: "+c.Message)
		}
	}
	if c, ok := changed(v1alpha1.ConditionStalled); ok {
		r.Recorder.Event(after, corev1.EventTypeWarning, c.Reason, "Stalled: "+c.Message)
	}
	if c, ok := changed(v1alpha1.ConditionContentAvailable); ok && c.Status == metav1.ConditionTrue &&
		meta.FindStatusCondition(before.Status.Conditions, v1alpha1.ConditionContentAvailable) != nil {
		r.Recorder.Event(after, corev1.EventTypeNormal, c.Reason, "Content available again: "+c.Message)
	}
	if c, ok := changed(v1alpha1.ConditionPinned); ok && c.Status != metav1.ConditionUnknown {
		r.Recorder.Event(after, corev1.EventTypeNormal, eventPinnedPrefix+string(c.Status), c.Message)
	}
	r.recordContentInMemory(before, after)
	// A certificate, route or PodMonitor that goes bad is a Warning (the site still serves); its recovery is news.
	for _, t := range []string{v1alpha1.ConditionTLSReady, v1alpha1.ConditionRouteApplied, v1alpha1.ConditionPodMonitorApplied} {
		c, ok := changed(t)
		old := meta.FindStatusCondition(before.Status.Conditions, t)
		switch {
		case ok && c.Status == metav1.ConditionFalse:
			r.Recorder.Event(after, corev1.EventTypeWarning, c.Reason, t+" False: "+c.Message)
		case ok && c.Status == metav1.ConditionTrue && old != nil && old.Status == metav1.ConditionFalse:
			r.Recorder.Event(after, corev1.EventTypeNormal, c.Reason, t+" again: "+c.Message)
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
