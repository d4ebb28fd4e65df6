package benchresults

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// loadRecorded reads the recorded output of two k6 runner pods (see testdata/sweep-2pods/README.md).
func loadRecorded(t *testing.T) (Input, map[int]PodLog) {
	t.Helper()
	dir := filepath.Join("testdata", "sweep-2pods")
	var plan struct {
		Kind        string     `json:"kind"`
		BaseURL     string     `json:"baseURL"`
		KeepAlive   bool       `json:"keepAlive"`
		Parallelism int        `json:"parallelism"`
		Steps       []PlanStep `json:"steps"`
	}
	raw, err := os.ReadFile(filepath.Join(dir, "plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(raw, &plan); err != nil {
		t.Fatal(err)
	}
	pods := map[int]PodLog{}
	for i := 0; i < 2; i++ {
		raw, err := os.ReadFile(filepath.Join(dir, "pod"+string(rune('0'+i))+".log"))
		if err != nil {
			t.Fatal(err)
		}
		log, err := ParseLog(raw)
		if err != nil {
			t.Fatalf("pod %d: %v", i, err)
		}
		pods[i] = log
	}
	return Input{Workload: plan.Kind, Target: plan.BaseURL, KeepAlive: plan.KeepAlive, Parallelism: plan.Parallelism,
		Steps: plan.Steps, Pods: pods, Thresholds: Thresholds{MaxErrorRate: -1}}, pods
}

func TestParseRecordedLogs(t *testing.T) {
	_, pods := loadRecorded(t)
	for i, log := range pods {
		if len(log.Steps) != 3 || log.Done == nil || log.Done.Error != "" || log.Done.Pod != i {
			t.Fatalf("pod %d: %d steps, done %+v", i, len(log.Steps), log.Done)
		}
		for _, s := range log.Steps {
			if s.Requests <= 0 || s.Pod != i || s.LoadEndMs-s.LoadStartMs < 4900 {
				t.Errorf("pod %d step %d: implausible %+v", i, s.Step, s)
			}
			// Every response had a status, so the histogram holds every request.
			if got := s.Hist.Count(); got != s.Requests-s.Errors {
				t.Errorf("pod %d step %d: histogram holds %d, k6 counted %d requests", i, s.Step, got, s.Requests)
			}
			if s.CPU.WallSeconds <= 0 || s.CPU.Fraction <= 0 || len(s.CPU.Series) == 0 {
				t.Errorf("pod %d step %d: no CPU measured: %+v", i, s.Step, s.CPU)
			}
		}
	}
}

// ParseLog reads only the last whole result block; anything short of one is ErrResultsIncomplete, never fewer
// steps.
func TestParseLogReadsTheLastWholeBlock(t *testing.T) {
	step := func(i int) string {
		return fmt.Sprintf("HSRESULT {\"pod\":0,\"step\":%d,\"requests\":%d}\n", i, 10*(i+1))
	}
	block := "HSBEGIN {\"pod\":0,\"steps\":2}\n" + step(0) + step(1) + "HSDONE {\"pod\":0,\"steps\":2,\"results\":2}\n"
	noise := strings.Repeat("time=... level=warning msg=\"Request Failed\" error=\"connection refused\"\n", 100)
	for _, tc := range []struct {
		name, log  string
		steps      int
		incomplete bool // ErrResultsIncomplete
	}{
		{name: "whole block after noise", log: noise + block, steps: 2},
		{name: "block without a final newline", log: noise + strings.TrimSuffix(block, "\n"), steps: 2},
		{name: "an earlier block is superseded", log: "HSBEGIN {\"pod\":0,\"steps\":1}\n" + step(0) + noise + block, steps: 2},
		{name: "no block at all", log: noise, incomplete: true},
		{name: "empty log", log: "", incomplete: true},
		{name: "head cut off (rotated)", log: step(1) + "HSDONE {\"pod\":0,\"steps\":2,\"results\":2}\n", incomplete: true},
		{name: "tail cut off (read limit)", log: noise + block[:len(block)-30], incomplete: true},
		{name: "a result line lost", log: "HSBEGIN {\"pod\":0,\"steps\":2}\n" + step(1) + "HSDONE {\"pod\":0,\"steps\":2,\"results\":2}\n", incomplete: true},
		{name: "a damaged result line", log: "HSBEGIN {\"pod\":0,\"steps\":1}\nHSRESULT {\"pod\":0,\nHSDONE {\"pod\":0,\"steps\":1,\"results\":1}\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			log, err := ParseLog([]byte(tc.log))
			switch {
			case tc.incomplete:
				if !errors.Is(err, ErrResultsIncomplete) {
					t.Fatalf("got %+v, %v; want %v", log, err, ErrResultsIncomplete)
				}
			case tc.steps == 0:
				if err == nil {
					t.Fatalf("a damaged block must be an error, got %+v", log)
				}
			default:
				if err != nil || log.Done == nil || len(log.Steps) != tc.steps || log.Steps[1].Requests != 20 {
					t.Fatalf("got %+v, %v", log, err)
				}
			}
		})
	}
}

// The histogram of one pod must agree with k6's own percentiles (computed by k6 from every sample) within the
// bucket width (about 9%; 12% allowed for k6's interpolation between samples).
func TestHistogramAgreesWithK6Percentiles(t *testing.T) {
	_, pods := loadRecorded(t)
	for i, log := range pods {
		for _, s := range log.Steps {
			for _, c := range []struct {
				q    float64
				want float64
			}{{0.5, s.K6.P50}, {0.9, s.K6.P90}, {0.99, s.K6.P99}} {
				got := s.Hist.Quantile(c.q)
				if math.Abs(got-c.want)/c.want > 0.12 {
					t.Errorf("pod %d step %d q%.2f: histogram %.4fms, k6 %.4fms", i, s.Step, c.q, got, c.want)
				}
			}
		}
	}
}

func TestMergeRecordedSweep(t *testing.T) {
	in, pods := loadRecorded(t)
	r := Merge(in)
	if len(r.Steps) != 3 || len(r.Warnings) != 0 {
		t.Fatalf("steps %d warnings %v", len(r.Steps), r.Warnings)
	}
	var total int64
	for _, st := range r.Steps {
		a, b := pods[0].Steps[st.Index], pods[1].Steps[st.Index]
		if st.Requests != a.Requests+b.Requests || st.PodsReporting != 2 {
			t.Errorf("step %d: requests %d, want %d+%d", st.Index, st.Requests, a.Requests, b.Requests)
		}
		// RPS is summed: each pod's requests over its own window.
		want := float64(a.Requests)/(float64(a.LoadEndMs-a.LoadStartMs)/1000) + float64(b.Requests)/(float64(b.LoadEndMs-b.LoadStartMs)/1000)
		if math.Abs(st.RPS-want) > 0.1 {
			t.Errorf("step %d: RPS %.1f, want the sum %.1f", st.Index, st.RPS, want)
		}
		// The p99 of the union lies between the pods' p99s (up to the bucket width).
		lo, hi := math.Min(a.K6.P99, b.K6.P99), math.Max(a.K6.P99, b.K6.P99)
		if st.P99Ms < lo*0.88 || st.P99Ms > hi*1.12 {
			t.Errorf("step %d: merged p99 %.3f outside the pods' [%.3f, %.3f]", st.Index, st.P99Ms, lo, hi)
		}
		if st.ClientBound {
			t.Errorf("step %d: k6 used %.0f%% of the machine, not client-bound", st.Index, st.ClientCPU*100)
		}
		if st.Concurrency != int32(2+2*st.Index) {
			t.Errorf("step %d: concurrency %d", st.Index, st.Concurrency)
		}
		total += st.Requests
	}
	if r.Requests != total || r.PeakStep < 0 || r.PeakStep != r.MeasuredPeakStep {
		t.Fatalf("totals: %+v", r)
	}
	if r.Verdict != "" {
		t.Errorf("no thresholds, verdict %q", r.Verdict)
	}
}

// Two pods with very different latencies: the p99 of all requests is the slow pod's, not the mean of the two p99s.
func TestMergeNeverAveragesPercentiles(t *testing.T) {
	fast := Histogram{BucketOf(1): 1000}
	slow := Histogram{BucketOf(100): 1000}
	in := Input{Parallelism: 2, Steps: []PlanStep{{Index: 0, VUs: 2, DurationSeconds: 10}}, Thresholds: Thresholds{MaxErrorRate: -1},
		Pods: map[int]PodLog{
			0: {Steps: []PodStep{{Pod: 0, Step: 0, LoadStartMs: 0, LoadEndMs: 10000, Requests: 1000, Hist: fast}}, Done: &Done{Pod: 0}},
			1: {Steps: []PodStep{{Pod: 1, Step: 0, LoadStartMs: 0, LoadEndMs: 10000, Requests: 1000, Hist: slow}}, Done: &Done{Pod: 1}},
		}}
	r := Merge(in)
	st := r.Steps[0]
	if st.P99Ms < 100*0.91 || st.P99Ms > 100*1.1 {
		t.Fatalf("merged p99 %.2fms: want ≈100ms (averaging would give ≈50ms)", st.P99Ms)
	}
	if st.P50Ms > 1.1 { // the 1000th of 2000 requests is still a fast one
		t.Fatalf("merged p50 %.2fms: want ≈1ms", st.P50Ms)
	}
	if st.RPS != 200 {
		t.Fatalf("RPS %.1f, want 100+100", st.RPS)
	}
}

func TestMergeReportsMissingAndFailedPods(t *testing.T) {
	in, pods := loadRecorded(t)
	in.Pods = map[int]PodLog{0: pods[0]}
	r := Merge(in)
	if len(r.Warnings) != 1 || r.Steps[0].PodsReporting != 1 {
		t.Fatalf("warnings %v", r.Warnings)
	}
	p := pods[1]
	p.Done = nil
	in.Pods = map[int]PodLog{0: pods[0], 1: p}
	if r := Merge(in); len(r.Warnings) != 1 {
		t.Fatalf("an unfinished pod must be reported: %v", r.Warnings)
	}
}

func TestClientBoundDetection(t *testing.T) {
	in, pods := loadRecorded(t)
	// Pretend pod 1 ran out of CPU in the fastest step: that step is client-bound, and the peak moves to the
	// fastest step that was not.
	r0 := Merge(in)
	fastest := r0.PeakStep
	p1 := pods[1]
	p1.Steps = append([]PodStep(nil), p1.Steps...)
	p1.Steps[fastest].CPU.Fraction = 0.93
	in.Pods = map[int]PodLog{0: pods[0], 1: p1}
	r := Merge(in)
	if !r.Steps[fastest].ClientBound || r.ClientBoundSteps != 1 || r.Steps[fastest].ClientCPU != 0.93 {
		t.Fatalf("step %d: %+v", fastest, r.Steps[fastest])
	}
	if r.PeakStep == fastest || r.MeasuredPeakStep != fastest {
		t.Fatalf("peak %d measured %d: a client-bound step must not be the peak", r.PeakStep, r.MeasuredPeakStep)
	}
	s := Summarize(r)
	if s.PeakRPS != int64(math.Round(r.Steps[r.PeakStep].RPS)) || s.ClientBoundSteps != 1 || s.MeasuredPeakRPS <= s.PeakRPS {
		t.Fatalf("summary %+v", s)
	}
	// 89.9% is not client-bound.
	p1.Steps[fastest].CPU.Fraction = 0.899
	if Merge(in).ClientBoundSteps != 0 {
		t.Fatal("0.899 must not be client-bound")
	}
	// Every step client-bound: no peak is claimed, only a lower bound.
	for i := range p1.Steps {
		p1.Steps[i].CPU.Fraction = 0.97
	}
	r = Merge(in)
	s = Summarize(r)
	if r.PeakStep != -1 || s.PeakRPS != 0 || s.Peak == "" || s.Peak[:2] != ">=" || s.P99 == "" {
		t.Fatalf("all client-bound: %+v", s)
	}
}

func TestServerColumns(t *testing.T) {
	in, pods := loadRecorded(t)
	a := pods[0].Steps[1]
	b := pods[1].Steps[1]
	start, end := max(a.LoadStartMs, b.LoadStartMs), min(a.LoadEndMs, b.LoadEndMs)
	in.Server = []ServerSample{
		{Pod: "srv-0", UnixMs: start - 500, Requests: 0, CPUSeconds: 0}, // before the window: ignored
		{Pod: "srv-0", UnixMs: start + 500, Requests: 1000, CPUSeconds: 10, RSSBytes: 5 << 20},
		{Pod: "srv-0", UnixMs: start + 3500, Requests: 31000, CPUSeconds: 11.5, RSSBytes: 6 << 20},
		{Pod: "srv-1", UnixMs: start + 600, Requests: 0, CPUSeconds: 1, RSSBytes: 4 << 20},
		{Pod: "srv-1", UnixMs: start + 3600, Requests: 15000, CPUSeconds: 1.75, RSSBytes: 4 << 20},
		{Pod: "srv-0", UnixMs: end + 100, Requests: 99999, CPUSeconds: 99}, // after: ignored
	}
	st := Merge(in).Steps[1]
	if !st.ServerMeasured || st.ServerPodsSampled != 2 {
		t.Fatalf("%+v", st)
	}
	// srv-0: 1.5 cpu-s / 3 s = 0.5 cores, 10000 req/s; srv-1: 0.25 cores, 5000 req/s.
	if st.ServerCPUCores != 0.75 || st.ServerRPS != 15000 || st.RequestsPerCPUSec != 20000 || st.ServerRSSBytes != 10<<20 {
		t.Fatalf("server columns %+v", st)
	}
	if other := Merge(in).Steps[0]; other.ServerMeasured {
		t.Fatal("step 0 had no samples in its window")
	}
}

func TestVerdict(t *testing.T) {
	in, _ := loadRecorded(t)
	r := Merge(in)
	in.Thresholds = Thresholds{P99Ms: r.P99Ms * 2, MaxErrorRate: 0.01}
	if r := Merge(in); r.Verdict != "Pass" {
		t.Fatalf("%s: %s", r.Verdict, r.VerdictReason)
	}
	in.Thresholds = Thresholds{P99Ms: r.P99Ms / 2, MaxErrorRate: -1}
	if r := Merge(in); r.Verdict != "Fail" {
		t.Fatalf("%s: %s", r.Verdict, r.VerdictReason)
	}
	in.Thresholds = Thresholds{MaxErrorRate: 0}
	in.Pods[0].Steps[0].Errors = 1
	if r := Merge(in); r.Verdict != "Fail" {
		t.Fatalf("one error with max 0%%: %s: %s", r.Verdict, r.VerdictReason)
	}
}

// A real k6 pod limited to 0.3 CPU (recorded from the image under docker --cpus 0.3): the runner found the limit
// in the cgroup, and the step where k6 used >= 90% of it is client-bound.
func TestClientBoundRecorded(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "clientbound-1pod", "pod0.log"))
	if err != nil {
		t.Fatal(err)
	}
	log, err := ParseLog(raw)
	if err != nil {
		t.Fatal(err)
	}
	steps := []PlanStep{{Index: 0, VUs: 2, DurationSeconds: 5}, {Index: 1, VUs: 4, DurationSeconds: 5}, {Index: 2, VUs: 6, DurationSeconds: 5}}
	r := Merge(Input{Parallelism: 1, Steps: steps, Pods: map[int]PodLog{0: log}, Thresholds: Thresholds{MaxErrorRate: -1}})
	for _, s := range log.Steps {
		if s.CPU.LimitCores != 0.3 {
			t.Fatalf("step %d: limit %v cores, want the container's 0.3", s.Step, s.CPU.LimitCores)
		}
		if want := s.CPU.Fraction >= ClientBoundFraction; r.Steps[s.Step].ClientBound != want {
			t.Errorf("step %d: k6 at %.1f%% of its limit, client-bound %v", s.Step, s.CPU.Fraction*100, r.Steps[s.Step].ClientBound)
		}
	}
	if r.ClientBoundSteps == 0 || !r.Steps[0].ClientBound || r.Steps[0].ClientCPU < 0.9 {
		t.Fatalf("step 0 used %.2f of its limit: %+v", r.Steps[0].ClientCPU, r.Steps[0])
	}
	if log.Steps[0].CPU.ThrottledSeconds <= 0 {
		t.Fatal("a saturated 0.3-core container is throttled")
	}
	if r.PeakStep == 0 {
		t.Fatal("a client-bound step is never the peak")
	}
}

// The classic tables' min/max requests/s per step: the pods' per-second rates, added up second by second.
func TestPerSecondMinMax(t *testing.T) {
	in, _ := loadRecorded(t)
	r := Merge(in)
	for _, st := range r.Steps {
		if st.RPSSeconds < 2 || st.RPSMin <= 0 || st.RPSMin > st.RPSMax {
			t.Fatalf("step %d: min %.1f max %.1f over %d s", st.Index, st.RPSMin, st.RPSMax, st.RPSSeconds)
		}
		// The step's average lies between its slowest and fastest second (within the edge seconds' noise).
		if st.RPS < st.RPSMin*0.8 || st.RPS > st.RPSMax*1.2 {
			t.Errorf("step %d: average %.1f outside [%.1f, %.1f]", st.Index, st.RPS, st.RPSMin, st.RPSMax)
		}
	}
	// Synthetic: two pods, 100 and 300 req/s in second 1, 200 and 100 in second 2 (min 300, max 400); the third
	// second only pod 0 covered is left out.
	mk := func(counts ...int64) []CountSample {
		var out []CountSample
		for i, c := range counts {
			out = append(out, CountSample{UnixMs: 1000 + int64(i)*1000, Count: c})
		}
		return out
	}
	a := PodStep{Step: 0, LoadStartMs: 1000, LoadEndMs: 4000, Requests: 600, ReqCounts: mk(0, 100, 300, 600)}
	b := PodStep{Pod: 1, Step: 0, LoadStartMs: 1000, LoadEndMs: 3000, Requests: 400, ReqCounts: mk(0, 300, 400)}
	r = Merge(Input{Parallelism: 2, Steps: []PlanStep{{VUs: 2, DurationSeconds: 3}}, Thresholds: Thresholds{MaxErrorRate: -1},
		Pods: map[int]PodLog{0: {Steps: []PodStep{a}}, 1: {Steps: []PodStep{b}}}})
	if st := r.Steps[0]; st.RPSSeconds != 2 || st.RPSMin != 300 || st.RPSMax != 400 {
		t.Fatalf("%+v", st)
	}
}
