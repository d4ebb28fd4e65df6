package benchresults

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// longRun is a merged run of n steps with many warnings.
func longRun(n int) Results {
	r := Results{Workload: "sweep", Target: "http://site.ns.svc:80", PeakStep: -1, MeasuredPeakStep: -1}
	for i := 0; i < n; i++ {
		r.Steps = append(r.Steps, Step{Index: i, Concurrency: int32(i + 1), PodsReporting: 2, Requests: 1000, RPS: 100.5,
			P50Ms: 0.25, P90Ms: 1.5, P99Ms: 12.125, ClientCPU: 0.5, ServerMeasured: true, ServerCPUCores: 0.4, ServerRPS: 100})
		r.Warnings = append(r.Warnings, fmt.Sprintf("pod 1 step %d: k6: exit status 99", i))
	}
	r.Requests = int64(1000 * n)
	return r
}

func TestRenderFitsEverythingWhenItCan(t *testing.T) {
	f, err := Render(longRun(3), "t", "[]", ConfigMapBudget)
	if err != nil || len(f.Dropped) != 0 || len(f.Data) != 4 || !strings.Contains(f.Data[ResultsJSONKey], "\n  ") {
		t.Fatalf("%v, dropped %v, keys %d", err, f.Dropped, len(f.Data))
	}
}

// As the budget shrinks, Render gives things up in its documented order, never results.json, and always fits.
func TestRenderDropsInOrder(t *testing.T) {
	r := longRun(200)
	full, err := Render(r, "t", strings.Repeat("x", 50<<10), 1<<40)
	if err != nil {
		t.Fatal(err)
	}
	compactJSON, _ := json.Marshal(r)
	sizeOf := func(keys ...string) int {
		n := 0
		for _, k := range keys {
			v := full.Data[k]
			if k == ResultsJSONKey {
				v = string(compactJSON)
			}
			n += len(k) + len(v)
		}
		return n
	}
	for _, tc := range []struct {
		name   string
		budget int
		keys   []string // kept
		last   string   // the last measure taken
	}{
		{"indentation", sizeOf(ResultsJSONKey, ChartKey, ServerSamplesKey, ResultsCSVKey), []string{ResultsJSONKey, ChartKey, ServerSamplesKey, ResultsCSVKey}, "indentation"},
		{"chart", sizeOf(ResultsJSONKey, ServerSamplesKey, ResultsCSVKey), []string{ResultsJSONKey, ServerSamplesKey, ResultsCSVKey}, ChartKey},
		{"samples", sizeOf(ResultsJSONKey, ResultsCSVKey), []string{ResultsJSONKey, ResultsCSVKey}, ServerSamplesKey},
		{"csv", sizeOf(ResultsJSONKey), []string{ResultsJSONKey}, ResultsCSVKey},
		{"warnings", sizeOf(ResultsJSONKey) - 1, []string{ResultsJSONKey}, "warnings"},
		{"steps", 20 << 10, []string{ResultsJSONKey}, "steps "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Render(r, "t", full.Data[ServerSamplesKey], tc.budget)
			if err != nil {
				t.Fatal(err)
			}
			if f.Size() > tc.budget || len(f.Data) != len(tc.keys) || len(f.Dropped) == 0 || !strings.Contains(f.Dropped[len(f.Dropped)-1], tc.last) {
				t.Fatalf("%d bytes (budget %d), %d keys, dropped %v", f.Size(), tc.budget, len(f.Data), f.Dropped)
			}
			for _, k := range tc.keys {
				if _, ok := f.Data[k]; !ok {
					t.Errorf("%s dropped", k)
				}
			}
			var back Results
			if err := json.Unmarshal([]byte(f.Data[ResultsJSONKey]), &back); err != nil || back.Requests != r.Requests {
				t.Fatalf("results.json: %v, %d requests", err, back.Requests)
			}
		})
	}
}
