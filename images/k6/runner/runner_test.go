package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/k6script"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// k6Binary is the k6 that `make k6-build` links into ./bin (make go-test builds it first).
func k6Binary(t *testing.T) string {
	t.Helper()
	k6 := filepath.Join(testenv.RepoRoot(), "bin", "k6")
	if _, err := os.Stat(k6); err != nil {
		t.Fatalf("k6 not found at %s: run `make k6-build` (make go-test does)", k6)
	}
	return k6
}

// runOneStep runs the one-step plan in dir as one pod with the real k6 and returns the step's result, failing the
// test with k6's output when the run or its result block is broken.
func runOneStep(t *testing.T, k6, dir string) benchresults.PodStep {
	t.Helper()
	var out, progress bytes.Buffer
	if err := run(context.Background(), k6, dir, time.Now().UnixMilli(), 0, 1, &out, &progress); err != nil {
		t.Fatalf("%v\n%s\n%s", err, out.String(), progress.String())
	}
	log, err := benchresults.ParseLog(out.Bytes())
	if err != nil || len(log.Steps) != 1 || log.Steps[0].Error != "" {
		t.Fatalf("%v\n%s\n%s", err, out.String(), progress.String())
	}
	return log.Steps[0]
}

// writePlan writes the script ConfigMap's files for plan and paths into a fresh directory, as the pod mounts them.
func writePlan(t *testing.T, plan k6script.Plan, paths ...string) string {
	t.Helper()
	files, err := k6script.Files(plan, paths)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestProcCPUSeconds(t *testing.T) {
	before, err := procCPUSeconds(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	// Burn CPU until the reading grows by 0.1 s (the machine may be shared, so wall time says little).
	deadline := time.Now().Add(20 * time.Second)
	after := before
	for x := 0; after-before < 0.1 && time.Now().Before(deadline); x++ {
		if x%1000000 == 0 {
			if after, err = procCPUSeconds(os.Getpid()); err != nil {
				t.Fatal(err)
			}
		}
	}
	if after-before < 0.1 {
		t.Fatalf("busy for 20 s: cpu %.2f -> %.2f", before, after)
	}
	if _, err := procCPUSeconds(1 << 30); err == nil {
		t.Fatal("no such process")
	}
	if l := cpuLimitCores(); l <= 0 {
		t.Fatalf("limit %v", l)
	}
}

// The runner, the generated script and the real k6 together: two "pods" (runner processes with indexes 0 and 1)
// load a loopback HTTP server for two 1-second steps; their output parses and merges, and the server saw exactly
// the requests the pods reported.
func TestRunnerWithRealK6(t *testing.T) {
	k6 := k6Binary(t)
	var mu sync.Mutex
	served := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served++
		mu.Unlock()
		if r.URL.Path == "/missing" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, "hello")
	}))
	defer srv.Close()

	plan := k6script.Plan{Kind: k6script.KindSweep, BaseURL: srv.URL, KeepAlive: true, Parallelism: 2, StrideSeconds: 3,
		Steps: []benchresults.PlanStep{{Index: 0, VUs: 2, DurationSeconds: 1}, {Index: 1, VUs: 4, DurationSeconds: 1}}}
	dir := writePlan(t, plan, "/a", "/b", "/missing")
	start := time.Now().Add(500 * time.Millisecond).UnixMilli()
	outs := make([]bytes.Buffer, 2)
	progress := make([]bytes.Buffer, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := 0; i < 2; i++ {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			errs[i] = run(context.Background(), k6, dir, start, i, 2, &outs[i], &progress[i])
		}(i)
	}
	wg.Wait()
	pods := map[int]benchresults.PodLog{}
	var reported int64
	for i := 0; i < 2; i++ {
		if errs[i] != nil {
			t.Fatalf("pod %d: %v\n%s", i, errs[i], outs[i].String())
		}
		log, err := benchresults.ParseLog(outs[i].Bytes())
		if err != nil {
			t.Fatal(err)
		}
		if len(log.Steps) != 2 || log.Done == nil || log.Done.Error != "" || !bytes.HasPrefix(outs[i].Bytes(), []byte(benchresults.BeginPrefix)) {
			t.Fatalf("pod %d:\n%s", i, outs[i].String())
		}
		if !bytes.Contains(progress[i].Bytes(), []byte("runner: step 1 of 2 done")) {
			t.Errorf("pod %d: no progress line:\n%s", i, progress[i].String())
		}
		for _, s := range log.Steps {
			if s.Pod != i || s.Requests == 0 || s.Errors == 0 || s.Hist.Count() != s.Requests || s.CPU.WallSeconds < 0.9 || s.CPU.Seconds <= 0 {
				t.Errorf("pod %d step %d: %+v", i, s.Step, s)
			}
			// Step 1 starts on schedule, 3 s after step 0.
			if s.LateMs > 2000 {
				t.Errorf("pod %d step %d started %d ms late", i, s.Step, s.LateMs)
			}
			reported += s.Requests
			if len(s.ReqCounts) == 0 {
				t.Errorf("pod %d step %d: no request counts polled from k6", i, s.Step)
			}
		}
		pods[i] = log
	}
	mu.Lock()
	defer mu.Unlock()
	if int64(served) != reported {
		t.Fatalf("server saw %d requests, pods reported %d", served, reported)
	}
	r := benchresults.Merge(benchresults.Input{Parallelism: 2, Steps: plan.Steps, Pods: pods, Thresholds: benchresults.Thresholds{MaxErrorRate: 0.5}})
	// About a third of the requests go to /missing: the error rate is near 1/3 and the verdict says so.
	if r.ErrorRate < 0.2 || r.ErrorRate > 0.5 || r.Verdict != "Pass" || r.Steps[1].Concurrency != 4 || r.Steps[0].PodsReporting != 2 {
		t.Fatalf("merged: %+v", r)
	}
}

// A target that refuses every connection makes k6 log a warning per request. The runner passes on at most
// k6OutputBudget bytes of it, says how much it left out, and still ends with a whole result block.
func TestNoisyK6OutputIsBounded(t *testing.T) {
	k6 := k6Binary(t)
	srv := httptest.NewServer(http.NotFoundHandler())
	refused := srv.URL
	srv.Close() // nothing listens there any more: every request fails and k6 warns about each
	plan := k6script.Plan{Kind: k6script.KindConstant, BaseURL: refused, KeepAlive: true, Parallelism: 1, StrideSeconds: 3,
		Steps: []benchresults.PlanStep{{Index: 0, VUs: 4, DurationSeconds: 2}}}
	dir := writePlan(t, plan, "/")
	var out, logs bytes.Buffer
	err := run(context.Background(), k6, dir, 0, 0, 1, &out, &logs)
	log, perr := benchresults.ParseLog(out.Bytes())
	if perr != nil || len(log.Steps) != 1 || log.Steps[0].Errors == 0 {
		t.Fatalf("run: %v; parse: %v\n%s", err, perr, out.String())
	}
	if !bytes.Contains(logs.Bytes(), []byte("of k6 output not shown")) || logs.Len() > k6OutputBudget+1024 {
		t.Fatalf("k6 output: %d bytes, want at most %d and a note of what was left out:\n%s", logs.Len(), k6OutputBudget+1024, logs.String())
	}
}

func TestBoundedWriter(t *testing.T) {
	var dst bytes.Buffer
	w := newBoundedWriter(&dst, 10)
	for _, chunk := range []string{"abc\n", "defghij", "klm\nnop\n", "q"} {
		if n, err := w.Write([]byte(chunk)); n != len(chunk) || err != nil {
			t.Fatalf("write %q: %d, %v", chunk, n, err)
		}
	}
	if got := dst.String(); got != "abc\ndefghi\n" {
		t.Fatalf("passed on %q", got)
	}
	if lines, n := w.suppressed(); lines != 2 || n != 10 {
		t.Fatalf("suppressed %d line(s), %d bytes", lines, n)
	}
}
