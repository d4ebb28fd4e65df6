package benchresults

import (
	"reflect"
	"strings"
	"testing"
)

func TestProtocolOf(t *testing.T) {
	for _, tc := range []struct {
		counts map[string]int64
		want   string
	}{
		{nil, ""},
		{map[string]int64{ProtocolHTTP2: 0}, ""},
		{map[string]int64{ProtocolHTTP2: 10}, "HTTP/2.0"},
		{map[string]int64{ProtocolHTTP11: 3, ProtocolHTTP2: 10}, "HTTP/2.0+HTTP/1.1"},
		{map[string]int64{ProtocolHTTP11: 10, ProtocolHTTP2: 10}, "HTTP/1.1+HTTP/2.0"}, // a tie goes by name
	} {
		if got := ProtocolOf(tc.counts); got != tc.want {
			t.Errorf("ProtocolOf(%v) = %q, want %q", tc.counts, got, tc.want)
		}
	}
}

// What a pod prints is summed only under the known names: a pod whose output is not our runner's cannot put a
// name of its choosing into status.protocol, nor take counts away.
func TestMergeCountsProtocolsItKnows(t *testing.T) {
	step := func(pod int, protocols map[string]int64) PodLog {
		return PodLog{Steps: []PodStep{{Pod: pod, Step: 0, Requests: 10, Protocols: protocols}}, Done: &Done{Pod: pod, Steps: 1, Results: 1}}
	}
	r := Merge(Input{Parallelism: 2, Protocol: "HTTP/2", Steps: []PlanStep{{Index: 0, VUs: 2, DurationSeconds: 5}}, Pods: map[int]PodLog{
		0: step(0, map[string]int64{ProtocolHTTP2: 10}),
		1: step(1, map[string]int64{ProtocolHTTP2: 7, ProtocolHTTP11: -5, "<script>": 3, strings.Repeat("x", 1000): 1}),
	}})
	if want := map[string]int64{ProtocolHTTP2: 17}; !reflect.DeepEqual(r.Protocols, want) {
		t.Errorf("protocols %v, want %v", r.Protocols, want)
	}
	if ProtocolOf(r.Protocols) != ProtocolHTTP2 {
		t.Errorf("protocol %q", ProtocolOf(r.Protocols))
	}
	joined := strings.Join(r.Warnings, "\n")
	if !strings.Contains(joined, "pod 1 step 0: protocol counts not understood, ignored") || len(joined) > 400 {
		t.Errorf("warnings %q", r.Warnings)
	}
}

func TestProtocolWarnings(t *testing.T) {
	if w := protocolWarnings(map[string]int64{ProtocolHTTP2: 5}, "HTTP/2"); len(w) != 0 {
		t.Errorf("what was asked: %q", w)
	}
	w := protocolWarnings(map[string]int64{ProtocolHTTP11: 5}, "HTTP/2")
	if len(w) != 1 || !strings.Contains(w[0], "protocol HTTP/2 was asked, but the responses were HTTP/1.1") {
		t.Errorf("h2 asked, h1 got: %q", w)
	}
	w = protocolWarnings(map[string]int64{ProtocolHTTP11: 5, ProtocolHTTP2: 6}, "Auto")
	if len(w) != 1 || w[0] != "responses of more than one HTTP version: HTTP/2.0 6, HTTP/1.1 5" {
		t.Errorf("mix: %q", w)
	}
	if w := protocolWarnings(nil, "HTTP/2"); len(w) != 0 {
		t.Errorf("no responses: %q", w)
	}
}
