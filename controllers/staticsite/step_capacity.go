package staticsite

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/capacity"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// measurementJob is the one measurement a site runs at a time.
type measurementJob struct {
	role       string // capacityRoleProbe (the serving template) or capacityRoleCanary (the gate's candidate)
	identity   v1alpha1.TemplateIdentity
	template   corev1.PodTemplateSpec
	servingPod string // spec.capacity.target ServingPod: the serving pod loaded ("": a pod of its own)
	request    string // the measure-capacity annotation answered
}

// +kubebuilder:rbac:groups="",resources=pods,verbs=create;delete
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=benchmarks,verbs=get;list;watch;create;delete

// reconcileCapacity measures what one pod of the site serves (status.capacity) and, with the performance gate,
// measures a held candidate template on a canary pod and decides whether it may roll out. One measurement at a
// time: the serving template's first when it has no current figure, then the candidate's. See
// docs/design/capacity.md.
func (r *Reconciler) reconcileCapacity(ctx context.Context, st *observation) error {
	site := st.site
	pods, benches, err := r.measurementChildren(ctx, site)
	if err != nil {
		return err
	}
	if !measurementWanted(site) {
		st.capacity = capacityState{}
		return r.deleteMeasurementChildren(ctx, pods, benches, nil)
	}
	cs := &st.capacity
	*cs = capacityState{wanted: true, status: site.Status.Capacity.DeepCopy()}
	if gateSpec(site) != nil {
		cs.gate = site.Status.PerformanceGate.DeepCopy()
	}
	if old := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionCapacityMeasured); old != nil {
		cs.measured = *old
	}
	if st.deployment == nil {
		if cs.measured.Type == "" {
			cs.measured = capacityCondition(metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity, "waiting for the site's Deployment")
		}
		return r.deleteMeasurementChildren(ctx, pods, benches, nil)
	}
	serving := templateIdentity(&st.deployment.Spec.Template, st.content)
	promoteCanary(cs, serving)
	if cs.status != nil {
		cs.status.Current = cs.status.MeasuredAgainst.ID == serving.ID
	}
	job := chooseMeasurement(st, serving)
	if err := r.deleteMeasurementChildren(ctx, pods, benches, job); err != nil {
		return err
	}
	if job == nil {
		return nil
	}
	return r.runMeasurement(ctx, st, job, pods, benches)
}

// promoteCanary: once the Deployment runs a candidate the gate measured, the canary's figure is the serving
// template's capacity; no second measurement.
func promoteCanary(cs *capacityState, serving v1alpha1.TemplateIdentity) {
	g := cs.gate
	if g == nil || g.Canary == nil || g.Candidate.ID != serving.ID || (g.Phase != v1alpha1.GatePassed && g.Phase != v1alpha1.GateOverridden) {
		return
	}
	if cs.status != nil && cs.status.MeasuredAgainst.ID == serving.ID {
		return
	}
	promoted := &v1alpha1.CapacityStatus{CapacityMeasurement: *g.Canary.DeepCopy()}
	if cs.status != nil {
		promoted.Request = cs.status.Request // answered already: the annotation asks for nothing new
	}
	cs.status = promoted
	cs.measured = measuredCondition(promoted)
}

// chooseMeasurement picks the measurement to run now, or nil, and sets what the status says meanwhile.
func chooseMeasurement(st *observation, serving v1alpha1.TemplateIdentity) *measurementJob {
	cs, site := &st.capacity, st.site
	request := site.Annotations[v1alpha1.AnnotationMeasureCapacity]
	needBaseline := cs.status == nil || !cs.status.Current || (request != "" && request != cs.status.Request)
	canary := canaryWanted(st)
	if needBaseline {
		if retry, failed := failedRecently(cs.measured, st.now); failed {
			st.requeue(retry.Sub(st.now))
			if canary {
				cs.gate.Message = "waiting for a measurement of the serving template to compare with: " + cs.measured.Message
			}
			return nil
		}
		job := &measurementJob{role: capacityRoleProbe, identity: serving, template: st.deployment.Spec.Template, request: request}
		if capacityTarget(site) == v1alpha1.CapacityTargetServingPod {
			if job.servingPod = readyServingPod(st, serving.ID); job.servingPod == "" {
				cs.measured = capacityCondition(metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity, "waiting for a ready serving pod to load")
				return nil
			}
		}
		if canary {
			cs.gate.Message = fmt.Sprintf("candidate %s waits: the serving template %s is measured first", cs.gate.Candidate.ID, serving.ID)
		}
		return job
	}
	cs.measured = measuredCondition(cs.status)
	if canary {
		return &measurementJob{role: capacityRoleCanary, identity: st.gate.desired, template: st.gate.desiredTemplate}
	}
	return nil
}

// canaryWanted updates the gate's status for the desired template and says whether its canary is to be measured.
func canaryWanted(st *observation) bool {
	v, cs := st.gate, &st.capacity
	if v == nil {
		return false
	}
	if v.serving.ID == v.desired.ID {
		// The spec went back to the serving template: a candidate still measured or blocked was withdrawn, and
		// nothing is blocked any more. A Passed or Overridden decision stays as the record of the last rollout.
		if g := cs.gate; g != nil && g.Candidate.ID != v.desired.ID && (g.Phase == v1alpha1.GateMeasuring || g.Phase == v1alpha1.GateBlocked) {
			cs.gate = nil
		}
		return false
	}
	if cs.gate == nil || cs.gate.Candidate.ID != v.desired.ID {
		cs.gate = &v1alpha1.PerformanceGateStatus{Candidate: v.desired, Phase: v1alpha1.GateMeasuring,
			Message: fmt.Sprintf("measuring candidate %s on a canary pod", v.desired.ID)}
	}
	g := cs.gate
	if v.overridden {
		if g.Phase != v1alpha1.GateOverridden {
			g.Phase, g.DecidedAt = v1alpha1.GateOverridden, &metav1.Time{Time: st.now}
			g.Message = fmt.Sprintf("candidate %s rolls out by the %s annotation, whatever its measurement says", v.desired.ID, v1alpha1.AnnotationPerformanceGateOverride)
			cs.event(corev1.EventTypeNormal, v1alpha1.ReasonGateOverridden, "%s", g.Message)
		}
		return false
	}
	if !v.held {
		return false
	}
	switch g.Phase {
	case v1alpha1.GateMeasuring:
		return true
	case v1alpha1.GateBlocked:
		if g.Canary != nil || g.DecidedAt == nil {
			return false // measured and blocked: only a new candidate or the override moves it
		}
		retry := g.DecidedAt.Add(measurementRetry)
		if st.now.Before(retry) {
			st.requeue(retry.Sub(st.now))
			return false
		}
		g.Phase, g.DecidedAt = v1alpha1.GateMeasuring, nil
		g.Message = fmt.Sprintf("measuring candidate %s on a canary pod again", v.desired.ID)
		return true
	}
	return false
}

// failedRecently: the last measurement of the serving template failed less than measurementRetry ago (by the
// condition's transition time, which a measurement in between, Unknown, renews); it returns when to try again.
func failedRecently(c metav1.Condition, now time.Time) (time.Time, bool) {
	if c.Status != metav1.ConditionFalse || (c.Reason != v1alpha1.ReasonMeasurementFailed && c.Reason != v1alpha1.ReasonProbeNotReady) {
		return time.Time{}, false
	}
	retry := c.LastTransitionTime.Add(measurementRetry)
	return retry, now.Before(retry)
}

// readyServingPod is a ready serving pod of the template id (first by name), "" when there is none.
func readyServingPod(st *observation, id string) string {
	var names []string
	for i := range st.pods {
		p := &st.pods[i]
		if podstate.Ready(p) && capacityIdentityOfPod(p, st.content) == id {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// capacityIdentityOfPod is the template id of a pod, as its spec and annotations are the template's.
func capacityIdentityOfPod(p *corev1.Pod, content Content) string {
	t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: p.Annotations}, Spec: p.Spec}
	return templateIdentity(&t, content).ID
}

// runMeasurement moves job one step: its pod, once Ready its Benchmark, once done the result.
func (r *Reconciler) runMeasurement(ctx context.Context, st *observation, job *measurementJob, pods []corev1.Pod, benches []v1alpha1.Benchmark) error {
	site := st.site
	name := measurementName(site.Name, job.identity.ID)
	target := job.servingPod
	var pod *corev1.Pod
	var started time.Time
	if target == "" {
		target = name
		pod = findPod(pods, name)
		if pod == nil {
			// A Benchmark without its pod (someone deleted the pod) would report on a pod that is gone.
			if b := findBenchmark(benches, name); b != nil {
				return r.deleteObjects(ctx, []client.Object{b})
			}
			if waitForRollout(st, job) {
				return nil
			}
			created, err := r.createMeasurementChild(ctx, st, job, measurementPod(site, job.template, job.identity.ID, job.role, name, st.now))
			if err != nil || !created {
				return err
			}
			st.requeue(probeReadyTimeout)
			measuring(st, job, fmt.Sprintf("starting pod %s", name))
			return nil
		}
		started = startedAt(pod)
		if !podstate.Ready(pod) {
			deadline := started.Add(probeReadyTimeout)
			if !st.now.Before(deadline) {
				measurementFailed(st, job, v1alpha1.ReasonProbeNotReady, fmt.Sprintf("pod %s did not become Ready within %s", name, probeReadyTimeout), pod)
				return nil
			}
			st.requeue(deadline.Sub(st.now))
			measuring(st, job, fmt.Sprintf("waiting for pod %s to become Ready", name))
			return nil
		}
	}
	bench := findBenchmark(benches, name)
	if bench == nil {
		if pod == nil && waitForRollout(st, job) {
			return nil
		}
		created, err := r.createMeasurementChild(ctx, st, job, measurementBenchmark(site, job.identity.ID, job.role, name, target, st.now))
		if err == nil && created {
			measuring(st, job, fmt.Sprintf("Benchmark %s loads pod %s", name, target))
		}
		return err
	}
	if started.IsZero() {
		started = startedAt(bench)
	}
	children := []client.Object{bench}
	if pod != nil {
		children = append(children, pod)
	}
	switch outcome, why := capacity.OutcomeOf(bench); outcome {
	case capacity.Running:
		measuring(st, job, fmt.Sprintf("Benchmark %s loads pod %s", name, target))
	case capacity.Failed:
		measurementFailed(st, job, v1alpha1.ReasonMeasurementFailed, fmt.Sprintf("Benchmark %s failed: %s", name, why), children...)
	default:
		m, err := capacity.Compute(bench.Status.Summary, capacity.Result{Template: job.identity, LatencyObjective: latencyObjective(site),
			Benchmark: name, Started: started, At: st.now})
		if err != nil {
			measurementFailed(st, job, v1alpha1.ReasonMeasurementFailed, fmt.Sprintf("Benchmark %s: %v", name, err), children...)
		} else {
			measured(st, job, m, children...)
		}
	}
	return nil
}

// waitForRollout: a measurement starts only once the Deployment's rollout is complete, so it neither competes with
// the rollout's new pods for the nodes' CPU nor loads a serving pod that is about to go. The Deployment's status
// change wakes the pass.
func waitForRollout(st *observation, job *measurementJob) bool {
	if ro := rolloutOf(st.deployment, replicasOf(st.site), st.templateChanged); !ro.done {
		measuring(st, job, "waiting for the Deployment's rollout to complete: "+ro.message)
		return true
	}
	return false
}

// createMeasurementChild creates a pod or Benchmark of a measurement, only when the site as this pass read it is
// the latest: a pass that read a site from before the last result was written would start that measurement again.
func (r *Reconciler) createMeasurementChild(ctx context.Context, st *observation, job *measurementJob, obj client.Object) (bool, error) {
	latest := &v1alpha1.StaticSite{}
	if err := r.directReader().Get(ctx, types.NamespacedName{Namespace: st.site.Namespace, Name: st.site.Name}, latest); err != nil {
		return false, err
	}
	if latest.ResourceVersion != st.site.ResourceVersion {
		st.requeue(conflictRetry)
		measuring(st, job, "reading the site again")
		return false, nil
	}
	if err := r.Create(ctx, obj); err != nil {
		switch {
		case apierrors.IsAlreadyExists(err):
			return false, nil // the cache has not seen it yet; its event brings the next pass
		case apierrors.IsInvalid(err) || apierrors.IsForbidden(err):
			measurementFailed(st, job, v1alpha1.ReasonMeasurementFailed, fmt.Sprintf("the API server refused %s %s: %v",
				obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err))
			return false, nil
		}
		return false, fmt.Errorf("create measurement %s: %w", obj.GetName(), err)
	}
	return true, nil
}
