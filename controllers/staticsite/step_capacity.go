package staticsite

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/capacitygate"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// Capacity measurement and the performance gate live in package capacitygate (its contract at its top). The gate's
// hold on the template runs inside the Deployment step (step_deployment.go); the measurement is the last step. Its
// State goes into the observation as it is: deriveStatus reads it, and the events and deletions wait for the
// status write.

// reconcileCapacity runs the measurement (capacitygate.Step.Measure) on what the earlier steps found.
func (r *Reconciler) reconcileCapacity(ctx context.Context, st *observation) error {
	ro := rolloutOf(st.deployment, desired.Replicas(st.site), st.templateChanged)
	cs, requeue, err := r.capacityStep().Measure(ctx, capacitygate.Pass{
		Site: st.site, Now: st.now, Content: capacityContent(st.content), Deployment: st.deployment, Pods: st.pods,
		Gate: st.gate, Rollout: capacitygate.Rollout{Done: ro.done, Message: ro.message},
	})
	st.capacity = cs
	if requeue > 0 {
		st.requeue(requeue)
	}
	return err
}

// capacityStep is the reconciler as package capacitygate reads and writes through it.
func (r *Reconciler) capacityStep() capacitygate.Step {
	return capacitygate.Step{Client: r.Client, Direct: r.directReader(), ConflictRetry: conflictRetry}
}

// capacityContent names the content for a template's identity.
func capacityContent(c desired.Content) capacitygate.Content {
	return capacitygate.Content{RollHash: c.RollHash, Revision: c.Revision}
}

// recordCapacityEvents runs once the status is written: the events of the pass's capacity results.
func (r *Reconciler) recordCapacityEvents(site *v1alpha1.StaticSite, cs *capacitygate.State) {
	for _, e := range cs.Events {
		r.Recorder.Event(site, e.Type, e.Reason, e.Message)
	}
}

// deleteObjects deletes the children of a measurement whose result is in the status.
func (r *Reconciler) deleteObjects(ctx context.Context, objs []client.Object) error {
	return capacitygate.Delete(ctx, r.Client, objs)
}
