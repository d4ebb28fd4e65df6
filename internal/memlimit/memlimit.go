// Package memlimit gives the operator's Go runtime a soft memory limit from its container's, when no one set
// GOMEMLIMIT.
//
// Why: with GOGC=100 and no limit the runtime lets the heap grow to twice the live heap before it collects, and a
// container whose memory limit lies below that is killed by the kernel while half its heap is garbage. The
// operator's live heap grows with the sites (about 19 KiB per pool site, docs/bench/operator-memory-2026-12-04.md),
// so a fixed GOMEMLIMIT in the chart would be wrong at some size; the container's limit is what the platform sized.
// With a soft limit the runtime collects harder as the heap nears it (GOMEMLIMIT=160MiB took the operator at 2,000
// sites from 270.5 to 192.7 MiB RSS), and the process is killed only when the live heap itself no longer fits.
//
// The soft limit leaves room for what the runtime does not count (the binary's pages, measured at about 30 MiB
// above the limit): an eighth of the limit, at least 32 MiB, and never less than half the limit.
package memlimit

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
)

// Files a container's memory limit is read from, under the root given to Apply: cgroup v2, then v1.
const (
	cgroupV2 = "sys/fs/cgroup/memory.max"
	cgroupV1 = "sys/fs/cgroup/memory/memory.limit_in_bytes"
)

// noLimitV1 is cgroup v1's "no limit" (a page-rounded maximum); anything at or above it is no limit.
const noLimitV1 = int64(1) << 62

// Soft is the soft limit for a container memory limit of limit bytes.
func Soft(limit int64) int64 {
	room := max(limit/8, 32<<20)
	return max(limit-room, limit/2)
}

// ContainerLimit reads the container's memory limit under root ("/" in a pod); 0 when it has none.
func ContainerLimit(root string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(root, cgroupV2))
	if errors.Is(err, os.ErrNotExist) {
		b, err = os.ReadFile(filepath.Join(root, cgroupV1))
		if errors.Is(err, os.ErrNotExist) {
			return 0, nil // no memory controller visible: no limit to follow
		}
	}
	if err != nil {
		return 0, err
	}
	v := strings.TrimSpace(string(b))
	if v == "max" {
		return 0, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("container memory limit %q: not a number of bytes", v)
	}
	if n >= noLimitV1 {
		return 0, nil
	}
	return n, nil
}

// Apply sets the runtime's soft limit from the container's under root, unless GOMEMLIMIT is set (the person who set
// it knows better) or the container has none. It says what it did, for the log.
func Apply(root string) (string, error) {
	if v, ok := os.LookupEnv("GOMEMLIMIT"); ok {
		return "GOMEMLIMIT=" + v + " (set in the environment)", nil
	}
	limit, err := ContainerLimit(root)
	if err != nil {
		return "", err
	}
	if limit == 0 {
		return "no container memory limit: no soft limit", nil
	}
	soft := Soft(limit)
	debug.SetMemoryLimit(soft)
	return fmt.Sprintf("soft memory limit %d MiB (the container's %d MiB less room for what the runtime does not count)", soft>>20, limit>>20), nil
}
