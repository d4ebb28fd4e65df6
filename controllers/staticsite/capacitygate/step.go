package capacitygate

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

// +kubebuilder:rbac:groups="",resources=pods,verbs=create;delete
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=benchmarks,verbs=get;list;watch;create;delete

// Measure measures what one pod of the site serves (status.capacity) and, with the performance gate, measures a
// held candidate template on a canary pod and decides whether it may roll out. One measurement at a time: the
// serving template's first when it has no current figure, then the candidate's. It returns what it decided and
// when the next pass should run (0: it asks for none); the State comes back with an error that follows it.
func (s Step) Measure(ctx context.Context, in Pass) (State, time.Duration, error) {
	st := &pass{Pass: in}
	err := s.measure(ctx, st)
	return st.cs, st.requeueAfter, err
}

func (s Step) measure(ctx context.Context, st *pass) error {
	site := st.Site
	pods, benches, err := s.measurementChildren(ctx, site)
	if err != nil {
		return err
	}
	if !Wanted(site) {
		return s.deleteMeasurementChildren(ctx, pods, benches, nil)
	}
	cs := &st.cs
	*cs = State{Wanted: true, Status: site.Status.Capacity.DeepCopy()}
	if GateSpec(site) != nil {
		cs.Gate = site.Status.PerformanceGate.DeepCopy()
	}
	if old := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionCapacityMeasured); old != nil {
		cs.Measured = *old
	}
	if st.Deployment == nil {
		if cs.Measured.Type == "" {
			cs.Measured = capacityCondition(metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity, "waiting for the site's Deployment")
		}
		return s.deleteMeasurementChildren(ctx, pods, benches, nil)
	}
	serving := Identify(&st.Deployment.Spec.Template, st.Content)
	promoteCanary(cs, serving)
	if cs.Status != nil {
		cs.Status.Current = cs.Status.MeasuredAgainst.ID == serving.ID
	}
	job := s.chooseMeasurement(st, serving)
	if err := s.deleteMeasurementChildren(ctx, pods, benches, job); err != nil {
		return err
	}
	if job == nil {
		return nil
	}
	return s.runMeasurement(ctx, st, job, pods, benches)
}

// promoteCanary: once the Deployment runs a candidate the gate measured, the canary's figure is the serving
// template's capacity; no second measurement.
func promoteCanary(cs *State, serving v1alpha1.TemplateIdentity) {
	g := cs.Gate
	if g == nil || g.Canary == nil || g.Candidate.ID != serving.ID || (g.Phase != v1alpha1.GatePassed && g.Phase != v1alpha1.GateOverridden) {
		return
	}
	if cs.Status != nil && cs.Status.MeasuredAgainst.ID == serving.ID {
		return
	}
	promoted := &v1alpha1.CapacityStatus{CapacityMeasurement: *g.Canary.DeepCopy()}
	if cs.Status != nil {
		promoted.Request = cs.Status.Request // answered already: the annotation asks for nothing new
	}
	cs.Status = promoted
	cs.Measured = measuredCondition(promoted)
}

// chooseMeasurement picks the measurement to run now, or nil, and sets what the status says meanwhile.
func (s Step) chooseMeasurement(st *pass, serving v1alpha1.TemplateIdentity) *measurementJob {
	cs, site := &st.cs, st.Site
	request := site.Annotations[v1alpha1.AnnotationMeasureCapacity]
	needBaseline := cs.Status == nil || !cs.Status.Current || (request != "" && request != cs.Status.Request)
	canary := canaryWanted(st)
	if needBaseline {
		if retry, failed := failedRecently(cs.Measured, st.Now); failed {
			st.requeue(retry.Sub(st.Now))
			if canary {
				cs.Gate.Message = "waiting for a measurement of the serving template to compare with: " + cs.Measured.Message
			}
			return nil
		}
		job := &measurementJob{role: RoleProbe, identity: serving, template: st.Deployment.Spec.Template, request: request}
		if capacityTarget(site) == v1alpha1.CapacityTargetServingPod {
			if job.servingPod = s.readyServingPod(st, serving.ID); job.servingPod == "" {
				cs.Measured = capacityCondition(metav1.ConditionUnknown, v1alpha1.ReasonMeasuringCapacity, "waiting for a ready serving pod to load")
				return nil
			}
		}
		if canary {
			cs.Gate.Message = fmt.Sprintf("candidate %s waits: the serving template %s is measured first", cs.Gate.Candidate.ID, serving.ID)
		}
		return job
	}
	cs.Measured = measuredCondition(cs.Status)
	if canary {
		return &measurementJob{role: RoleCanary, identity: st.Gate.desired, template: st.Gate.desiredTemplate}
	}
	return nil
}

// canaryWanted updates the gate's status for the desired template and says whether its canary is to be measured.
func canaryWanted(st *pass) bool {
	v, cs := st.Gate, &st.cs
	if v == nil {
		return false
	}
	if v.serving.ID == v.desired.ID {
		// The spec went back to the serving template: a candidate still measured or blocked was withdrawn, and
		// nothing is blocked any more. A Passed or Overridden decision stays as the record of the last rollout.
		if g := cs.Gate; g != nil && g.Candidate.ID != v.desired.ID && (g.Phase == v1alpha1.GateMeasuring || g.Phase == v1alpha1.GateBlocked) {
			cs.Gate = nil
		}
		return false
	}
	if cs.Gate == nil || cs.Gate.Candidate.ID != v.desired.ID {
		cs.Gate = &v1alpha1.PerformanceGateStatus{Candidate: v.desired, Phase: v1alpha1.GateMeasuring,
			Message: fmt.Sprintf("measuring candidate %s on a canary pod", v.desired.ID)}
	}
	g := cs.Gate
	if v.overridden {
		if g.Phase != v1alpha1.GateOverridden {
			g.Phase, g.DecidedAt = v1alpha1.GateOverridden, &metav1.Time{Time: st.Now}
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
		retry := g.DecidedAt.Add(MeasurementRetry)
		if st.Now.Before(retry) {
			st.requeue(retry.Sub(st.Now))
			return false
		}
		g.Phase, g.DecidedAt = v1alpha1.GateMeasuring, nil
		g.Message = fmt.Sprintf("measuring candidate %s on a canary pod again", v.desired.ID)
		return true
	}
	return false
}

// failedRecently: the last measurement of the serving template failed less than MeasurementRetry ago (by the
// condition's transition time, which a measurement in between, Unknown, renews); it returns when to try again.
func failedRecently(c metav1.Condition, now time.Time) (time.Time, bool) {
	if c.Status != metav1.ConditionFalse || (c.Reason != v1alpha1.ReasonMeasurementFailed && c.Reason != v1alpha1.ReasonProbeNotReady) {
		return time.Time{}, false
	}
	retry := c.LastTransitionTime.Add(MeasurementRetry)
	return retry, now.Before(retry)
}

// readyServingPod is a ready serving pod of the template id (first by name), "" when there is none.
func (s Step) readyServingPod(st *pass, id string) string {
	var names []string
	for i := range st.Pods {
		p := &st.Pods[i]
		if podstate.Ready(p) && s.identityOfPod(p, st.Content) == id {
			names = append(names, p.Name)
		}
	}
	sort.Strings(names)
	if len(names) == 0 {
		return ""
	}
	return names[0]
}

// identityOfPod is the template id of a pod, as its spec and annotations are the template's.
func (s Step) identityOfPod(p *corev1.Pod, content Content) string {
	t := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: p.Annotations}, Spec: p.Spec}
	return Identify(&t, content).ID
}

// runMeasurement moves job one step: its pod, once Ready its Benchmark, once done the result.
func (s Step) runMeasurement(ctx context.Context, st *pass, job *measurementJob, pods []corev1.Pod, benches []v1alpha1.Benchmark) error {
	site := st.Site
	name := MeasurementName(site.Name, job.identity.ID)
	target := job.servingPod
	var pod *corev1.Pod
	var started time.Time
	if target == "" {
		target = name
		pod = findPod(pods, name)
		if pod == nil {
			// A Benchmark without its pod (someone deleted the pod) would report on a pod that is gone.
			if b := findBenchmark(benches, name); b != nil {
				return Delete(ctx, s.Client, []client.Object{b})
			}
			if waitForRollout(st, job) {
				return nil
			}
			created, err := s.createMeasurementChild(ctx, st, job, measurementPod(site, job.template, job.identity.ID, job.role, name, st.Now))
			if err != nil || !created {
				return err
			}
			st.requeue(ProbeReadyTimeout)
			measuring(st, job, fmt.Sprintf("starting pod %s", name))
			return nil
		}
		started = startedAt(pod)
		if !podstate.Ready(pod) {
			deadline := started.Add(ProbeReadyTimeout)
			if !st.Now.Before(deadline) {
				measurementFailed(st, job, v1alpha1.ReasonProbeNotReady, fmt.Sprintf("pod %s did not become Ready within %s", name, ProbeReadyTimeout), pod)
				return nil
			}
			st.requeue(deadline.Sub(st.Now))
			measuring(st, job, fmt.Sprintf("waiting for pod %s to become Ready", name))
			return nil
		}
	}
	bench := findBenchmark(benches, name)
	if bench == nil {
		if pod == nil && waitForRollout(st, job) {
			return nil
		}
		created, err := s.createMeasurementChild(ctx, st, job, measurementBenchmark(site, job.identity.ID, job.role, name, target, st.Now))
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
			Benchmark: name, Started: started, At: st.Now})
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
func waitForRollout(st *pass, job *measurementJob) bool {
	if !st.Rollout.Done {
		measuring(st, job, "waiting for the Deployment's rollout to complete: "+st.Rollout.Message)
		return true
	}
	return false
}

// createMeasurementChild creates a pod or Benchmark of a measurement, only when the site as this pass read it is
// the latest: a pass that read a site from before the last result was written would start that measurement again.
func (s Step) createMeasurementChild(ctx context.Context, st *pass, job *measurementJob, obj client.Object) (bool, error) {
	latest := &v1alpha1.StaticSite{}
	if err := s.Direct.Get(ctx, types.NamespacedName{Namespace: st.Site.Namespace, Name: st.Site.Name}, latest); err != nil {
		return false, err
	}
	if latest.ResourceVersion != st.Site.ResourceVersion {
		st.requeue(s.ConflictRetry)
		measuring(st, job, "reading the site again")
		return false, nil
	}
	if err := s.Client.Create(ctx, obj); err != nil {
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
