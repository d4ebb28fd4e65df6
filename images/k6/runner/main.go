// Command runner is the entrypoint of the hyperstatic k6 image. It runs each step of a Benchmark's plan as its own
// k6 process at the step's planned wall-clock time (so the k6 pods of one Job load together), samples that
// process's CPU while it runs, and, as the last thing it prints, the result block the operator reads from the tail
// of the pod log (benchresults.ParseLog: HSBEGIN, one HSRESULT line per step, HSDONE). While it runs it prints one
// progress line per step and at most k6OutputBudget bytes of k6's own output per step, so that k6 logging a
// warning per failed request cannot make the log rotate the results away. A FROM-scratch image has no shell, hence
// a small static Go program.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
)

func main() {
	k6 := flag.String("k6", "/k6", "path of the k6 binary")
	dir := flag.String("dir", "/etc/hyperstatic/benchmark", "directory holding script.js, paths.json and plan.json")
	startAt := flag.Int64("start-at-ms", envInt("HS_START_AT_MS", 0), "Unix time in ms at which step 0 starts (0: now)")
	index := flag.Int("index", int(envInt("JOB_COMPLETION_INDEX", 0)), "this pod's index (its execution segment)")
	count := flag.Int("count", int(envInt("HS_PARALLELISM", 1)), "number of k6 pods")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	err := run(ctx, *k6, *dir, *startAt, *index, *count, os.Stdout, os.Stderr)
	stop() // not deferred: os.Exit below would skip it
	var inBlock reportedError
	if err != nil && !errors.As(err, &inBlock) {
		// A failure the result block already reports is not printed again: the block stays the last output.
		fmt.Fprintln(os.Stderr, "runner:", err)
	}
	if err != nil {
		os.Exit(1)
	}
}

// reportedError is a failure that the result block's HSDONE line already carries.
type reportedError struct{ error }

func envInt(name string, def int64) int64 {
	if v, err := strconv.ParseInt(os.Getenv(name), 10, 64); err == nil {
		return v
	}
	return def
}

// run runs the plan, printing progress and k6's (bounded) output to logw, and the result block to out, last.
func run(ctx context.Context, k6, dir string, startAtMs int64, index, count int, out, logw io.Writer) error {
	raw, err := os.ReadFile(filepath.Join(dir, k6script.PlanFile))
	if err != nil {
		return err
	}
	var plan k6script.Plan
	if err := json.Unmarshal(raw, &plan); err != nil {
		return fmt.Errorf("plan: %w", err)
	}
	if index < 0 || index >= count {
		return fmt.Errorf("index %d out of range for %d pods", index, count)
	}
	start := time.Now()
	if startAtMs > 0 {
		start = time.UnixMilli(startAtMs)
	}
	segment, sequence := k6script.Segment(index, count)
	limit := cpuLimitCores()
	var results []benchresults.PodStep
	var failed []string
	for i, step := range plan.Steps {
		due := plan.StepStart(start, i)
		select {
		case <-time.After(time.Until(due)):
		case <-ctx.Done():
			return printBlock(out, index, i, results, "interrupted")
		}
		k6out := newBoundedWriter(logw, k6OutputBudget)
		res := runStep(ctx, k6, dir, i, segment, sequence, limit, step.DurationSeconds, k6out)
		if lines, size := k6out.suppressed(); lines > 0 {
			fmt.Fprintf(logw, "runner: step %d: %d more line(s) (%d bytes) of k6 output not shown (the first %d bytes per step are)\n", i, lines, size, k6OutputBudget)
		}
		res.Pod = index
		if res.LoadStartMs > 0 {
			res.LateMs = res.LoadStartMs - due.UnixMilli()
		}
		if res.Error != "" {
			failed = append(failed, fmt.Sprintf("step %d: %s", i, res.Error))
		}
		fmt.Fprintf(logw, "runner: step %d of %d done: %d requests, %d errors, k6 CPU %.0f%% of its limit%s\n",
			i, len(plan.Steps), res.Requests, res.Errors, res.CPU.Fraction*100, errorSuffix(res.Error))
		results = append(results, res)
		if ctx.Err() != nil {
			return printBlock(out, index, i+1, results, "interrupted")
		}
	}
	return printBlock(out, index, len(plan.Steps), results, strings.Join(failed, "; "))
}

func errorSuffix(msg string) string {
	if msg == "" {
		return ""
	}
	return ": " + msg
}

// printBlock prints the result block (see benchresults.ParseLog) and returns the run's outcome: nil, or a
// reportedError carrying msg.
func printBlock(out io.Writer, index, steps int, results []benchresults.PodStep, msg string) error {
	lines := make([]string, 0, len(results)+2)
	begin, err := benchresults.FormatBegin(benchresults.Begin{Pod: index, Steps: steps})
	if err != nil {
		return err
	}
	lines = append(lines, begin)
	for _, res := range results {
		line, err := benchresults.FormatResult(res)
		if err != nil {
			return err
		}
		lines = append(lines, line)
	}
	done, err := benchresults.FormatDone(benchresults.Done{Pod: index, Steps: steps, Results: len(results), Error: msg})
	if err != nil {
		return err
	}
	lines = append(lines, done)
	// One write: the block is not interleaved with anything else written to the same log.
	if _, err := io.WriteString(out, strings.Join(lines, "\n")+"\n"); err != nil {
		return err
	}
	if msg != "" {
		return reportedError{errors.New(msg)}
	}
	return nil
}

// runStep runs one k6 process for step i and measures its CPU.
func runStep(ctx context.Context, k6, dir string, i int, segment, sequence string, limit float64, seconds float64, k6out io.Writer) benchresults.PodStep {
	res := benchresults.PodStep{Step: i}
	// A step that runs far past its length is stuck (e.g. a target that never answers and no timeout fits).
	stepCtx, cancel := context.WithTimeout(ctx, time.Duration(seconds*float64(time.Second))+2*time.Minute)
	defer cancel()
	// k6's REST API on loopback gives the running request count, polled each second for per-second rates.
	addr := freeLoopbackAddr()
	cmd := exec.CommandContext(stepCtx, k6, "run", "--quiet", "--no-color", "--no-usage-report", "--address", addr,
		"--log-format", "raw", "-e", "HS_STEP="+strconv.Itoa(i),
		"--execution-segment", segment, "--execution-segment-sequence", sequence, k6script.ScriptFile)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "K6_NO_USAGE_REPORT=true", "HOME="+os.TempDir())
	cmd.Stderr = k6out // exec copies it in a goroutine that Wait waits for
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	if err := cmd.Start(); err != nil {
		res.Error = err.Error()
		return res
	}
	pid := cmd.Process.Pid
	var samples []benchresults.CPUSample
	var mu sync.Mutex
	record := func(cpu float64) {
		mu.Lock()
		samples = append(samples, benchresults.CPUSample{UnixMs: time.Now().UnixMilli(), Seconds: cpu, ThrottledSeconds: throttledSeconds()})
		mu.Unlock()
	}
	done := make(chan struct{})
	var counts []benchresults.CountSample
	var countsDone sync.WaitGroup
	if addr != "" {
		countsDone.Add(1)
		go func() {
			defer countsDone.Done()
			counts = pollRequestCounts(addr, done)
		}()
	}
	go func() {
		t := time.NewTicker(500 * time.Millisecond)
		defer t.Stop()
		for {
			if cpu, err := procCPUSeconds(pid); err == nil {
				record(cpu)
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	var summary string
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 0, 64*1024), 16*1024*1024)
	for sc.Scan() {
		if line := sc.Text(); strings.HasPrefix(line, k6script.SummaryPrefix) {
			summary = strings.TrimPrefix(line, k6script.SummaryPrefix)
			// The load is over once k6 prints its summary: take the final CPU reading now, while the process lives.
			if cpu, err := procCPUSeconds(pid); err == nil {
				record(cpu)
			}
		} else {
			fmt.Fprintln(k6out, line)
		}
	}
	waitErr := cmd.Wait()
	close(done)
	countsDone.Wait()
	if summary == "" {
		res.Error = fmt.Sprintf("k6 printed no summary (%v)", waitErr)
		return res
	}
	if err := json.Unmarshal([]byte(summary), &res); err != nil {
		res.Error = fmt.Sprintf("k6 summary: %v", err)
		return res
	}
	if waitErr != nil {
		res.Error = fmt.Sprintf("k6: %v", waitErr)
	}
	mu.Lock()
	res.CPU = benchresults.WindowUse(samples, res.LoadStartMs, res.LoadEndMs, limit)
	mu.Unlock()
	res.ReqCounts = counts
	return res
}

// freeLoopbackAddr finds a free port on 127.0.0.1 for k6's REST API ("" when none: k6 then runs without it).
func freeLoopbackAddr() string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return ""
	}
	defer l.Close()
	return l.Addr().String()
}

// pollRequestCounts reads http_reqs from k6's REST API once a second until done is closed. A poll that fails
// (k6 still starting, or finished) is skipped.
func pollRequestCounts(addr string, done <-chan struct{}) []benchresults.CountSample {
	client := &http.Client{Timeout: 500 * time.Millisecond}
	var out []benchresults.CountSample
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-done:
			return out
		case <-t.C:
		}
		resp, err := client.Get("http://" + addr + "/v1/metrics/http_reqs")
		if err != nil {
			continue
		}
		var m struct {
			Data struct {
				Attributes struct {
					Sample struct {
						Count float64 `json:"count"`
					} `json:"sample"`
				} `json:"attributes"`
			} `json:"data"`
		}
		err = json.NewDecoder(resp.Body).Decode(&m)
		resp.Body.Close()
		if err == nil && resp.StatusCode == http.StatusOK {
			out = append(out, benchresults.CountSample{UnixMs: time.Now().UnixMilli(), Count: int64(m.Data.Attributes.Sample.Count)})
		}
	}
}

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat: 100 on every Linux architecture we build for
// (it is part of the kernel ABI, independent of CONFIG_HZ; reading it properly needs sysconf, i.e. cgo).
const clockTicks = 100

// procCPUSeconds reads utime+stime (all threads) of a process from /proc/<pid>/stat.
func procCPUSeconds(pid int) (float64, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name (field 2) is in parentheses and may hold spaces: split after the last ')'.
	s := string(b)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, fmt.Errorf("bad stat line")
	}
	f := strings.Fields(s[end+1:])
	// After the name: state(3) ppid(4) ... utime is field 14, stime field 15: indexes 11 and 12 here.
	if len(f) < 13 {
		return 0, fmt.Errorf("short stat line")
	}
	ut, err1 := strconv.ParseFloat(f[11], 64)
	st, err2 := strconv.ParseFloat(f[12], 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("bad utime/stime")
	}
	return (ut + st) / clockTicks, nil
}
