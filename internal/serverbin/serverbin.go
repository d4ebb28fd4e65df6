// Package serverbin finds the real hyperstatic-server binary (images/server) for Go tests that must run it: the
// contract tests that check the operator's command lines and metric names against the server itself, and the
// StaticSite envtest that reads a real server as a pod. Start (process.go) runs one on loopback for a test.
//
// `make go-test` builds the binary first (make server-build) and passes its path in HYPERSTATIC_SERVER_BIN. A
// plain `go test` without that variable builds the binary with the same cargo command as make, when it is missing
// or older than the server's sources. There is no skip: a test that needs the server either gets one or fails
// saying why, so a green run always means the real binary was exercised. ContentAgent (contentagent.go) does the
// same for the other real binary the tests run, cmd/content-agent.
package serverbin

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// EnvVar names the variable holding the binary's path. When set it is used as is and nothing is built: the caller
// (make, or a person pointing at a modified build) decides which binary is under test.
const EnvVar = "HYPERSTATIC_SERVER_BIN"

// Target is the cargo target triple make builds for (make/server.mk SERVER_TARGET).
const Target = "x86_64-unknown-linux-gnu"

// buildRustflags matches make/server.mk server-build: a static binary, the one images ship.
const buildRustflags = "-C target-feature=+crt-static"

var (
	once     sync.Once
	path     string
	errFound error
)

// Path returns the absolute path of the server binary, building it at most once per process when needed.
func Path() (string, error) {
	once.Do(func() { path, errFound = locate() })
	return path, errFound
}

// Require is Path for tests: it fails the test with the reason when there is no usable binary.
func Require(tb testing.TB) string {
	tb.Helper()
	p, err := Path()
	if err != nil {
		tb.Fatalf("hyperstatic-server binary: %v", err)
	}
	return p
}

func locate() (string, error) {
	if p, set, err := fromEnv(EnvVar); set {
		return p, err
	}
	dir, err := serverDir()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "target", Target, "release", "hyperstatic-server")
	stale, why, err := needsBuild(dir, bin)
	if err != nil {
		return "", err
	}
	if stale {
		if err := build(dir, why); err != nil {
			return "", err
		}
	}
	if err := executable(bin); err != nil {
		return "", fmt.Errorf("after cargo build: %w", err)
	}
	return bin, nil
}

// fromEnv returns the absolute path of the executable the variable name holds; set is false when it is unset.
func fromEnv(name string) (path string, set bool, err error) {
	p := os.Getenv(name)
	if p == "" {
		return "", false, nil
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", true, err
	}
	if err := executable(abs); err != nil {
		return "", true, fmt.Errorf("%s=%s: %w", name, p, err)
	}
	return abs, true, nil
}

func executable(p string) error {
	st, err := os.Stat(p)
	if err != nil {
		return err
	}
	if !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
		return fmt.Errorf("%s is not an executable file", p)
	}
	return nil
}

// serverDir finds images/server by walking up from the working directory (go test runs in the package's
// directory) to the module root. Walking the file system, rather than using this source file's compile-time
// path, keeps working under -trimpath.
func serverDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			s := filepath.Join(d, "images", "server")
			if _, err := os.Stat(filepath.Join(s, "Cargo.toml")); err != nil {
				return "", fmt.Errorf("module root %s has no images/server/Cargo.toml; set %s", d, EnvVar)
			}
			return s, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no go.mod above %s; set %s to the server binary", wd, EnvVar)
		}
	}
}

// needsBuild reports whether bin is missing or older than any input cargo would rebuild it from: the manifest,
// the lock file, a build script and the sources. Cargo remains the judge when it runs; this only avoids running
// it (and waiting on its build-directory lock) when the binary is plainly current.
func needsBuild(dir, bin string) (bool, string, error) {
	st, err := os.Stat(bin)
	if errors.Is(err, fs.ErrNotExist) {
		return true, bin + " does not exist", nil
	}
	if err != nil {
		return false, "", err
	}
	built := st.ModTime()
	var newest string
	var newestTime time.Time
	consider := func(p string, info fs.FileInfo) {
		if info.ModTime().After(newestTime) {
			newest, newestTime = p, info.ModTime()
		}
	}
	for _, f := range []string{"Cargo.toml", "Cargo.lock", "build.rs"} {
		if info, err := os.Stat(filepath.Join(dir, f)); err == nil {
			consider(f, info)
		}
	}
	err = filepath.WalkDir(filepath.Join(dir, "src"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		consider(p, info)
		return nil
	})
	if err != nil {
		return false, "", err
	}
	if newestTime.After(built) {
		return true, fmt.Sprintf("%s is newer than %s", newest, bin), nil
	}
	return false, "", nil
}

// build runs make/server.mk's server-build command. Progress goes to stderr because a cold release build takes
// minutes and go test shows test logs only at the end.
func build(dir, why string) error {
	cargo, err := exec.LookPath("cargo")
	if err != nil {
		home, _ := os.UserHomeDir()
		cargo = filepath.Join(home, ".cargo", "bin", "cargo")
		if executable(cargo) != nil {
			return fmt.Errorf("the server binary must be built (%s) but cargo is not on PATH or in ~/.cargo/bin: "+
				"run `make server-build` and set %s, or run the tests through `make go-test`", why, EnvVar)
		}
	}
	fmt.Fprintf(os.Stderr, "serverbin: %s; building it with cargo (a cold release build takes minutes)\n", why)
	cmd := exec.Command(cargo, "build", "--locked", "--release", "--target", Target)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "RUSTFLAGS="+buildRustflags)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("cargo build in %s: %w\n%s", dir, err, tail(out.String(), 40))
	}
	return nil
}

func tail(s string, lines int) string {
	l := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}
