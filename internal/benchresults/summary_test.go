package benchresults

import (
	"testing"
)

// The summary's server figures are the peak step's, from the server samples inside that step's load window (the
// recorded sweep, with samples of one server pod around its peak step); a step without samples leaves them empty.
func TestSummaryServerFiguresOfThePeakStep(t *testing.T) {
	in, pods := loadRecorded(t)
	peak := Merge(in).PeakStep
	if peak < 0 {
		t.Fatal("the recorded sweep has no peak step")
	}
	if s := Summarize(Merge(in)); s.ServerCPU != "" || s.ServerRPS != 0 || s.RequestsPerCPUSecond != 0 || s.ServerCPULimit != "" {
		t.Fatalf("no server sample, yet server figures %+v", s)
	}

	a, b := pods[0].Steps[peak], pods[1].Steps[peak]
	start := max(a.LoadStartMs, b.LoadStartMs)
	// probe-0: 0.147 CPU-seconds and 9000 requests over 3 s: 0.049 cores, 3000 req/s, 61224.5 req per CPU-second.
	in.Server = []ServerSample{
		{Pod: "probe-0", UnixMs: start + 500, Requests: 1000, CPUSeconds: 2},
		{Pod: "probe-0", UnixMs: start + 3500, Requests: 10000, CPUSeconds: 2.147},
	}
	// Another step's samples do not leak into the peak's figures.
	if other := (peak + 1) % len(pods[0].Steps); other != peak {
		o := pods[0].Steps[other]
		in.Server = append(in.Server, ServerSample{Pod: "probe-0", UnixMs: o.LoadStartMs + 500, Requests: 0, CPUSeconds: 0},
			ServerSample{Pod: "probe-0", UnixMs: o.LoadStartMs + 3500, Requests: 99, CPUSeconds: 3})
	}
	s := Summarize(Merge(in))
	if s.PeakStep != int32(peak) || s.ServerCPU != "0.049" || s.ServerRPS != 3000 || s.RequestsPerCPUSecond != 61225 {
		t.Fatalf("summary %+v, want the peak step %d's 0.049 cores, 3000 req/s, 61225 req/CPU-s", s, peak)
	}
}

// When every step was client-bound, the summary's latencies are the measured peak step's, and so are its server
// figures.
func TestSummaryServerFiguresWhenEveryStepWasClientBound(t *testing.T) {
	r := Results{PeakStep: -1, MeasuredPeakStep: 1, ClientBoundSteps: 2, Steps: []Step{
		{Index: 0, RPS: 100, ClientBound: true, ServerMeasured: true, ServerCPUCores: 0.01, ServerRPS: 100, RequestsPerCPUSec: 10000},
		{Index: 1, RPS: 200, P99Ms: 2, ClientBound: true, ServerMeasured: true, ServerCPUCores: 0.0204, ServerRPS: 199.6, RequestsPerCPUSec: 9784.3},
	}}
	s := Summarize(r)
	if s.PeakRPS != 0 || s.PeakStep != 1 || s.P99 != "2.00ms" || s.ServerCPU != "0.02" || s.ServerRPS != 200 || s.RequestsPerCPUSecond != 9784 {
		t.Fatalf("summary %+v", s)
	}
}

func TestFormatCores(t *testing.T) {
	for in, want := range map[float64]string{0.049: "0.049", 0.05: "0.05", 2: "2", 0.0004: "0", 1.2345: "1.235", 0.25: "0.25"} {
		if got := FormatCores(in); got != want {
			t.Errorf("FormatCores(%v) = %q, want %q", in, got, want)
		}
	}
}
