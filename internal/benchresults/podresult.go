// Package benchresults turns what each k6 pod of a Benchmark reports into one trustworthy table: requests summed,
// latency percentiles from merged histograms, each step's client CPU (client-bound detection) and the target
// server's CPU, memory and requests per CPU-second beside it. It renders that table as JSON, CSV and an SVG chart.
// Everything here is pure: the controller feeds it pod logs and server samples.
package benchresults

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// The runner prints its results as one block, the last thing it prints:
//
//	HSBEGIN {"pod":0,"steps":20}
//	HSRESULT {...step 0...}
//	...
//	HSDONE {"pod":0,"steps":20,"results":20}
//
// The block is last so that whatever k6 printed before it (a warning per failed request) cannot push it out of a
// log read from its tail, and it is delimited and counted so that a block cut by log rotation or by the reader's
// byte limit is detected ("results missing or truncated") instead of parsed as fewer steps. Other lines (k6's
// output, the runner's progress) are ignored by the parser.
const (
	BeginPrefix  = "HSBEGIN "
	ResultPrefix = "HSRESULT "
	DonePrefix   = "HSDONE "
)

// ErrResultsIncomplete is the error of a log whose result block is missing or cut.
var ErrResultsIncomplete = errors.New("results missing or truncated")

// PodStep is one k6 pod's result for one step: the wire format between the runner in the k6 image and the operator.
type PodStep struct {
	// Pod is the pod's completion index (its execution segment).
	Pod int `json:"pod"`
	// Step is the step index in the plan.
	Step int `json:"step"`
	// LoadStartMs and LoadEndMs bound the load window in Unix milliseconds (k6's test run, from its summary).
	LoadStartMs int64 `json:"loadStartMs"`
	LoadEndMs   int64 `json:"loadEndMs"`
	// LateMs is how late k6 started against the planned schedule (a late pod makes steps overlap less).
	LateMs int64 `json:"lateMs"`
	// Requests completed (any status), Errors (status 0 or >= 400), Dropped iterations (arrival-rate only:
	// k6 had no free VU to start a request when it was due).
	Requests int64 `json:"requests"`
	Errors   int64 `json:"errors"`
	Dropped  int64 `json:"dropped"`
	// Redirects are the responses with a 3xx status among Requests: k6 follows none (k6script), so they are the
	// target's answers; a run of mostly redirects measured the redirect, not the site.
	Redirects int64 `json:"redirects,omitempty"`
	// BytesReceived by k6.
	BytesReceived int64 `json:"bytesReceived"`
	// ReqCounts are k6's running request count, polled about once a second from its REST API on loopback:
	// the per-second rates behind the step's min and max requests/s.
	ReqCounts []CountSample `json:"reqCounts,omitempty"`
	// Hist is the latency histogram (http_req_duration of responses with a status) by bucket index.
	Hist Histogram `json:"hist"`
	// Protocols counts the responses with a status by HTTP version (k6's res.proto; names in Protocols).
	Protocols map[string]int64 `json:"protocols,omitempty"`
	// K6 are k6's own percentiles for this pod (milliseconds), kept to cross-check the histogram.
	K6 K6Trend `json:"k6"`
	// CPU is what the k6 process used during the load window.
	CPU CPUUse `json:"cpu"`
	// Error is set when k6 failed for this step; the counts are then what k6 reported, if anything.
	Error string `json:"error,omitempty"`
}

// CountSample is k6's cumulative http_reqs count at a moment.
type CountSample struct {
	UnixMs int64 `json:"t"`
	Count  int64 `json:"n"`
}

// K6Trend is k6's summary of http_req_duration, in milliseconds.
type K6Trend struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// CPUUse is the k6 process's CPU during a step's load window.
type CPUUse struct {
	// Seconds of CPU (user + system, all threads) the k6 process used in the load window.
	Seconds float64 `json:"seconds"`
	// WallSeconds is the window's length.
	WallSeconds float64 `json:"wallSeconds"`
	// LimitCores is the pod's CPU limit in cores (from its cgroup; the machine's CPU count when unlimited).
	LimitCores float64 `json:"limitCores"`
	// Fraction = Seconds / (WallSeconds·LimitCores): 1 means k6 used all the CPU it may use.
	Fraction float64 `json:"fraction"`
	// ThrottledSeconds is the container's CFS throttled time in the window (cgroup v2), when readable.
	ThrottledSeconds float64 `json:"throttledSeconds"`
	// Series is the fraction of the limit used per second of the window.
	Series []float64 `json:"series,omitempty"`
}

// Begin opens the runner's result block.
type Begin struct {
	Pod int `json:"pod"`
	// Steps is how many steps the runner ran (or began) before it printed the block.
	Steps int `json:"steps"`
}

// Done is the runner's last line.
type Done struct {
	Pod   int `json:"pod"`
	Steps int `json:"steps"`
	// Results is how many HSRESULT lines the block holds: a reader that finds fewer lost some.
	Results int    `json:"results"`
	Error   string `json:"error,omitempty"`
}

// PodLog is what one pod printed.
type PodLog struct {
	Steps []PodStep
	Done  *Done
}

// ParseLog reads a k6 runner's output (the pod log, or its tail): the last result block in it. A block whose
// HSBEGIN or HSDONE line is missing, or whose HSDONE counts more results than it holds, is ErrResultsIncomplete;
// a line of the block that does not parse is an error too, since it means the results are damaged.
func ParseLog(log []byte) (PodLog, error) {
	begin := lastLineWith(log, BeginPrefix)
	if begin < 0 {
		return PodLog{}, fmt.Errorf("%w: no %sline", ErrResultsIncomplete, BeginPrefix)
	}
	var out PodLog
	sc := bufio.NewScanner(bytes.NewReader(log[begin:]))
	sc.Buffer(make([]byte, 0, 64*1024), len(log)+1)
	line := 0
	for sc.Scan() {
		line++
		// Container runtimes may prefix a timestamp when asked to; we never ask, but tolerate leading spaces.
		text := strings.TrimLeft(sc.Text(), " ")
		switch {
		case strings.HasPrefix(text, ResultPrefix):
			var s PodStep
			if err := json.Unmarshal([]byte(text[len(ResultPrefix):]), &s); err != nil {
				return out, damaged(sc, log, line, "step result", err)
			}
			out.Steps = append(out.Steps, s)
		case strings.HasPrefix(text, DonePrefix):
			var d Done
			if err := json.Unmarshal([]byte(text[len(DonePrefix):]), &d); err != nil {
				return out, damaged(sc, log, line, "done line", err)
			}
			if d.Results != len(out.Steps) {
				return out, fmt.Errorf("%w: the block announces %d step result(s) and holds %d", ErrResultsIncomplete, d.Results, len(out.Steps))
			}
			out.Done = &d
			return out, nil
		}
	}
	if err := sc.Err(); err != nil {
		return out, err
	}
	return out, fmt.Errorf("%w: the block has %d step result(s) and no %sline", ErrResultsIncomplete, len(out.Steps), DonePrefix)
}

// damaged is the error of a block line that does not parse: a cut (the log's last line, without its newline: the
// reader's byte limit stopped in it) is ErrResultsIncomplete; any other is damage.
func damaged(sc *bufio.Scanner, log []byte, line int, what string, err error) error {
	if !sc.Scan() && !bytes.HasSuffix(log, []byte("\n")) {
		return fmt.Errorf("%w: result block line %d (%s) is cut short", ErrResultsIncomplete, line, what)
	}
	return fmt.Errorf("result block line %d: bad %s: %w", line, what, err)
}

// BlockSize is the length of the last result block of a log (from its last HSBEGIN line to the end): what
// ParseLog would parse; 0 when there is none.
func BlockSize(log []byte) int {
	if begin := lastLineWith(log, BeginPrefix); begin >= 0 {
		return len(log) - begin
	}
	return 0
}

// lastLineWith is the offset of the last line of log that starts with prefix, -1 when none does.
func lastLineWith(log []byte, prefix string) int {
	for end := len(log); end > 0; {
		start := bytes.LastIndexByte(log[:end], '\n') + 1
		if bytes.HasPrefix(bytes.TrimLeft(log[start:end], " "), []byte(prefix)) {
			return start
		}
		end = start - 1
	}
	return -1
}

// FormatBegin is the first line of the runner's result block.
func FormatBegin(b Begin) (string, error) {
	raw, err := json.Marshal(b)
	if err != nil {
		return "", err
	}
	return BeginPrefix + string(raw), nil
}

// FormatResult is the line the runner prints for a step.
func FormatResult(s PodStep) (string, error) {
	b, err := json.Marshal(s)
	if err != nil {
		return "", err
	}
	return ResultPrefix + string(b), nil
}

// FormatDone is the last line of the runner's result block.
func FormatDone(d Done) (string, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return "", err
	}
	return DonePrefix + string(b), nil
}
