package main

import (
	"flag"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

func TestOperatorMemoryLimitFlag(t *testing.T) {
	parse := func(v string) (*config, error) {
		fs := flag.NewFlagSet("bench-operator", flag.ContinueOnError)
		fs.SetOutput(io.Discard)
		c := bindFlags(fs)
		return c, fs.Parse([]string{"-operator-memory-limit", v})
	}
	c, err := parse("512Mi")
	if err != nil || c.operatorMemoryLimit != 512<<20 {
		t.Errorf("512Mi: %d, %v; want %d", c.operatorMemoryLimit, err, 512<<20)
	}
	for _, bad := range []string{"0", "-1Mi", "lots", ""} {
		if _, err := parse(bad); err == nil {
			t.Errorf("-operator-memory-limit %q: no error", bad)
		}
	}
}

func TestKeyedValue(t *testing.T) {
	v1 := "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n"
	v2 := "low 0\nhigh 0\nmax 17\noom 2\noom_kill 2\noom_group_kill 0\n"
	for _, c := range []struct {
		text, key string
		want      int64
	}{{v1, "oom_kill", 3}, {v2, "max", 17}, {v2, "oom_kill", 2}, {v2, "oom", 2}, {v1, "max", -1}, {"", "oom_kill", -1}} {
		if got := keyedValue(c.text, c.key); got != c.want {
			t.Errorf("keyedValue(%q, %q) = %d, want %d", c.text, c.key, got, c.want)
		}
	}
}

func TestSoftLimitLogged(t *testing.T) {
	for _, c := range []struct{ log, want string }{
		{`{"level":"info","ts":1.7e9,"logger":"setup","msg":"soft memory limit 448 MiB (the container's 512 MiB less room for what the runtime does not count)"}` + "\n",
			"soft memory limit 448 MiB (the container's 512 MiB less room for what the runtime does not count)"},
		{"2026-12-05T00:10:00Z\tINFO\tsetup\tno container memory limit: no soft limit\n{\"msg\":\"x\"}\n", "no container memory limit: no soft limit"},
		{`{"msg":"GOMEMLIMIT=160MiB (set in the environment)"}`, "GOMEMLIMIT=160MiB (set in the environment)"},
		{`{"msg":"starting manager"}`, ""},
	} {
		if got := softLimitLogged([]byte(c.log)); got != c.want {
			t.Errorf("softLimitLogged(%q) = %q, want %q", c.log, got, c.want)
		}
	}
}

// TestMemcgShowsTheLimitWhereAContainerDoes runs memcg.sh for real: the command it runs is in the cgroup, and
// reads the cgroup's limit at the path internal/memlimit reads in a pod. Needs root and a writable cgroup
// hierarchy: skipped loudly without, failed under CI.
func TestMemcgShowsTheLimitWhereAContainerDoes(t *testing.T) {
	const limit = 300 << 20
	m, err := newMemcg(limit)
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("under CI the memory cgroup must work: %v", err)
		}
		t.Skipf("\n*** SKIPPED: %v (needs root and a writable memory cgroup) ***", err)
	}
	defer m.remove()
	limitFile := "memory.limit_in_bytes"
	if m.v2 {
		limitFile = "memory.max"
	}
	script, err := filepath.Abs("memcg.sh")
	if err != nil {
		t.Fatal(err)
	}
	// The command prints the limit it sees where memlimit looks, and the cgroup it is in.
	bin, args := m.wrap(script, "sh", []string{"-c", `cat "$0"; cat /proc/self/cgroup`, filepath.Join(m.mountPoint(), limitFile)})
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %q: %v\n%s", bin, args, err, out)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if lines[0] != strconv.Itoa(limit) {
		t.Errorf("the command saw limit %q at %s, want %d\n%s", lines[0], filepath.Join(m.mountPoint(), limitFile), limit, out)
	}
	if name := filepath.Base(m.dir); !strings.Contains(string(out), "/"+name) {
		t.Errorf("the command is not in cgroup %s:\n%s", name, out)
	}
	// The machine's own view is untouched: the mount was private to the command's namespace.
	if b, err := os.ReadFile(filepath.Join(m.mountPoint(), limitFile)); err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(limit) {
		t.Errorf("the bind mount leaked into the machine's namespace: %s shows the cgroup's limit", m.mountPoint())
	}
	s, err := m.stats()
	if err != nil {
		t.Fatal(err)
	}
	if s.peak <= 0 || s.oomKills != 0 {
		t.Errorf("stats %+v: want a positive peak and no OOM kill", s)
	}
}
