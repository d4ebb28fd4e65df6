package staticsite

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// rollout is the state of a Deployment's rollout, judged like `kubectl rollout status`. It is the operator's one
// judgment of "rolled out": the site's status (deriveStatus) and the server-image queue (rolloutWorld) both read it.
type rollout struct {
	done    bool
	stalled bool // the Deployment controller gave up: Progressing=False, ProgressDeadlineExceeded
	// exact: done, and no pod beyond the wanted count is left either (status.replicas and updatedReplicas equal the
	// wanted count). The queue needs it: a site whose surplus pods are still going does not give up its place yet.
	exact bool
	// sameTemplate: the pods counted in the Deployment's status run the current pod template; what is left is a
	// change of replicas (pods still starting, or a generation the Deployment controller has not observed that this
	// pass did not change the template in).
	sameTemplate    bool
	reason, message string
}

// rolloutOf judges d's rollout towards want replicas. templateChanged: this pass's apply changed the pod template
// (see observation.templateChanged). A nil d is a Deployment being created.
func rolloutOf(d *appsv1.Deployment, want int32, templateChanged bool) rollout {
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
	return rollout{done: true, exact: s.Replicas == want && s.UpdatedReplicas == want}
}

// deploymentRollout judges d against its own spec.replicas (the server-image queue sees Deployments, not sites).
func deploymentRollout(d *appsv1.Deployment) rollout {
	want := int32(desired.DefaultReplicas)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	return rolloutOf(d, want, false)
}

// rolledOut: the Deployment controller observed the latest spec and every wanted replica, and no other, runs it and
// is ready.
func rolledOut(d *appsv1.Deployment) bool {
	ro := deploymentRollout(d)
	return ro.done && ro.exact
}
