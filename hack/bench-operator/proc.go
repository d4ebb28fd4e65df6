package main

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// clockTicks is USER_HZ, the unit of utime/stime in /proc/<pid>/stat: 100 on every Linux architecture Go
// supports here (the kernel fixes it for user space whatever CONFIG_HZ is).
const clockTicks = 100

// procSample is a process's CPU time and memory at one moment.
type procSample struct {
	cpuSeconds float64 // user + system
	rssBytes   int64   // VmRSS
	hwmBytes   int64   // VmHWM: the peak RSS so far
}

// parseStatCPU returns utime+stime in seconds from the text of /proc/<pid>/stat. The command name (field 2) is
// in parentheses and may hold spaces, so fields are counted from the last ')'.
func parseStatCPU(stat string) (float64, error) {
	end := strings.LastIndexByte(stat, ')')
	if end < 0 {
		return 0, fmt.Errorf("no ')' in /proc stat line %q", stat)
	}
	fields := strings.Fields(stat[end+1:])
	// After ')': field 3 (state) is fields[0], so utime (14) and stime (15) are fields[11] and fields[12].
	if len(fields) < 13 {
		return 0, fmt.Errorf("short /proc stat line %q", stat)
	}
	utime, err := strconv.ParseInt(fields[11], 10, 64)
	if err != nil {
		return 0, err
	}
	stime, err := strconv.ParseInt(fields[12], 10, 64)
	if err != nil {
		return 0, err
	}
	return float64(utime+stime) / clockTicks, nil
}

// parseStatusMemory returns VmRSS and VmHWM in bytes from the text of /proc/<pid>/status.
func parseStatusMemory(status string) (rss, hwm int64, err error) {
	found := 0
	sc := bufio.NewScanner(strings.NewReader(status))
	for sc.Scan() {
		key, value, ok := strings.Cut(sc.Text(), ":")
		if !ok || (key != "VmRSS" && key != "VmHWM") {
			continue
		}
		f := strings.Fields(value) // "12345 kB"
		if len(f) != 2 || f[1] != "kB" {
			return 0, 0, fmt.Errorf("unexpected %s line %q", key, sc.Text())
		}
		kb, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, 0, err
		}
		if key == "VmRSS" {
			rss = kb * 1024
		} else {
			hwm = kb * 1024
		}
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("VmRSS or VmHWM missing from /proc status")
	}
	return rss, hwm, nil
}

// readProc samples a running process.
func readProc(pid int) (procSample, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return procSample{}, err
	}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return procSample{}, err
	}
	cpu, err := parseStatCPU(string(stat))
	if err != nil {
		return procSample{}, err
	}
	rss, hwm, err := parseStatusMemory(string(status))
	if err != nil {
		return procSample{}, err
	}
	return procSample{cpuSeconds: cpu, rssBytes: rss, hwmBytes: hwm}, nil
}
