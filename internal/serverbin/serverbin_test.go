package serverbin

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestNeedsBuild checks the freshness rule on a fake crate with controlled modification times: missing binary,
// binary newer than every input, and each kind of input (manifest, lock file, a nested source) made newer.
func TestNeedsBuild(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	write := func(rel string, at time.Time) string {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(rel), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(p, at, at); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("Cargo.toml", base)
	write("Cargo.lock", base)
	write("src/main.rs", base)
	write("src/config/flags.rs", base)
	bin := filepath.Join(dir, "target", Target, "release", "hyperstatic-server")

	if stale, why, err := needsBuild(dir, bin); err != nil || !stale || !strings.Contains(why, "does not exist") {
		t.Fatalf("missing binary: stale=%v why=%q err=%v, want stale because it does not exist", stale, why, err)
	}
	write("target/"+Target+"/release/hyperstatic-server", base.Add(time.Minute))
	if stale, why, err := needsBuild(dir, bin); err != nil || stale {
		t.Fatalf("binary newer than its inputs: stale=%v why=%q err=%v, want fresh", stale, why, err)
	}
	for i, input := range []string{"Cargo.lock", "Cargo.toml", "src/config/flags.rs"} {
		later := base.Add(time.Duration(2+i) * time.Minute)
		write(input, later)
		stale, why, err := needsBuild(dir, bin)
		if err != nil || !stale || !strings.Contains(why, filepath.Base(input)) {
			t.Fatalf("%s edited after the build: stale=%v why=%q err=%v, want stale naming it", input, stale, why, err)
		}
		write("target/"+Target+"/release/hyperstatic-server", later.Add(time.Second))
	}
}

// TestLocateHonoursEnvVar: a path in HYPERSTATIC_SERVER_BIN is used as given and must be an executable file.
func TestLocateHonoursEnvVar(t *testing.T) {
	dir := t.TempDir()
	exe := filepath.Join(dir, "server")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvVar, exe)
	if p, err := locate(); err != nil || p != exe {
		t.Fatalf("locate() = %q, %v; want %q", p, err, exe)
	}
	plain := filepath.Join(dir, "not-executable")
	if err := os.WriteFile(plain, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvVar, plain)
	if _, err := locate(); err == nil || !strings.Contains(err.Error(), EnvVar) {
		t.Fatalf("a non-executable %s must be an error naming the variable, got %v", EnvVar, err)
	}
	t.Setenv(EnvVar, filepath.Join(dir, "missing"))
	if _, err := locate(); err == nil {
		t.Fatal("a missing file must be an error")
	}
}
