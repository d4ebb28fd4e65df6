package benchresults

import (
	"fmt"
	"math"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Summarize is the compact status summary of a run. The peak is the fastest step that was NOT client-bound; when
// every step was client-bound the Peak column says ">=N (client-bound)": N is then only a lower bound of what the
// server can do, and it is never reported as PeakRPS. The latencies and the server figures (serverCPU, serverRPS,
// requestsPerCPUSecond) are those of the peak step, or of the measured peak step when every step was client-bound.
func Summarize(r Results) v1alpha1.BenchmarkSummary {
	s := v1alpha1.BenchmarkSummary{
		Requests:         r.Requests,
		Errors:           r.Errors,
		ErrorRate:        FormatPercent(r.ErrorRate),
		Steps:            int32(len(r.Steps)),
		ClientBoundSteps: int32(r.ClientBoundSteps),
		Verdict:          r.Verdict,
		VerdictReason:    r.VerdictReason,
		PeakStep:         -1,
		Peak:             "-",
	}
	if r.MeasuredPeakStep >= 0 {
		s.MeasuredPeakRPS = int64(math.Round(r.Steps[r.MeasuredPeakStep].RPS))
	}
	at := r.PeakStep
	if at >= 0 {
		s.PeakRPS = int64(math.Round(r.Steps[at].RPS))
		s.Peak = fmt.Sprintf("%d", s.PeakRPS)
		if r.ClientBoundSteps > 0 && r.MeasuredPeakStep != r.PeakStep {
			// A client-bound step went faster: the server may do more than the peak shown.
			s.Peak += " (faster steps client-bound)"
		}
	} else if r.MeasuredPeakStep >= 0 {
		at = r.MeasuredPeakStep
		s.Peak = fmt.Sprintf(">=%d (client-bound)", s.MeasuredPeakRPS)
	}
	if at >= 0 {
		st := r.Steps[at]
		s.PeakStep = int32(at)
		s.PeakConcurrency = st.Concurrency
		if st.TargetRate > 0 {
			s.PeakConcurrency = st.TargetRate
		}
		s.P50, s.P90, s.P99 = FormatMs(st.P50Ms), FormatMs(st.P90Ms), FormatMs(st.P99Ms)
		// The server's own figures of the same step, when two samples of a pod fell inside its load window;
		// otherwise they stay empty: a figure the samples do not give is never made up.
		if st.ServerMeasured {
			s.ServerCPU = FormatCores(st.ServerCPUCores)
			s.ServerRPS = int64(math.Round(st.ServerRPS))
			s.RequestsPerCPUSecond = int64(math.Round(st.RequestsPerCPUSec))
		}
	}
	return s
}
