package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// heapProfile is what -heap-profile took from the operator's /debug/pprof/ (its --pprof-bind-address) at the end
// of the steady-state window: Go's heap figures as the window left them and after a forced collection, the RSS at
// that moment, and where the profile was saved. The gap between RSS and the heap in use is memory the runtime
// holds without using (freed heap not yet returned to the kernel, stacks, its own structures).
type heapProfile struct {
	before, after memStats // runtime.MemStats before and after the collection
	rssAfter      int64    // VmRSS after the collection
	file          string   // inuse_space profile, after the collection: go tool pprof -top -inuse_space <file>
}

// memStats is the runtime.MemStats fields the report shows, from the "# Name = value" lines that
// /debug/pprof/heap?debug=1 ends with.
type memStats struct {
	heapAlloc, heapInuse, heapIdle, heapReleased, heapSys, stackInuse, sys, nextGC uint64
	numGC                                                                          uint64
}

// parseMemStats reads those lines. Every field the report shows must be there: a Go release that renamed one
// would otherwise report zeroes.
func parseMemStats(r io.Reader) (memStats, error) {
	var m memStats
	fields := map[string]*uint64{
		"HeapAlloc": &m.heapAlloc, "HeapInuse": &m.heapInuse, "HeapIdle": &m.heapIdle, "HeapReleased": &m.heapReleased,
		"HeapSys": &m.heapSys, "Stack": &m.stackInuse, "Sys": &m.sys, "NextGC": &m.nextGC, "NumGC": &m.numGC,
	}
	seen := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 16*1024*1024) // the sample lines before the stats can be long
	for sc.Scan() {
		name, value, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "# "), " = ")
		dst, known := fields[name]
		if !ok || !known {
			continue
		}
		// "Stack = <inuse> / <sys>": the first number is the stacks in use.
		first, _, _ := strings.Cut(value, " ")
		n, err := strconv.ParseUint(first, 10, 64)
		if err != nil {
			return m, fmt.Errorf("runtime.MemStats %s = %q: %w", name, value, err)
		}
		*dst = n
		seen[name] = true
	}
	if err := sc.Err(); err != nil {
		return m, err
	}
	for name := range fields {
		if !seen[name] {
			return m, fmt.Errorf("runtime.MemStats has no %s line", name)
		}
	}
	return m, nil
}

// takeHeapProfile reads the operator's heap figures, forces a collection with the inuse_space profile (saved in
// dir as operator-heap.pb.gz, the text form beside it) and reads the figures again.
func (b *bench) takeHeapProfile(ctx context.Context, dir string) (*heapProfile, error) {
	hp := &heapProfile{file: filepath.Join(dir, "operator-heap.pb.gz")}
	text, err := b.pprofGet(ctx, "heap?debug=1")
	if err != nil {
		return nil, err
	}
	if hp.before, err = parseMemStats(strings.NewReader(string(text))); err != nil {
		return nil, err
	}
	pb, err := b.pprofGet(ctx, "heap?gc=1")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(hp.file, pb, 0o644); err != nil {
		return nil, err
	}
	if text, err = b.pprofGet(ctx, "heap?debug=1"); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "operator-heap.txt"), text, 0o644); err != nil {
		return nil, err
	}
	if hp.after, err = parseMemStats(strings.NewReader(string(text))); err != nil {
		return nil, err
	}
	proc, err := readProc(b.operator.Process.Pid)
	if err != nil {
		return nil, err
	}
	hp.rssAfter = proc.rssBytes
	return hp, nil
}

// pprofGet reads one /debug/pprof/ path of the operator.
func (b *bench) pprofGet(ctx context.Context, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.pprofURL+path, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("operator /debug/pprof/%s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("operator /debug/pprof/%s: %s", path, resp.Status)
	}
	return io.ReadAll(resp.Body)
}

// heapLines are the report's lines about the profile.
func (hp *heapProfile) heapLines(p func(string, ...any)) {
	p("")
	p("### The operator's Go heap (-heap-profile, at the end of the steady-state window)")
	p("")
	p("| runtime.MemStats | as the window left it | after a forced GC |")
	p("|---|---|---|")
	row := func(name string, f func(memStats) uint64) {
		p("| %s | %s | %s |", name, mib(int64(f(hp.before))), mib(int64(f(hp.after))))
	}
	row("HeapAlloc (live and not yet collected)", func(m memStats) uint64 { return m.heapAlloc })
	row("HeapInuse (spans in use)", func(m memStats) uint64 { return m.heapInuse })
	row("HeapIdle (free spans)", func(m memStats) uint64 { return m.heapIdle })
	row("HeapReleased (of those, returned to the kernel)", func(m memStats) uint64 { return m.heapReleased })
	row("Stacks in use", func(m memStats) uint64 { return m.stackInuse })
	row("Sys (everything the runtime mapped)", func(m memStats) uint64 { return m.sys })
	row("NextGC (heap goal)", func(m memStats) uint64 { return m.nextGC })
	p("")
	p("RSS after the forced GC: %s (%d collections so far). Profile: `go tool pprof -top -inuse_space %s`.",
		mib(hp.rssAfter), hp.after.numGC, filepath.Base(hp.file))
}
