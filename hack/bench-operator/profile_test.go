package main

import (
	"bytes"
	"runtime"
	"runtime/pprof"
	"strings"
	"testing"
)

// TestParseMemStatsOfThisRuntime parses what this Go release's /debug/pprof/heap?debug=1 writes (the same
// writer), so a renamed field fails here rather than reporting zeroes.
func TestParseMemStatsOfThisRuntime(t *testing.T) {
	runtime.GC()
	var buf bytes.Buffer
	if err := pprof.Lookup("heap").WriteTo(&buf, 1); err != nil {
		t.Fatal(err)
	}
	m, err := parseMemStats(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if m.heapInuse == 0 || m.heapAlloc == 0 || m.sys < m.heapSys || m.heapSys < m.heapInuse || m.stackInuse == 0 || m.numGC == 0 || m.nextGC == 0 {
		t.Errorf("implausible figures %+v", m)
	}
}

func TestParseMemStats(t *testing.T) {
	const tail = `heap profile: 0: 0 [0: 0] @ heap/1048576

# runtime.MemStats
# Alloc = 10
# Sys = 900
# HeapAlloc = 10
# HeapSys = 500
# HeapIdle = 300
# HeapInuse = 200
# HeapReleased = 100
# Stack = 64 / 128
# NextGC = 20
# NumGC = 3
`
	m, err := parseMemStats(strings.NewReader(tail))
	if err != nil {
		t.Fatal(err)
	}
	want := memStats{heapAlloc: 10, heapInuse: 200, heapIdle: 300, heapReleased: 100, heapSys: 500, stackInuse: 64, sys: 900, nextGC: 20, numGC: 3}
	if m != want {
		t.Errorf("got %+v, want %+v", m, want)
	}
	if _, err := parseMemStats(strings.NewReader(strings.Replace(tail, "# HeapInuse = 200\n", "", 1))); err == nil ||
		!strings.Contains(err.Error(), "HeapInuse") {
		t.Errorf("a missing field: err %v", err)
	}
	if _, err := parseMemStats(strings.NewReader(strings.Replace(tail, "= 200", "= x", 1))); err == nil {
		t.Error("a value that is no number: no error")
	}
}
