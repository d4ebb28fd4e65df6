package main

// The operator in a memory cgroup of its own (-operator-memory-limit): what a container with a memory limit gives
// it. The kernel enforces the limit (an operator past it is OOM-killed, and the run fails on its exit), and the
// operator reads it where a container shows it, at /sys/fs/cgroup (memcg.sh bind-mounts the cgroup's directory
// there in a mount namespace of the operator's own), so internal/memlimit sets its soft limit from it exactly as
// in a pod. The report gives the limit, the soft limit the operator logged, and the cgroup's own peak, limit hits
// and OOM kills: the kernel's figures, not the process's RSS alone (the cgroup also charges its page cache).

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// memcg is one memory cgroup made for the run: v1 (a directory of the memory hierarchy) or v2 (of the unified one).
type memcg struct {
	dir   string
	v2    bool
	limit int64
}

// memcgStats are the kernel's figures for the cgroup at the end of the run.
type memcgStats struct {
	peak     int64 // v1 memory.max_usage_in_bytes, v2 memory.peak
	limitHit int64 // v1 memory.failcnt (charges refused at the limit), v2 memory.events "max"
	oomKills int64 // v1 memory.oom_control "oom_kill", v2 memory.events "oom_kill"
}

const (
	cgroupRoot     = "/sys/fs/cgroup"
	cgroupV1Memory = "/sys/fs/cgroup/memory"
)

// newMemcg makes a cgroup with the memory limit under this machine's hierarchy (v2 when /sys/fs/cgroup is the
// unified hierarchy, else v1's memory controller). Needs root.
func newMemcg(limit int64) (*memcg, error) {
	name := fmt.Sprintf("hyperstatic-bench-operator-%d", os.Getpid())
	if _, err := os.Stat(filepath.Join(cgroupRoot, "cgroup.controllers")); err == nil {
		m := &memcg{dir: filepath.Join(cgroupRoot, name), v2: true, limit: limit}
		return m, m.make("memory.max")
	}
	if _, err := os.Stat(filepath.Join(cgroupV1Memory, "memory.limit_in_bytes")); err != nil {
		return nil, fmt.Errorf("-operator-memory-limit: no cgroup v2 hierarchy and no v1 memory controller at %s", cgroupV1Memory)
	}
	m := &memcg{dir: filepath.Join(cgroupV1Memory, name), limit: limit}
	return m, m.make("memory.limit_in_bytes")
}

func (m *memcg) make(limitFile string) error {
	if err := os.Mkdir(m.dir, 0o755); err != nil {
		return fmt.Errorf("-operator-memory-limit: %w", err)
	}
	if err := os.WriteFile(filepath.Join(m.dir, limitFile), []byte(strconv.FormatInt(m.limit, 10)), 0o644); err != nil {
		_ = os.Remove(m.dir)
		return fmt.Errorf("-operator-memory-limit: set %s: %w", limitFile, err)
	}
	return nil
}

// mountPoint is where the operator must find the cgroup's files: memlimit reads /sys/fs/cgroup/memory.max (v2),
// else /sys/fs/cgroup/memory/memory.limit_in_bytes (v1).
func (m *memcg) mountPoint() string {
	if m.v2 {
		return cgroupRoot
	}
	return cgroupV1Memory
}

// wrap is the command that runs bin with args inside the cgroup, the cgroup mounted where a container shows it.
func (m *memcg) wrap(script, bin string, args []string) (string, []string) {
	return script, append([]string{m.dir, m.mountPoint(), bin}, args...)
}

// stats reads the kernel's figures for the cgroup.
func (m *memcg) stats() (memcgStats, error) {
	read := func(name string) (string, error) {
		b, err := os.ReadFile(filepath.Join(m.dir, name))
		return string(b), err
	}
	var s memcgStats
	if m.v2 {
		peak, err := read("memory.peak")
		if err != nil {
			return s, err
		}
		events, err := read("memory.events")
		if err != nil {
			return s, err
		}
		s.peak, err = strconv.ParseInt(strings.TrimSpace(peak), 10, 64)
		s.limitHit, s.oomKills = keyedValue(events, "max"), keyedValue(events, "oom_kill")
		return s, err
	}
	peak, err := read("memory.max_usage_in_bytes")
	if err != nil {
		return s, err
	}
	failcnt, err := read("memory.failcnt")
	if err != nil {
		return s, err
	}
	oom, err := read("memory.oom_control")
	if err != nil {
		return s, err
	}
	if s.peak, err = strconv.ParseInt(strings.TrimSpace(peak), 10, 64); err != nil {
		return s, err
	}
	if s.limitHit, err = strconv.ParseInt(strings.TrimSpace(failcnt), 10, 64); err != nil {
		return s, err
	}
	s.oomKills = keyedValue(oom, "oom_kill")
	return s, nil
}

// remove deletes the cgroup once its process is gone.
func (m *memcg) remove() { _ = os.Remove(m.dir) }

// keyedValue is the number after key in a "key value" per line file (memory.events, memory.oom_control); -1 when
// the kernel does not report it.
func keyedValue(text, key string) int64 {
	for _, line := range strings.Split(text, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), " ")
		if ok && k == key {
			if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
				return n
			}
		}
	}
	return -1
}

// softLimitLogged is what the operator logged about its soft memory limit (internal/memlimit.Apply's message, from
// a JSON or a console line), or "" when its log has no such line.
var softLimitLine = regexp.MustCompile(`soft memory limit [^"\n]*|no container memory limit[^"\n]*|GOMEMLIMIT=[^"\n]*\(set in the environment\)`)

func softLimitLogged(log []byte) string {
	return string(softLimitLine.Find(log))
}
