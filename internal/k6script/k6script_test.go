package k6script

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func dur(d time.Duration) metav1.Duration { return metav1.Duration{Duration: d} }

func TestPlanSweep(t *testing.T) {
	off := false
	p, err := NewPlan(v1alpha1.BenchmarkSpec{Parallelism: 3, Workload: v1alpha1.BenchmarkWorkload{
		Sweep: &v1alpha1.SweepWorkload{From: 10, To: 1000, Step: 10, StepDuration: dur(20 * time.Second), KeepAlive: &off}}}, "http://site.ns.svc:80/")
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Steps) != 100 || p.Steps[0].VUs != 10 || p.Steps[99].VUs != 1000 || p.Steps[99].Index != 99 {
		t.Fatalf("steps: %d, first %+v last %+v", len(p.Steps), p.Steps[0], p.Steps[len(p.Steps)-1])
	}
	if p.KeepAlive || p.BaseURL != "http://site.ns.svc:80" || p.StrideSeconds != 25 || p.Kind != KindSweep {
		t.Fatalf("%+v", p)
	}
	if p.Duration() != 2500*time.Second {
		t.Fatalf("duration %s", p.Duration())
	}
	start := time.Unix(1000, 0)
	if got := p.StepStart(start, 2); !got.Equal(start.Add(50 * time.Second)) {
		t.Fatalf("step 2 starts at %s", got)
	}
	// A sweep that does not land on `to` stops below it.
	p, _ = NewPlan(v1alpha1.BenchmarkSpec{Workload: v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{From: 1, To: 10, Step: 4}}}, "http://x")
	if len(p.Steps) != 3 || p.Steps[2].VUs != 9 || p.Steps[0].DurationSeconds != 30 || !p.KeepAlive {
		t.Fatalf("%+v", p)
	}
}

func TestPlanOtherWorkloads(t *testing.T) {
	p, err := NewPlan(v1alpha1.BenchmarkSpec{Workload: v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 50}}}, "http://x")
	if err != nil || p.Kind != KindConstant || len(p.Steps) != 1 || p.Steps[0].VUs != 50 || p.Steps[0].DurationSeconds != 60 {
		t.Fatalf("%+v %v", p, err)
	}
	p, err = NewPlan(v1alpha1.BenchmarkSpec{Parallelism: 2, Workload: v1alpha1.BenchmarkWorkload{ArrivalRate: &v1alpha1.ArrivalRateWorkload{Rate: 5000, Duration: dur(10 * time.Second)}}}, "http://x")
	if err != nil || p.Kind != KindArrivalRate || p.Steps[0].Rate != 5000 || p.MaxVUs != 500 || p.Steps[0].VUs != 0 {
		t.Fatalf("%+v %v", p, err)
	}
}

func TestPlanRejects(t *testing.T) {
	for name, spec := range map[string]v1alpha1.BenchmarkSpec{
		"no workload":         {},
		"vus below pods":      {Parallelism: 4, Workload: v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 3}}},
		"sweep below pods":    {Parallelism: 4, Workload: v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{From: 2, To: 10, Step: 2}}},
		"too short":           {Workload: v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 3, Duration: dur(2 * time.Second)}}},
		"sweep to below from": {Workload: v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{From: 20, To: 10, Step: 2}}},
	} {
		if _, err := NewPlan(spec, "http://x"); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

func TestSegment(t *testing.T) {
	for _, c := range []struct {
		i, n     int
		seg, seq string
	}{{0, 1, "0:1", "0,1"}, {0, 2, "0:1/2", "0,1/2,1"}, {1, 3, "1/3:2/3", "0,1/3,2/3,1"}, {2, 3, "2/3:1", "0,1/3,2/3,1"}} {
		seg, seq := Segment(c.i, c.n)
		if seg != c.seg || seq != c.seq {
			t.Errorf("Segment(%d,%d) = %q %q", c.i, c.n, seg, seq)
		}
	}
}

func TestFilesRejectRelativePath(t *testing.T) {
	p, _ := NewPlan(v1alpha1.BenchmarkSpec{Workload: v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 1}}}, "http://x")
	if _, err := Files(p, []string{"index.html"}); err == nil {
		t.Fatal("a path without a leading / must be refused")
	}
}

// k6 returns the k6 binary built by `make k6-build` (the go-test target depends on it).
func k6(t *testing.T) string {
	t.Helper()
	bin := os.Getenv("K6")
	if bin == "" {
		bin = filepath.Join(testenv.RepoRoot(), "bin", "k6")
	}
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("k6 not found at %s: run `make k6-build` (make go-test does)", bin)
	}
	return bin
}

type inspected struct {
	Scenarios map[string]struct {
		Executor        string `json:"executor"`
		VUs             int    `json:"vus"`
		Rate            int    `json:"rate"`
		Duration        string `json:"duration"`
		PreAllocatedVUs int    `json:"preAllocatedVUs"`
		MaxVUs          int    `json:"maxVUs"`
		GracefulStop    string `json:"gracefulStop"`
	} `json:"scenarios"`
	NoConnectionReuse     bool     `json:"noConnectionReuse"`
	InsecureSkipTLSVerify bool     `json:"insecureSkipTLSVerify"`
	DiscardResponseBodies bool     `json:"discardResponseBodies"`
	SummaryTrendStats     []string `json:"summaryTrendStats"`
	MaxVUs                int      `json:"maxVUs"`
	MaxRedirects          *int     `json:"maxRedirects"`
	TotalDuration         string   `json:"totalDuration"`
}

// The generated script parses and yields the intended k6 options for every step of every workload: checked by
// the real k6 (`k6 inspect --execution-requirements`).
func TestScriptInspectedByK6(t *testing.T) {
	bin := k6(t)
	off := false
	cases := map[string]struct {
		spec     v1alpha1.BenchmarkSpec
		executor string
	}{
		"sweep":       {v1alpha1.BenchmarkSpec{Workload: v1alpha1.BenchmarkWorkload{Sweep: &v1alpha1.SweepWorkload{From: 10, To: 30, Step: 10, StepDuration: dur(7 * time.Second), KeepAlive: &off}}}, "constant-vus"},
		"constant":    {v1alpha1.BenchmarkSpec{Target: v1alpha1.BenchmarkTarget{StaticSite: "site"}, Workload: v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 8, Duration: dur(10 * time.Second)}}}, "constant-vus"},
		"arrivalRate": {v1alpha1.BenchmarkSpec{Workload: v1alpha1.BenchmarkWorkload{ArrivalRate: &v1alpha1.ArrivalRateWorkload{Rate: 2000, Duration: dur(6 * time.Second), MaxVUs: 64}}}, "constant-arrival-rate"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			plan, err := NewPlan(c.spec, "http://127.0.0.1:9")
			if err != nil {
				t.Fatal(err)
			}
			files, err := Files(plan, []string{"/index.html", "/a b/ü.txt"})
			if err != nil {
				t.Fatal(err)
			}
			dir := t.TempDir()
			for name, content := range files {
				if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			for i, step := range plan.Steps {
				cmd := exec.Command(bin, "inspect", "--execution-requirements", "-e", "HS_STEP="+strconv.Itoa(i), ScriptFile)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "K6_NO_USAGE_REPORT=true")
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("k6 inspect step %d: %v\n%s", i, err, out)
				}
				var got inspected
				if err := json.Unmarshal(out, &got); err != nil {
					t.Fatalf("step %d: %v\n%s", i, err, out)
				}
				sc, ok := got.Scenarios["load"]
				if !ok || sc.Executor != c.executor || sc.Duration != strconv.Itoa(int(step.DurationSeconds))+"s" || sc.GracefulStop != "2s" {
					t.Fatalf("step %d: %+v", i, got.Scenarios)
				}
				switch c.executor {
				case "constant-vus":
					if sc.VUs != int(step.VUs) || got.MaxVUs != int(step.VUs) {
						t.Errorf("step %d: vus %d maxVUs %d, want %d", i, sc.VUs, got.MaxVUs, step.VUs)
					}
				case "constant-arrival-rate":
					if sc.Rate != int(step.Rate) || sc.MaxVUs != 64 || sc.PreAllocatedVUs != 64 {
						t.Errorf("arrival rate: %+v", sc)
					}
				}
				// A StaticSite is loaded by its Service's name, which its certificate does not hold.
				if got.InsecureSkipTLSVerify != (c.spec.Target.StaticSite != "") || plan.InsecureSkipTLSVerify != got.InsecureSkipTLSVerify {
					t.Errorf("insecureSkipTLSVerify %v for target %+v", got.InsecureSkipTLSVerify, c.spec.Target)
				}
				if got.NoConnectionReuse != !plan.KeepAlive || !got.DiscardResponseBodies {
					t.Errorf("keep-alive %v but noConnectionReuse %v", plan.KeepAlive, got.NoConnectionReuse)
				}
				// A 3xx is the target's answer: k6 follows no redirect (its default is 10, to any host).
				if got.MaxRedirects == nil || *got.MaxRedirects != 0 {
					t.Errorf("maxRedirects %v, want 0", got.MaxRedirects)
				}
				if strings.Join(got.SummaryTrendStats, ",") != "med,p(90),p(99),max" {
					t.Errorf("summaryTrendStats %v", got.SummaryTrendStats)
				}
			}
			// A step outside the plan is an error in k6, not a silent default.
			cmd := exec.Command(bin, "inspect", "-e", "HS_STEP="+strconv.Itoa(len(plan.Steps)), ScriptFile)
			cmd.Dir = dir
			if out, err := cmd.CombinedOutput(); err == nil {
				t.Fatalf("k6 accepted a step outside the plan:\n%s", out)
			}
		})
	}
}

// spec.acceptEncoding reaches the plan the script reads, and the script sends it as the Accept-Encoding header of
// every request; without it the script sends no such header (k6's own default). The runner test
// (images/k6/runner) proves with the real k6 that the header arrives.
func TestAcceptEncoding(t *testing.T) {
	spec := v1alpha1.BenchmarkSpec{AcceptEncoding: "br, gzip", Workload: v1alpha1.BenchmarkWorkload{Constant: &v1alpha1.ConstantWorkload{VUs: 1}}}
	p, err := NewPlan(spec, "http://x")
	if err != nil || p.AcceptEncoding != "br, gzip" {
		t.Fatalf("plan %+v %v", p, err)
	}
	files, err := Files(p, nil)
	if err != nil {
		t.Fatal(err)
	}
	script := files[ScriptFile]
	var stored Plan
	if err := json.Unmarshal([]byte(files[PlanFile]), &stored); err != nil || stored.AcceptEncoding != "br, gzip" ||
		!strings.Contains(script, `const PARAMS = PLAN.acceptEncoding ? { redirects: 0, headers: { 'Accept-Encoding': PLAN.acceptEncoding } } : { redirects: 0 };`) ||
		!strings.Contains(script, `http.get(PLAN.baseURL + path, PARAMS)`) {
		t.Fatalf("plan %s\nscript:\n%s", files[PlanFile], script)
	}
	spec.AcceptEncoding = ""
	p, _ = NewPlan(spec, "http://x")
	files, _ = Files(p, nil)
	if strings.Contains(files[PlanFile], "acceptEncoding") {
		t.Fatalf("no acceptEncoding, yet the plan has one: %s", files[PlanFile])
	}
}
