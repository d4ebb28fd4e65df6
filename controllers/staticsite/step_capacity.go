package staticsite

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/capacitygate"
	"hyperstatic.dev/hyperstatic/internal/capacity"
)

// Capacity measurement and the performance gate live in package capacitygate (its contract at its top). The gate's
// hold on the template runs inside the Deployment step (step_deployment.go); the measurement is the last step.

// capacityState is what the capacity step measured and decided in a pass (capacitygate.State): deriveStatus puts
// it into the status, and the events and deletions wait for the status write.
type capacityState struct {
	wanted          bool
	status          *v1alpha1.CapacityStatus
	gate            *v1alpha1.PerformanceGateStatus
	measured        metav1.Condition
	measuringCanary string
	events          []capacitygate.Event
	cleanup         []client.Object
}

// reconcileCapacity runs the measurement (capacitygate.Step.Measure) on what the earlier steps found.
func (r *Reconciler) reconcileCapacity(ctx context.Context, st *observation) error {
	ro := rolloutOf(st.deployment, replicasOf(st.site), st.templateChanged)
	cs, requeue, err := r.capacityStep().Measure(ctx, capacitygate.Pass{
		Site: st.site, Now: st.now, Content: st.content.capacityContent(), Deployment: st.deployment, Pods: st.pods,
		ServingPods: selectorLabels(st.site), Gate: st.gate, Rollout: capacitygate.Rollout{Done: ro.done, Message: ro.message},
	})
	st.capacity = capacityState{wanted: cs.Wanted, status: cs.Status, gate: cs.Gate, measured: cs.Measured,
		measuringCanary: cs.MeasuringCanary, events: cs.Events, cleanup: cs.Cleanup}
	if requeue > 0 {
		st.requeue(requeue)
	}
	return err
}

// capacityStep is the reconciler as package capacitygate reads and writes through it.
func (r *Reconciler) capacityStep() capacitygate.Step {
	return capacitygate.Step{Client: r.Client, Direct: r.directReader(), ConflictRetry: conflictRetry, Conventions: capacityConventions}
}

// capacityConventions are how this package builds a site's pods, as the measurement and the gate read them.
var capacityConventions = capacitygate.Conventions{
	Template:   capacity.TemplateKeys{ServerContainer: containerName, ContentHashAnnotation: AnnotationContentHash},
	SiteVolume: siteVolumeName, FieldOwner: FieldOwner,
}

// capacityContent names the content for a template's identity.
func (c Content) capacityContent() capacitygate.Content {
	return capacitygate.Content{RollHash: c.RollHash, Revision: c.Revision}
}

// recordCapacityEvents runs once the status is written: the events of the pass's capacity results.
func (r *Reconciler) recordCapacityEvents(site *v1alpha1.StaticSite, cs *capacityState) {
	for _, e := range cs.events {
		r.Recorder.Event(site, e.Type, e.Reason, e.Message)
	}
}

// deleteObjects deletes the children of a measurement whose result is in the status.
func (r *Reconciler) deleteObjects(ctx context.Context, objs []client.Object) error {
	return capacitygate.Delete(ctx, r.Client, objs)
}

// gateSpec is spec.rollout.performanceGate, nil when the gate is off (status.go).
func gateSpec(site *v1alpha1.StaticSite) *v1alpha1.PerformanceGateSpec {
	return capacitygate.GateSpec(site)
}
