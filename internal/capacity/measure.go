package capacity

import (
	"fmt"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// saturated is the share of its CPU limit a server must use for the measured rate to count as its capacity.
const saturated = 0.9

// Outcome is where a measurement's Benchmark stands.
type Outcome int

const (
	// Running: no result yet.
	Running Outcome = iota
	// Done: the Benchmark completed (its summary may still lack server figures: see Compute).
	Done
	// Failed: the Benchmark failed.
	Failed
)

// OutcomeOf reads a Benchmark's Complete and Failed conditions, and the reason of a failure.
func OutcomeOf(b *v1alpha1.Benchmark) (Outcome, string) {
	if c := meta.FindStatusCondition(b.Status.Conditions, v1alpha1.BenchmarkFailed); c != nil && c.Status == metav1.ConditionTrue {
		return Failed, c.Reason + ": " + c.Message
	}
	if meta.IsStatusConditionTrue(b.Status.Conditions, v1alpha1.BenchmarkComplete) {
		return Done, ""
	}
	return Running, ""
}

// Result is what a measurement needs besides the Benchmark's summary.
type Result struct {
	// Template is the template measured (its CPU decides the source and the extrapolation).
	Template v1alpha1.TemplateIdentity
	// LatencyObjective is spec.capacity.latencyObjective (or its default).
	LatencyObjective time.Duration
	// Benchmark is the Benchmark's name; Started when the measurement's first child was created; At the result's time.
	Benchmark   string
	Started, At time.Time
}

// Compute turns a completed Benchmark's summary into a capacity figure. The server's own figures are needed: a
// summary without requestsPerCPUSecond (no server sample fell inside the run) is an error, as is a missing one.
//
// When the load generator was not the limit and the server used at least 90 % of its CPU, the rate measured is the
// pod's capacity (Measured); otherwise the server had CPU to spare, and its requests per CPU-second times its CPU
// is the figure (ServerCPU).
func Compute(s *v1alpha1.BenchmarkSummary, r Result) (v1alpha1.CapacityMeasurement, error) {
	if s == nil {
		return v1alpha1.CapacityMeasurement{}, fmt.Errorf("the Benchmark completed without a summary")
	}
	if s.RequestsPerCPUSecond <= 0 {
		return v1alpha1.CapacityMeasurement{}, fmt.Errorf("the Benchmark's summary has no server figures (requestsPerCPUSecond is 0): no server sample fell inside the run")
	}
	cpu := 0.0
	if r.Template.CPU != nil {
		cpu = r.Template.CPU.AsApproximateFloat64()
	}
	// The summary writes cores as a plain decimal (benchresults.FormatCores); empty or unreadable counts as 0,
	// which can only make the figure ServerCPU, never Measured.
	serverCPU, _ := strconv.ParseFloat(s.ServerCPU, 64)
	m := v1alpha1.CapacityMeasurement{
		RequestsPerCPUSecond: s.RequestsPerCPUSecond,
		MeasuredRPS:          s.MeasuredPeakRPS,
		P99:                  s.P99,
		ServerCPU:            s.ServerCPU,
		ClientBound:          s.ClientBoundSteps > 0,
		MeasuredAgainst:      r.Template,
		MeasuredAt:           metav1.NewTime(r.At),
		Benchmark:            r.Benchmark,
	}
	if !m.ClientBound && cpu > 0 && serverCPU >= saturated*cpu && s.ServerRPS > 0 {
		m.Source, m.RPSPerPod = v1alpha1.CapacitySourceMeasured, s.ServerRPS
	} else {
		m.Source, m.RPSPerPod = v1alpha1.CapacitySourceServerCPU, int64(float64(s.RequestsPerCPUSecond)*cpu+0.5)
	}
	if p99, err := time.ParseDuration(s.P99); err == nil { // the summary's latencies are durations: "3.2ms", "850µs"
		m.LatencyObjectiveMet = p99 <= r.LatencyObjective
	}
	if !r.Started.IsZero() && !r.At.Before(r.Started) {
		m.Took = &metav1.Duration{Duration: r.At.Sub(r.Started).Round(time.Second)}
	}
	return m, nil
}
