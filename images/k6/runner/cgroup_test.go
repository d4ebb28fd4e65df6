package main

import (
	"os"
	"path/filepath"
	"testing"
)

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestCgroupV2(t *testing.T) {
	cgroupRoot = t.TempDir()
	defer func() { cgroupRoot = "/sys/fs/cgroup" }()
	writeFile(t, filepath.Join(cgroupRoot, "cpu.max"), "30000 100000\n")
	writeFile(t, filepath.Join(cgroupRoot, "cpu.stat"), "usage_usec 5\nnr_throttled 3\nthrottled_usec 2500000\n")
	if l := cgroupLimit("0::/\n"); l != 0.3 {
		t.Fatalf("limit %v", l)
	}
	if th := cgroupThrottled("0::/\n"); th != 2.5 {
		t.Fatalf("throttled %v", th)
	}
	writeFile(t, filepath.Join(cgroupRoot, "cpu.max"), "max 100000\n")
	if l := cgroupLimit("0::/\n"); l != 0 {
		t.Fatalf("unlimited: %v", l)
	}
}

func TestCgroupV1(t *testing.T) {
	cgroupRoot = t.TempDir()
	defer func() { cgroupRoot = "/sys/fs/cgroup" }()
	// A container on a v1 host: /proc/self/cgroup names the host path, the mount shows the container's own group.
	self := "12:cpu,cpuacct:/kubepods/pod1/abc\n4:memory:/kubepods/pod1/abc\n0::/\n"
	writeFile(t, filepath.Join(cgroupRoot, "cpu,cpuacct", "cpu.cfs_quota_us"), "150000\n")
	writeFile(t, filepath.Join(cgroupRoot, "cpu,cpuacct", "cpu.cfs_period_us"), "100000\n")
	writeFile(t, filepath.Join(cgroupRoot, "cpu,cpuacct", "cpu.stat"), "nr_periods 10\nnr_throttled 2\nthrottled_time 1500000000\n")
	if l := cgroupLimit(self); l != 1.5 {
		t.Fatalf("limit %v", l)
	}
	if th := cgroupThrottled(self); th != 1.5 {
		t.Fatalf("throttled %v", th)
	}
	writeFile(t, filepath.Join(cgroupRoot, "cpu,cpuacct", "cpu.cfs_quota_us"), "-1\n")
	if l := cgroupLimit(self); l != 0 {
		t.Fatalf("unlimited: %v", l)
	}
}
