package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Capacity and the performance gate (docs/design/capacity.md): the operator measures what one server pod of a
// site can serve with a Benchmark of its own, keeps the figure in status.capacity for the autoscaler
// (spec.autoscaling.targetUtilization), and, with spec.rollout.performanceGate, measures a new content revision or
// server image on one canary pod before the Deployment moves to it.

// CapacitySpec tunes how a site's capacity per pod is measured. Measurements run when spec.capacity is set, and
// also whenever spec.autoscaling.targetUtilization or spec.rollout.performanceGate needs one (with these defaults).
// +kubebuilder:validation:XValidation:rule="!has(self.duration) || (duration(self.duration) >= duration('5s') && duration(self.duration) <= duration('60s'))",message="spec.capacity.duration must be between 5s and 60s"
// +kubebuilder:validation:XValidation:rule="!has(self.latencyObjective) || duration(self.latencyObjective) > duration('0s')",message="spec.capacity.latencyObjective must be greater than 0"
type CapacitySpec struct {
	// latencyObjective is the 99th percentile latency the site should keep (default 100ms). status.capacity
	// says whether the measurement's p99 met it.
	// +optional
	LatencyObjective *metav1.Duration `json:"latencyObjective,omitempty"`

	// duration is how long a measurement loads the pod (default 10s; 5s to 60s).
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`

	// concurrency is the number of k6 virtual users (closed model, keep-alive) of a measurement (default 16).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	// +optional
	Concurrency *int32 `json:"concurrency,omitempty"`

	// loadCPU is the CPU of the measurement's k6 pod (requests == limits, Guaranteed; default "1").
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="spec.capacity.loadCPU must be greater than 0"
	// +optional
	LoadCPU *resource.Quantity `json:"loadCPU,omitempty"`

	// target is which pod is measured: Probe (default) starts a pod of the serving template that gets no public
	// traffic (the Service does not select it) and removes it after the measurement; ServingPod loads one of the
	// ready serving pods directly, beside its public traffic (cheaper, but the public shares that pod's CPU with the
	// load for the measurement's duration). A canary of the performance gate is always a pod of its own.
	// +kubebuilder:default=Probe
	// +optional
	Target CapacityTarget `json:"target,omitempty"`
}

// CapacityTarget is the pod a capacity measurement loads.
// +kubebuilder:validation:Enum=Probe;ServingPod
type CapacityTarget string

const (
	CapacityTargetProbe      CapacityTarget = "Probe"
	CapacityTargetServingPod CapacityTarget = "ServingPod"
)

// RolloutSpec configures how a new pod template reaches the pods.
type RolloutSpec struct {
	// performanceGate, when set, measures a new content revision or server image (any change of the server pod
	// template) on one canary pod before the Deployment moves to it, and holds the serving pods on their template
	// when it serves worse than the serving one by more than it accepts.
	// +optional
	PerformanceGate *PerformanceGateSpec `json:"performanceGate,omitempty"`
}

// PerformanceGateSpec is the largest loss a new template may bring and still roll out.
type PerformanceGateSpec struct {
	// maxCapacityDropPercent is the largest drop of capacity per pod, in percent of the serving template's, that
	// passes (default 25: measurements on a busy node vary by about 10 %).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100
	// +kubebuilder:default=25
	// +optional
	MaxCapacityDropPercent *int32 `json:"maxCapacityDropPercent,omitempty"`

	// maxP99IncreasePercent is the largest rise of the measurement's p99 latency, in percent of the serving
	// template's, that passes. Unset: p99 is reported but does not decide (a client-bound measurement's p99 is
	// mostly the load generator's).
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	MaxP99IncreasePercent *int32 `json:"maxP99IncreasePercent,omitempty"`
}

// CapacitySource says how a capacity figure was obtained.
// +kubebuilder:validation:Enum=Measured;ServerCPU
type CapacitySource string

const (
	// CapacitySourceMeasured: the server was the limit (its CPU at ≥ 90 % of spec.cpu, the load generator below
	// its own limit): rpsPerPod is the rate measured.
	CapacitySourceMeasured CapacitySource = "Measured"
	// CapacitySourceServerCPU: the load generator was the limit (or the server had CPU to spare): rpsPerPod is the
	// server's requests per CPU-second times spec.cpu, an extrapolation from its own CPU accounting, not a rate
	// anyone saw.
	CapacitySourceServerCPU CapacitySource = "ServerCPU"
)

// TemplateIdentity names a server pod template as far as it decides how fast a pod serves: what the capacity
// figures were measured against.
type TemplateIdentity struct {
	// id is a short hash of the template's server image(s), arguments, CPU, memory and content (the same id means
	// the same serving configuration).
	ID string `json:"id"`
	// contentRevision is the content served (status.contentRevision's form: an image reference, or a hash).
	// +optional
	ContentRevision string `json:"contentRevision,omitempty"`
	// serverImage is the server container's image.
	// +optional
	ServerImage string `json:"serverImage,omitempty"`
	// cpu and memory of the server container.
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`
	// +optional
	Memory *resource.Quantity `json:"memory,omitempty"`
}

// CapacityMeasurement is one measurement of one pod.
type CapacityMeasurement struct {
	// rpsPerPod is the requests per second one pod serves at capacity (see source).
	RPSPerPod int64 `json:"rpsPerPod"`
	// requestsPerCPUSecond is the requests the server answered per second of its own CPU time during the load.
	RequestsPerCPUSecond int64 `json:"requestsPerCPUSecond"`
	// measuredRPS is the rate the load generator achieved.
	MeasuredRPS int64 `json:"measuredRPS"`
	// p99 is the 99th percentile latency at measuredRPS, e.g. "3.2ms".
	P99 string `json:"p99"`
	// serverCPU is the CPU (cores) the server used at measuredRPS, e.g. "0.049".
	// +optional
	ServerCPU string `json:"serverCPU,omitempty"`
	// source: Measured or ServerCPU (see CapacitySource).
	Source CapacitySource `json:"source"`
	// clientBound: the load generator was the limit (a k6 pod used ≥ 90 % of its CPU).
	ClientBound bool `json:"clientBound"`
	// latencyObjectiveMet: p99 was within spec.capacity.latencyObjective.
	LatencyObjectiveMet bool `json:"latencyObjectiveMet"`
	// measuredAgainst is the pod template measured.
	MeasuredAgainst TemplateIdentity `json:"measuredAgainst"`
	// measuredAt is when the result was taken.
	MeasuredAt metav1.Time `json:"measuredAt"`
	// took is how long the measurement took, from its pod's creation (or the Benchmark's, for a serving pod) to
	// the result.
	// +optional
	Took *metav1.Duration `json:"took,omitempty"`
	// benchmark is the Benchmark that measured it (deleted once its figures are here).
	// +optional
	Benchmark string `json:"benchmark,omitempty"`
}

// CapacityStatus is the measured capacity of the site's pods.
type CapacityStatus struct {
	CapacityMeasurement `json:",inline"`
	// current: measuredAgainst is the template the serving pods run. A stale figure is kept for reference until a
	// new one replaces it; the autoscaler uses only a current one.
	Current bool `json:"current"`
	// request is the value of the hyperstatic.dev/measure-capacity annotation this measurement answered.
	// +optional
	Request string `json:"request,omitempty"`
}

// PerformanceGatePhase is where the gate stands with a candidate template.
// +kubebuilder:validation:Enum=Measuring;Passed;Blocked;Overridden
type PerformanceGatePhase string

const (
	GateMeasuring  PerformanceGatePhase = "Measuring"
	GatePassed     PerformanceGatePhase = "Passed"
	GateBlocked    PerformanceGatePhase = "Blocked"
	GateOverridden PerformanceGatePhase = "Overridden"
)

// PerformanceGateStatus is the gate's decision about the latest candidate template.
type PerformanceGateStatus struct {
	// candidate is the new template.
	Candidate TemplateIdentity `json:"candidate"`
	// phase: Measuring, Passed, Blocked or Overridden.
	Phase PerformanceGatePhase `json:"phase"`
	// baseline is the serving template's measurement the candidate is compared with.
	// +optional
	Baseline *CapacityMeasurement `json:"baseline,omitempty"`
	// canary is the candidate's measurement.
	// +optional
	Canary *CapacityMeasurement `json:"canary,omitempty"`
	// capacityChangePercent is (canary - baseline) / baseline of rpsPerPod, in percent (negative: a drop).
	// +optional
	CapacityChangePercent *int32 `json:"capacityChangePercent,omitempty"`
	// p99ChangePercent is (canary - baseline) / baseline of p99, in percent.
	// +optional
	P99ChangePercent *int32 `json:"p99ChangePercent,omitempty"`
	// message says what the decision rests on.
	// +optional
	Message string `json:"message,omitempty"`
	// decidedAt is when the phase became Passed, Blocked or Overridden.
	// +optional
	DecidedAt *metav1.Time `json:"decidedAt,omitempty"`
}

// Annotations a person sets on a StaticSite to steer capacity measurements and the gate.
const (
	// AnnotationMeasureCapacity: a new value asks for a new capacity measurement of the serving template
	// (status.capacity.request echoes the value answered).
	AnnotationMeasureCapacity = "hyperstatic.dev/measure-capacity"
	// AnnotationPerformanceGateOverride: a candidate template id (status.performanceGate.candidate.id) that rolls
	// out whatever its measurement says; one revision only, the next candidate is gated again.
	AnnotationPerformanceGateOverride = "hyperstatic.dev/performance-gate-override"
)

// Labels of the pods and Benchmarks the operator makes to measure capacity. A measurement pod carries
// LabelCapacityProbeOf instead of LabelSite, so the site's Service, Deployment, PodDisruptionBudget and autoscaler
// never count it.
const (
	// LabelCapacityProbeOf: the site a measurement pod (probe or canary) or Benchmark belongs to.
	LabelCapacityProbeOf = "hyperstatic.dev/capacity-probe-of"
	// LabelCapacityTemplate: the template id (TemplateIdentity.ID) a measurement pod runs.
	LabelCapacityTemplate = "hyperstatic.dev/capacity-template"
	// LabelCapacityRole: "probe" (the serving template) or "canary" (a candidate of the gate).
	LabelCapacityRole = "hyperstatic.dev/capacity-role"
)

// Conditions of capacity and the gate.
const (
	// ConditionCapacityMeasured (normal-true): True when status.capacity is current; Unknown while a measurement
	// runs; False when the last one failed (the message says why; it is retried).
	ConditionCapacityMeasured = "CapacityMeasured"
	// ConditionRolloutBlocked (abnormal-true): True when the performance gate stopped a candidate template; the
	// serving pods keep their template and Ready stays as it was.
	ConditionRolloutBlocked = "RolloutBlocked"
)

// Reasons of CapacityMeasured, RolloutBlocked and Reconciling for capacity.
const (
	ReasonCapacityMeasured      = "Measured"          // CapacityMeasured=True, source Measured
	ReasonCapacityFromServerCPU = "ServerCPU"         // CapacityMeasured=True, source ServerCPU
	ReasonMeasuringCapacity     = "Measuring"         // CapacityMeasured=Unknown
	ReasonMeasurementFailed     = "MeasurementFailed" // CapacityMeasured=False: the Benchmark failed or gave no server figures
	ReasonProbeNotReady         = "ProbeNotReady"     // CapacityMeasured=False: the measurement pod did not become Ready in time
	ReasonCapacityDropped       = "CapacityDropped"   // RolloutBlocked=True
	ReasonLatencyRose           = "LatencyRose"       // RolloutBlocked=True
	ReasonCanaryFailed          = "CanaryFailed"      // RolloutBlocked=True: the canary could not be measured
	ReasonGatePassed            = "GatePassed"        // RolloutBlocked=False
	ReasonGateOverridden        = "GateOverridden"    // RolloutBlocked=False
	ReasonMeasuringCanary       = "MeasuringCanary"   // Reconciling=True while the canary is measured; Ready unchanged
)

// Defaults of spec.capacity and spec.rollout.performanceGate, used where the field is unset.
const (
	DefaultCapacityDuration       = "10s"
	DefaultCapacityConcurrency    = 16
	DefaultCapacityLatencyObj     = "100ms"
	DefaultMaxCapacityDropPercent = 25
)
