package main

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
)

// The pod's CPU limit and throttling, from its cgroup. Both cgroup v2 (unified) and v1 (a "cpu" hierarchy) are
// read: kind nodes on a cgroup v1 host, like this project's development machines, run v1.
//
// cgroupRoot is /sys/fs/cgroup; tests point it elsewhere.
var cgroupRoot = "/sys/fs/cgroup"

// cgroupPaths returns candidate directories holding the CPU controller's files, most specific first. Inside a
// container the process usually sees its own cgroup at the mount's root, and /proc/self/cgroup may show either "/"
// or the host-side path, so both the path and the root are tried.
func cgroupPaths(procSelfCgroup string) (v2 []string, v1 []string) {
	for _, line := range strings.Split(procSelfCgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if parts[0] == "0" && parts[1] == "" {
			v2 = append(v2, filepath.Join(cgroupRoot, parts[2]), cgroupRoot)
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == "cpu" {
				for _, mount := range []string{"cpu", "cpu,cpuacct", "cpuacct,cpu"} {
					v1 = append(v1, filepath.Join(cgroupRoot, mount, parts[2]), filepath.Join(cgroupRoot, mount))
				}
			}
		}
	}
	return v2, v1
}

func selfCgroup() string {
	b, _ := os.ReadFile("/proc/self/cgroup")
	return string(b)
}

func readFields(path string) []string {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	return strings.Fields(string(b))
}

// cpuLimitCores is the pod's CPU limit in cores, or the machine's CPU count when there is none or it is unreadable.
func cpuLimitCores() float64 {
	if l := cgroupLimit(selfCgroup()); l > 0 {
		return l
	}
	return float64(runtime.NumCPU())
}

// cgroupLimit reads cpu.max (v2: "<quota|max> <period>") or cpu.cfs_quota_us / cpu.cfs_period_us (v1: -1 is no
// limit); 0 when no limit is found.
func cgroupLimit(procSelfCgroup string) float64 {
	v2, v1 := cgroupPaths(procSelfCgroup)
	for _, dir := range v2 {
		if f := readFields(filepath.Join(dir, "cpu.max")); len(f) == 2 {
			if f[0] == "max" {
				return 0
			}
			q, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			if err1 == nil && err2 == nil && q > 0 && p > 0 {
				return q / p
			}
		}
	}
	for _, dir := range v1 {
		q := readFields(filepath.Join(dir, "cpu.cfs_quota_us"))
		p := readFields(filepath.Join(dir, "cpu.cfs_period_us"))
		if len(q) == 1 && len(p) == 1 {
			quota, err1 := strconv.ParseFloat(q[0], 64)
			period, err2 := strconv.ParseFloat(p[0], 64)
			if err1 != nil || err2 != nil || quota <= 0 || period <= 0 {
				return 0
			}
			return quota / period
		}
	}
	return 0
}

// throttledSeconds is the cgroup's cumulative CFS throttled time (v2 throttled_usec, v1 throttled_time in ns),
// 0 when unreadable.
func throttledSeconds() float64 { return cgroupThrottled(selfCgroup()) }

func cgroupThrottled(procSelfCgroup string) float64 {
	v2, v1 := cgroupPaths(procSelfCgroup)
	read := func(dirs []string, key string, scale float64) (float64, bool) {
		for _, dir := range dirs {
			b, err := os.ReadFile(filepath.Join(dir, "cpu.stat"))
			if err != nil {
				continue
			}
			for _, line := range strings.Split(string(b), "\n") {
				if v, ok := strings.CutPrefix(line, key+" "); ok {
					if n, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil {
						return n / scale, true
					}
				}
			}
		}
		return 0, false
	}
	if v, ok := read(v2, "throttled_usec", 1e6); ok {
		return v
	}
	v, _ := read(v1, "throttled_time", 1e9)
	return v
}
