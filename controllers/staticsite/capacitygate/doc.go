// Package capacitygate measures what one pod of a StaticSite serves (status.capacity) and holds a new pod template
// back until its own measurement passes the performance gate (status.performanceGate). docs/design/capacity.md is
// the full contract; the pure parts (a template's identity, a Benchmark's figures, the gate's verdict) are in
// internal/capacity, which reads neither the cluster nor a clock. Package staticsite calls Hold inside its
// Deployment step and Measure as its last step, and puts the State into the status.
//
// When: a measurement is wanted when spec.capacity, spec.autoscaling.targetUtilization or
// spec.rollout.performanceGate is set (Wanted); otherwise every measurement child goes, and so do status.capacity,
// status.performanceGate and their conditions. A figure belongs to a pod template, named by its identity
// (Identify).
//
// One measurement at a time, in this order: the serving template's (role probe) when it has no current figure or
// the measure-capacity annotation asks for a new one; then, with the gate, a held candidate's (role canary). A
// measurement is a pod made from the template, off the site's Service and away from other measurement pods' nodes
// (or the serving pod itself, spec.capacity.target ServingPod), and a Benchmark that loads it; it starts only once
// the Deployment's rollout is complete, and only from a pass that read the latest site (an outdated pass would
// start a finished measurement again). A pod not Ready within ProbeReadyTimeout or a failed Benchmark gives no
// figure; it is tried again after MeasurementRetry. A measurement's children are deleted once its result is in the
// status (State.Cleanup), so a result is never lost to a crash between the two.
//
// The gate (Hold): with spec.rollout.performanceGate, a desired template whose identity differs from the serving
// one reaches the Deployment only once the gate passed it or a person overrode the gate for it
// (AnnotationPerformanceGateOverride names its id); until then the Deployment keeps the template this operator
// last applied while every other field still applies. A candidate that passes (internal/capacity.Decide) rolls
// out on the next pass and its canary's figure becomes the serving template's capacity, with no second
// measurement; one measured and blocked stays blocked until a new candidate or the override (one that could not be
// measured is tried again after MeasurementRetry). Events say each result once the status is written
// (State.Events).
package capacitygate
