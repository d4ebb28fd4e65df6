package benchmark

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/benchresults"
)

func TestDuePoints(t *testing.T) {
	base := time.Unix(1000, 0)
	points := []time.Time{base, base.Add(10 * time.Second), base.Add(20 * time.Second)}
	for _, tc := range []struct {
		name string
		done int
		now  time.Time
		due  []bool
		next time.Duration
	}{
		{"before the first", 0, base.Add(-time.Second), nil, time.Second},
		{"on time", 0, base.Add(100 * time.Millisecond), []bool{true}, 9900 * time.Millisecond},
		{"at the tolerance", 0, base.Add(sampleTolerance), []bool{true}, 10*time.Second - sampleTolerance},
		{"too late: skipped", 0, base.Add(sampleTolerance + time.Millisecond), []bool{false}, 10*time.Second - sampleTolerance - time.Millisecond},
		{"one late, one on time", 0, base.Add(10 * time.Second), []bool{false, true}, 10 * time.Second},
		{"first already handled", 1, base.Add(10 * time.Second), []bool{true}, 10 * time.Second},
		{"all handled", 3, base.Add(time.Hour), nil, 0},
		{"the last due", 2, base.Add(20 * time.Second), []bool{true}, 0},
	} {
		due, next := duePoints(points, tc.done, tc.now)
		if len(due) != len(tc.due) || next != tc.next {
			t.Errorf("%s: %v next %s, want %v next %s", tc.name, due, next, tc.due, tc.next)
			continue
		}
		for i := range due {
			if due[i] != tc.due[i] {
				t.Errorf("%s: %v, want %v", tc.name, due, tc.due)
			}
		}
	}
}

// server-samples.json never passes its budget: a point that would is left out and counted, and later points that
// fit are still recorded.
func TestRecordSamplesKeepsTheBudget(t *testing.T) {
	point := func(pods int, at int64) []benchresults.ServerSample {
		var out []benchresults.ServerSample
		for i := 0; i < pods; i++ {
			out = append(out, benchresults.ServerSample{Pod: fmt.Sprintf("site-%d", i), UnixMs: at, Requests: 1e6, CPUSeconds: 12.5, RSSBytes: 8 << 20})
		}
		return out
	}
	one, _ := json.Marshal(point(1, 1))
	budget := 3*len(one) + 2 // "[" + three samples + two commas + "]"
	raw, dropped, err := recordSamples(nil, [][]benchresults.ServerSample{point(2, 1), point(2, 2), point(1, 3), point(1, 4)}, budget)
	if err != nil {
		t.Fatal(err)
	}
	var kept []benchresults.ServerSample
	if err := json.Unmarshal(raw, &kept); err != nil {
		t.Fatal(err)
	}
	if len(raw) > budget || dropped != 2 || len(kept) != 3 || kept[2].UnixMs != 3 {
		t.Fatalf("%d bytes (budget %d), %d point(s) dropped, kept %+v", len(raw), budget, dropped, kept)
	}
	if raw, dropped, _ := recordSamples(nil, nil, budget); string(raw) != "[]" || dropped != 0 {
		t.Fatalf("no sample: %s, %d dropped", raw, dropped)
	}
}
