// Package k6script turns a Benchmark's spec into a run plan (its steps and their schedule) and the k6 script that
// executes one step of it. Everything here is pure; the controller stores the output in a ConfigMap and the runner
// in the k6 image executes it step by step.
package k6script

import (
	"fmt"
	"strings"
	"time"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
)

// StepGap is the time between the end of one step's load and the start of the next step's k6 process: k6 starts
// and initialises its VUs in it (about a second for a thousand VUs), and in-flight requests finish (gracefulStop).
const StepGap = 5 * time.Second

// GracefulStop lets requests in flight at the end of a step finish.
const GracefulStop = 2 * time.Second

// Workload kinds.
const (
	KindSweep       = "sweep"
	KindConstant    = "constant"
	KindArrivalRate = "arrivalRate"
)

// Plan is a Benchmark's run plan.
type Plan struct {
	Kind        string                  `json:"kind"`
	BaseURL     string                  `json:"baseURL"`
	KeepAlive   bool                    `json:"keepAlive"`
	Parallelism int                     `json:"parallelism"`
	Steps       []benchresults.PlanStep `json:"steps"`
	// MaxVUs for the arrival-rate executor (over all pods).
	MaxVUs int32 `json:"maxVUs,omitempty"`
	// StrideSeconds is the planned time from one step's start to the next's.
	StrideSeconds float64 `json:"strideSeconds"`
	// Protocol is the Benchmark's spec.protocol (what was asked; the results say what was used).
	Protocol v1alpha1.BenchmarkProtocol `json:"protocol,omitempty"`
	// InsecureSkipTLSVerify makes k6 accept any certificate: set for StaticSite targets, which are loaded through
	// their Service's in-cluster name (or a pod's IP), a name the site's certificate (made for spec.hostnames) does
	// not hold. A
	// benchmark measures the server; it sends nothing secret and trusts nothing it receives.
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	// AcceptEncoding is the Accept-Encoding header of every request (spec.acceptEncoding; empty: k6 sends none).
	AcceptEncoding string `json:"acceptEncoding,omitempty"`
	// TargetPod is the one pod loaded (spec.target.pod), with the labels it had when the target was resolved (the
	// k6 pods keep off its node) and its server container's CPU limit in cores (the summary's serverCPULimit).
	// Empty for a Service or URL target.
	TargetPod       string            `json:"targetPod,omitempty"`
	TargetPodLabels map[string]string `json:"targetPodLabels,omitempty"`
	ServerCPULimit  string            `json:"serverCPULimit,omitempty"`
}

// Duration is the planned length of the whole run.
func (p Plan) Duration() time.Duration {
	return time.Duration(float64(len(p.Steps)) * p.StrideSeconds * float64(time.Second))
}

// StepStart is when step i starts, given the run's start.
func (p Plan) StepStart(startAt time.Time, i int) time.Time {
	return startAt.Add(time.Duration(float64(i) * p.StrideSeconds * float64(time.Second)))
}

// MinStepDuration is the shortest step accepted: shorter steps are dominated by k6's start-up.
const MinStepDuration = 5 * time.Second

// NewPlan computes the plan for a spec (defaults already applied by the API server, but applied again here so a
// spec from a unit test or an older object works too).
func NewPlan(spec v1alpha1.BenchmarkSpec, baseURL string) (Plan, error) {
	p := Plan{BaseURL: strings.TrimRight(baseURL, "/"), KeepAlive: true, Parallelism: int(spec.Parallelism),
		Protocol: spec.Protocol, InsecureSkipTLSVerify: spec.Target.StaticSite != "", AcceptEncoding: spec.AcceptEncoding}
	if p.Parallelism < 1 {
		p.Parallelism = 1
	}
	w := spec.Workload
	var dur time.Duration
	switch {
	case w.Sweep != nil:
		s := w.Sweep
		p.Kind = KindSweep
		dur = orDefault(s.StepDuration.Duration, 30*time.Second)
		p.KeepAlive = s.KeepAlive == nil || *s.KeepAlive
		if s.Step < 1 || s.From < 1 || s.To < s.From {
			return p, fmt.Errorf("workload.sweep: need 1 <= from <= to and step >= 1 (got from=%d to=%d step=%d)", s.From, s.To, s.Step)
		}
		for c := s.From; c <= s.To; c += s.Step {
			p.Steps = append(p.Steps, benchresults.PlanStep{Index: len(p.Steps), VUs: c, DurationSeconds: dur.Seconds()})
		}
		if int(s.From) < p.Parallelism {
			return p, fmt.Errorf("workload.sweep.from (%d) is below parallelism (%d): every k6 pod needs at least one VU", s.From, p.Parallelism)
		}
	case w.Constant != nil:
		c := w.Constant
		p.Kind = KindConstant
		dur = orDefault(c.Duration.Duration, 60*time.Second)
		p.KeepAlive = c.KeepAlive == nil || *c.KeepAlive
		if int(c.VUs) < p.Parallelism {
			return p, fmt.Errorf("workload.constant.vus (%d) is below parallelism (%d): every k6 pod needs at least one VU", c.VUs, p.Parallelism)
		}
		p.Steps = []benchresults.PlanStep{{VUs: c.VUs, DurationSeconds: dur.Seconds()}}
	case w.ArrivalRate != nil:
		a := w.ArrivalRate
		p.Kind = KindArrivalRate
		dur = orDefault(a.Duration.Duration, 60*time.Second)
		p.KeepAlive = a.KeepAlive == nil || *a.KeepAlive
		p.MaxVUs = a.MaxVUs
		if p.MaxVUs == 0 {
			p.MaxVUs = min(max(a.Rate/10, 10), 10000)
		}
		if int(p.MaxVUs) < p.Parallelism || int(a.Rate) < p.Parallelism {
			return p, fmt.Errorf("workload.arrivalRate: rate (%d) and maxVUs (%d) must be at least parallelism (%d)", a.Rate, p.MaxVUs, p.Parallelism)
		}
		p.Steps = []benchresults.PlanStep{{Rate: a.Rate, DurationSeconds: dur.Seconds()}}
	default:
		return p, fmt.Errorf("workload: set one of sweep, constant, arrivalRate")
	}
	if dur < MinStepDuration {
		return p, fmt.Errorf("workload: duration %s is shorter than %s", dur, MinStepDuration)
	}
	p.StrideSeconds = (dur + StepGap).Seconds()
	return p, nil
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Segment returns the k6 execution segment of pod index out of count pods, and the segment sequence shared by
// all pods (k6 uses the sequence to split VUs and arrival rates without gaps or overlaps).
func Segment(index, count int) (segment, sequence string) {
	frac := func(i int) string {
		switch i {
		case 0:
			return "0"
		case count:
			return "1"
		default:
			return fmt.Sprintf("%d/%d", i, count)
		}
	}
	parts := make([]string, 0, count+1)
	for i := 0; i <= count; i++ {
		parts = append(parts, frac(i))
	}
	return frac(index) + ":" + frac(index+1), strings.Join(parts, ",")
}
