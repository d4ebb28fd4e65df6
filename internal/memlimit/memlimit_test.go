package memlimit

import (
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"testing"
)

func TestSoft(t *testing.T) {
	for _, c := range []struct{ limit, want int64 }{
		{128 << 20, 96 << 20},  // 32 MiB of room
		{512 << 20, 448 << 20}, // an eighth
		{40 << 20, 20 << 20},   // never below half
	} {
		if got := Soft(c.limit); got != c.want {
			t.Errorf("Soft(%d MiB) = %d MiB, want %d MiB", c.limit>>20, got>>20, c.want>>20)
		}
	}
}

// The limit as cgroup v2 and v1 write it, "no limit" in both, and a file that is not a number.
func TestContainerLimit(t *testing.T) {
	for _, c := range []struct {
		name, file, content string
		want                int64
		err                 bool
	}{
		{"v2", cgroupV2, "134217728\n", 128 << 20, false},
		{"v2 none", cgroupV2, "max\n", 0, false},
		{"v1", cgroupV1, "268435456\n", 256 << 20, false},
		{"v1 none", cgroupV1, "9223372036854771712\n", 0, false},
		{"garbage", cgroupV2, "lots\n", 0, true},
		{"no controller", "", "", 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			root := t.TempDir()
			if c.file != "" {
				p := filepath.Join(root, c.file)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(c.content), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			got, err := ContainerLimit(root)
			if (err != nil) != c.err || got != c.want {
				t.Fatalf("ContainerLimit = %d, %v; want %d, error %v", got, err, c.want, c.err)
			}
		})
	}
}

// Apply sets the runtime's limit from the container's, and leaves a GOMEMLIMIT from the environment alone.
func TestApply(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	root := t.TempDir()
	p := filepath.Join(root, cgroupV2)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("134217728\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv("GOMEMLIMIT", "")
	os.Unsetenv("GOMEMLIMIT")
	msg, err := Apply(root)
	if err != nil || debug.SetMemoryLimit(-1) != 96<<20 || !strings.Contains(msg, "96 MiB") {
		t.Fatalf("Apply: %q, %v, runtime limit %d", msg, err, debug.SetMemoryLimit(-1))
	}
	debug.SetMemoryLimit(1 << 40)
	t.Setenv("GOMEMLIMIT", "200MiB")
	if msg, err := Apply(root); err != nil || debug.SetMemoryLimit(-1) != 1<<40 || !strings.Contains(msg, "GOMEMLIMIT=200MiB") {
		t.Fatalf("Apply with GOMEMLIMIT set: %q, %v, runtime limit %d", msg, err, debug.SetMemoryLimit(-1))
	}
}
