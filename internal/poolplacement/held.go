package poolplacement

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// A terminating pool pod's held drain (drain.go, steps 4 and 5), as both controllers read it from the pod: the pool
// controller releases it and counts its traffic, the site controller lists it in the slices while nothing else can
// serve. One definition, so the two never disagree on which pods still serve.

// HoldingDrain reports whether p is terminating and still holds its drain: not released yet
// (AnnotationDrainReleased) and still able to run (not Succeeded or Failed; a pod that never got an IP never
// served).
func HoldingDrain(p *corev1.Pod) bool {
	_, released := p.Annotations[AnnotationDrainReleased]
	return !p.DeletionTimestamp.IsZero() && !released && p.Status.PodIP != "" &&
		p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed
}

// ServingHeld reports whether p holds its drain and was ready when its deletion was asked for: its Ready
// condition still True, or turned False since then. The server fails its readiness at its SIGTERM on purpose (the
// cluster's own slices drop it), so a held pod's Ready condition says nothing of what it serves; when it turned
// does. A pod that was not ready when it was deleted (never ready: its puller had not pulled every site's tree; or
// failing) must not be sent anything: it may not hold the sites at all.
func ServingHeld(p *corev1.Pod) bool {
	if !HoldingDrain(p) {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			// Whole seconds, the deletion's from the API server's clock and the transition's from the kubelet's: the
			// server's readiness fails 4-6 s after its SIGTERM (three failed probes, 2 s apart), a margin wider
			// than the rounding and a node's usual clock skew.
			return c.Status == corev1.ConditionTrue || !c.LastTransitionTime.Time.Before(DeletionRequested(p))
		}
	}
	return false // no Ready condition: never ready
}

// DeletionRequested is when p's deletion was asked for: its deletion timestamp is that moment plus its grace.
func DeletionRequested(p *corev1.Pod) time.Time {
	t := p.DeletionTimestamp.Time
	if g := p.DeletionGracePeriodSeconds; g != nil {
		t = t.Add(-time.Duration(*g) * time.Second)
	}
	return t
}
