package benchresults

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
)

// PlanStep is one planned step: its load and length.
type PlanStep struct {
	Index int `json:"index"`
	// VUs over all pods (closed model), or 0.
	VUs int32 `json:"vus,omitempty"`
	// Rate in requests/s over all pods (open model), or 0.
	Rate            int32   `json:"rate,omitempty"`
	DurationSeconds float64 `json:"durationSeconds"`
}

// ServerSample is one scrape of one target server pod, taken by the operator near step boundaries.
type ServerSample struct {
	Pod        string  `json:"pod"`
	UnixMs     int64   `json:"t"`
	Requests   float64 `json:"requests"`
	CPUSeconds float64 `json:"cpuSeconds"`
	RSSBytes   float64 `json:"rssBytes"`
}

// Thresholds of the verdict; zero values mean "not set".
type Thresholds struct {
	P99Ms        float64
	MaxErrorRate float64 // fraction; negative means not set
}

// Input is everything a merge needs.
type Input struct {
	Workload    string
	Target      string
	KeepAlive   bool
	Parallelism int
	Steps       []PlanStep
	// Pods maps a completion index to what that pod printed.
	Pods       map[int]PodLog
	Server     []ServerSample
	Thresholds Thresholds
	// Protocol is the spec.protocol of the run ("Auto", "HTTP/1.1", "HTTP/2"; "" counts as Auto).
	Protocol string
}

// Step is one merged row of the results table.
type Step struct {
	Index       int   `json:"index"`
	Concurrency int32 `json:"concurrency,omitempty"`
	TargetRate  int32 `json:"targetRate,omitempty"`
	// PodsReporting is how many k6 pods reported this step (of Parallelism).
	PodsReporting int   `json:"podsReporting"`
	Requests      int64 `json:"requests"`
	Errors        int64 `json:"errors"`
	Dropped       int64 `json:"dropped"`
	// Redirects are the 3xx answers among Requests (never followed).
	Redirects int64 `json:"redirects,omitempty"`
	// RPS is the sum over pods of each pod's requests / its own load window.
	RPS float64 `json:"rps"`
	// RPSMin and RPSMax are the lowest and highest requests/s of the step's whole seconds, all pods added up
	// second by second (the classic tables' min/max); RPSSeconds is how many seconds they cover (0: not measured).
	RPSMin     float64 `json:"rpsMin"`
	RPSMax     float64 `json:"rpsMax"`
	RPSSeconds int     `json:"rpsSeconds"`
	// Latency percentiles in milliseconds from the merged histogram.
	P50Ms float64 `json:"p50Ms"`
	P90Ms float64 `json:"p90Ms"`
	P99Ms float64 `json:"p99Ms"`
	// ClientCPU is the highest CPU share (of its limit) any k6 pod used in the step; ClientBound when >= 90%.
	ClientCPU   float64 `json:"clientCPU"`
	ClientBound bool    `json:"clientBound"`
	// SkewMs is the spread of the pods' load start times: pods that start apart overlap less.
	SkewMs int64 `json:"skewMs"`
	// Server columns, when the operator scraped the target's pods at least twice inside the step's window.
	ServerMeasured     bool    `json:"serverMeasured"`
	ServerCPUCores     float64 `json:"serverCPUCores,omitempty"`
	ServerRSSBytes     float64 `json:"serverRSSBytes,omitempty"`
	ServerRPS          float64 `json:"serverRPS,omitempty"`
	RequestsPerCPUSec  float64 `json:"requestsPerCPUSecond,omitempty"`
	ServerPodsSampled  int     `json:"serverPodsSampled,omitempty"`
	hist               Histogram
	loadStart, loadEnd int64
}

// Results is the merged run.
type Results struct {
	Workload    string `json:"workload"`
	Target      string `json:"target"`
	KeepAlive   bool   `json:"keepAlive"`
	Parallelism int    `json:"parallelism"`
	Steps       []Step `json:"steps"`
	// Whole-run totals; the percentiles are from every step's histograms merged.
	Requests  int64   `json:"requests"`
	Errors    int64   `json:"errors"`
	Dropped   int64   `json:"dropped"`
	Redirects int64   `json:"redirects,omitempty"`
	ErrorRate float64 `json:"errorRate"`
	P50Ms     float64 `json:"p50Ms"`
	P90Ms     float64 `json:"p90Ms"`
	P99Ms     float64 `json:"p99Ms"`
	// PeakStep is the index in Steps of the fastest step that was not client-bound, -1 if none.
	PeakStep int `json:"peakStep"`
	// MeasuredPeakStep is the index in Steps of the fastest step, client-bound or not, -1 if none.
	MeasuredPeakStep int `json:"measuredPeakStep"`
	ClientBoundSteps int `json:"clientBoundSteps"`
	// Protocols counts the responses with a status by HTTP version, over every pod and step (protocol.go).
	Protocols     map[string]int64 `json:"protocols,omitempty"`
	Verdict       string           `json:"verdict,omitempty"`
	VerdictReason string           `json:"verdictReason,omitempty"`
	// Warnings: missing pods, pods that reported an error, steps that did not line up.
	Warnings []string `json:"warnings,omitempty"`
}

// Merge builds the results table.
func Merge(in Input) Results {
	r := Results{Workload: in.Workload, Target: in.Target, KeepAlive: in.KeepAlive, Parallelism: in.Parallelism,
		PeakStep: -1, MeasuredPeakStep: -1}
	byStep := map[int][]PodStep{}
	pods := make([]int, 0, len(in.Pods))
	for p := range in.Pods {
		pods = append(pods, p)
	}
	sort.Ints(pods)
	for _, p := range pods {
		log := in.Pods[p]
		for _, s := range log.Steps {
			byStep[s.Step] = append(byStep[s.Step], s)
			if s.Error != "" {
				r.Warnings = append(r.Warnings, fmt.Sprintf("pod %d step %d: %s", p, s.Step, s.Error))
			}
		}
		if log.Done == nil {
			r.Warnings = append(r.Warnings, fmt.Sprintf("pod %d did not finish its run", p))
		} else if log.Done.Error != "" {
			r.Warnings = append(r.Warnings, fmt.Sprintf("pod %d: %s", p, log.Done.Error))
		}
	}
	for i := 0; i < in.Parallelism; i++ {
		if _, ok := in.Pods[i]; !ok {
			r.Warnings = append(r.Warnings, fmt.Sprintf("pod %d reported nothing", i))
		}
	}
	total := Histogram{}
	r.Protocols = map[string]int64{}
	for _, ps := range in.Steps {
		st := Step{Index: ps.Index, Concurrency: ps.VUs, TargetRate: ps.Rate, hist: Histogram{}}
		var minStart, maxStart int64 = math.MaxInt64, math.MinInt64
		for _, s := range byStep[ps.Index] {
			st.PodsReporting++
			st.Requests += s.Requests
			st.Errors += s.Errors
			st.Dropped += s.Dropped
			st.Redirects += s.Redirects
			st.hist.Add(s.Hist)
			if ignored := addProtocols(r.Protocols, s.Protocols); len(ignored) > 0 {
				r.Warnings = append(r.Warnings, fmt.Sprintf("pod %d step %d: protocol counts not understood, ignored: %s", s.Pod, s.Step, strings.Join(ignored, ", ")))
			}
			if win := float64(s.LoadEndMs-s.LoadStartMs) / 1000; win > 0 {
				st.RPS += float64(s.Requests) / win
			}
			if s.CPU.Fraction > st.ClientCPU {
				st.ClientCPU = s.CPU.Fraction
			}
			minStart = min(minStart, s.LoadStartMs)
			maxStart = max(maxStart, s.LoadStartMs)
			// The server window is where every pod was loading: the latest start to the earliest end.
			if st.loadStart == 0 || s.LoadStartMs > st.loadStart {
				st.loadStart = s.LoadStartMs
			}
			if st.loadEnd == 0 || s.LoadEndMs < st.loadEnd {
				st.loadEnd = s.LoadEndMs
			}
		}
		if st.PodsReporting > 0 {
			st.SkewMs = maxStart - minStart
			if float64(st.SkewMs) > 100*ps.DurationSeconds { // more than 10% of the step
				r.Warnings = append(r.Warnings, fmt.Sprintf("step %d: k6 pods started %dms apart, so their loads overlapped only partly", ps.Index, st.SkewMs))
			}
		}
		st.RPS = round1(st.RPS)
		perSecond(&st, byStep[ps.Index])
		st.P50Ms = round3(st.hist.Quantile(0.50))
		st.P90Ms = round3(st.hist.Quantile(0.90))
		st.P99Ms = round3(st.hist.Quantile(0.99))
		st.ClientBound = st.ClientCPU >= ClientBoundFraction
		serverColumns(&st, in.Server)
		total.Add(st.hist)
		r.Requests += st.Requests
		r.Errors += st.Errors
		r.Dropped += st.Dropped
		r.Redirects += st.Redirects
		if st.ClientBound {
			r.ClientBoundSteps++
		}
		r.Steps = append(r.Steps, st)
	}
	for i, st := range r.Steps {
		if st.Requests == 0 {
			continue
		}
		if r.MeasuredPeakStep < 0 || st.RPS > r.Steps[r.MeasuredPeakStep].RPS {
			r.MeasuredPeakStep = i
		}
		if !st.ClientBound && (r.PeakStep < 0 || st.RPS > r.Steps[r.PeakStep].RPS) {
			r.PeakStep = i
		}
	}
	if r.Requests > 0 {
		r.ErrorRate = float64(r.Errors) / float64(r.Requests)
	}
	if len(r.Protocols) == 0 {
		r.Protocols = nil
	}
	r.Warnings = append(r.Warnings, protocolWarnings(r.Protocols, in.Protocol)...)
	r.P50Ms = round3(total.Quantile(0.50))
	r.P90Ms = round3(total.Quantile(0.90))
	r.P99Ms = round3(total.Quantile(0.99))
	r.Verdict, r.VerdictReason = verdict(r, in.Thresholds)
	return r
}

// perSecond adds the pods' per-second request rates up by wall-clock second and keeps the min and max over the
// seconds every reporting pod covered. Each pod's rate between two polls inside its load window is attributed to
// the second nearest the interval's middle.
func perSecond(st *Step, pods []PodStep) {
	sum := map[int64]float64{}
	seen := map[int64]int{}
	for _, p := range pods {
		for i := 1; i < len(p.ReqCounts); i++ {
			a, b := p.ReqCounts[i-1], p.ReqCounts[i]
			if a.UnixMs < p.LoadStartMs || b.UnixMs > p.LoadEndMs || b.UnixMs-a.UnixMs < 500 || b.Count < a.Count {
				continue
			}
			key := int64(math.Round(float64(a.UnixMs+b.UnixMs) / 2000))
			sum[key] += float64(b.Count-a.Count) * 1000 / float64(b.UnixMs-a.UnixMs)
			seen[key]++
		}
	}
	first := true
	for key, v := range sum {
		if seen[key] != len(pods) {
			continue
		}
		st.RPSSeconds++
		if first || v < st.RPSMin {
			st.RPSMin = v
		}
		if first || v > st.RPSMax {
			st.RPSMax = v
		}
		first = false
	}
	st.RPSMin, st.RPSMax = round1(st.RPSMin), round1(st.RPSMax)
}

// serverColumns fills a step's server columns from the samples inside its load window: for each server pod the
// first and last sample in the window give its CPU, requests and memory over that span.
func serverColumns(st *Step, samples []ServerSample) {
	if st.loadEnd <= st.loadStart {
		return
	}
	first := map[string]ServerSample{}
	last := map[string]ServerSample{}
	for _, s := range samples {
		if s.UnixMs < st.loadStart || s.UnixMs > st.loadEnd {
			continue
		}
		if f, ok := first[s.Pod]; !ok || s.UnixMs < f.UnixMs {
			first[s.Pod] = s
		}
		if l, ok := last[s.Pod]; !ok || s.UnixMs > l.UnixMs {
			last[s.Pod] = s
		}
	}
	var cpu, reqs, rss float64
	for pod, f := range first {
		l := last[pod]
		dt := float64(l.UnixMs-f.UnixMs) / 1000
		if dt < 1 || l.CPUSeconds < f.CPUSeconds || l.Requests < f.Requests { // too close, or the pod restarted
			continue
		}
		st.ServerPodsSampled++
		cpu += (l.CPUSeconds - f.CPUSeconds) / dt
		reqs += (l.Requests - f.Requests) / dt
		rss += l.RSSBytes
	}
	if st.ServerPodsSampled == 0 {
		return
	}
	st.ServerMeasured = true
	st.ServerCPUCores = round3(cpu)
	st.ServerRPS = round1(reqs)
	st.ServerRSSBytes = rss
	if cpu > 0 {
		st.RequestsPerCPUSec = round1(reqs / cpu)
	}
}

func verdict(r Results, t Thresholds) (string, string) {
	if t.P99Ms <= 0 && t.MaxErrorRate < 0 {
		return "", "no thresholds set"
	}
	if r.Requests == 0 {
		return "Fail", "no request completed"
	}
	if t.P99Ms > 0 && r.P99Ms > t.P99Ms {
		return "Fail", fmt.Sprintf("p99 %s over the whole run exceeds the threshold %s", FormatMs(r.P99Ms), FormatMs(t.P99Ms))
	}
	if t.MaxErrorRate >= 0 && r.ErrorRate > t.MaxErrorRate {
		return "Fail", fmt.Sprintf("error rate %s exceeds the threshold %s", FormatPercent(r.ErrorRate), FormatPercent(t.MaxErrorRate))
	}
	return "Pass", "every threshold held over the whole run"
}

// FormatMs renders milliseconds for people: 850µs, 1.25ms, 12.5ms, 1.20s.
func FormatMs(ms float64) string {
	switch {
	case ms < 1:
		return fmt.Sprintf("%.0fµs", ms*1000)
	case ms < 10:
		return fmt.Sprintf("%.2fms", ms)
	case ms < 1000:
		return fmt.Sprintf("%.1fms", ms)
	default:
		return fmt.Sprintf("%.2fs", ms/1000)
	}
}

// FormatCores renders CPU cores to the millicore, with no trailing zeros: 0.049, 0.05, 2.
func FormatCores(cores float64) string {
	return strconv.FormatFloat(round3(cores), 'f', -1, 64)
}

// FormatPercent renders a fraction as a percentage.
func FormatPercent(f float64) string {
	return fmt.Sprintf("%.3g%%", f*100)
}

func round1(v float64) float64 { return math.Round(v*10) / 10 }
