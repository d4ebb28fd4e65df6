package contentagent_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// BenchmarkPeakRSSDocsSized measures what the pods' memory limits must hold for a docs-sized site (1,065 files,
// 67 MB, gittestserver.DocsSizedTree): the peak RSS (VmHWM) of the real `content-agent fetch` process (built
// static, CGO_ENABLED=0) fetching it from the loopback test Git server, checking it with the real server's
// --check and writing its bundle; of the server's --check itself (a child of the fetcher, in the same
// container: run again on the same tree under /usr/bin/time, with no limit and with --memory-limit 128Mi, which
// a container limit of 128Mi also sets); and of `content-agent pull` installing that bundle. The Git server and this benchmark run in the
// benchmark's process, the measured ones in their own. Sub-benchmarks vary the fetcher's GOMEMLIMIT. Not a test:
// the figures go into docs/design/git-content.md.
//
//	go test -run '^$' -bench PeakRSSDocsSized -benchtime 1x ./internal/contentagent
func BenchmarkPeakRSSDocsSized(b *testing.B) {
	server := serverbin.Require(b)
	agent := serverbin.ContentAgent(b)
	srv, base := gts.Start(b, "", "", "")
	repo := srv.NewRepo(b, base, "docs.git", nil)
	c := repo.Commit("docs", gts.DocsSizedTree())
	repo.Push("refs/heads/main", c, false)

	for _, limit := range []string{"", "64MiB"} {
		name := "GOMEMLIMIT=" + limit
		if limit == "" {
			name = "GOMEMLIMIT=off"
		}
		b.Run(name, func(b *testing.B) {
			for range b.N {
				fetchDir := b.TempDir()
				env := []string{}
				if limit != "" {
					env = append(env, "GOMEMLIMIT="+limit)
				}
				fetcher := startAgent(b, agent, env, "fetch", "--url", repo.URL, "--ref", "main", "--interval", "1h",
					"--check-server", server, "--dir", fetchDir, "--webhook-listen", "")
				start := time.Now()
				rev := waitPublished(b, fetcher.url)
				took := time.Since(start)
				fetchHWM := fetcher.stop(b)
				if rev.Commit != c.String() {
					b.Fatalf("published %+v, want %s", rev, c)
				}
				tree := filepath.Join(fetchDir, "trees", "current")
				checkRSS := checkPeak(b, server, tree)
				check128 := checkPeak(b, server, tree, "--memory-limit", "128Mi")

				// The puller downloads and installs the bundle from a fetcher restarted on the same volume (it
				// serves the restored bundle at once, and its own memory is not what is measured here).
				again := startAgent(b, agent, nil, "fetch", "--url", repo.URL, "--ref", "main", "--interval", "1h",
					"--dir", fetchDir, "--webhook-listen", "")
				puller := startAgent(b, agent, env, "pull", "--fetcher", again.url, "--dir", b.TempDir())
				pulled := waitPublished(b, puller.url)
				pullHWM := puller.stop(b)
				again.stop(b)
				if pulled.Commit != c.String() {
					b.Fatalf("the puller serves %+v, want %s", pulled, c)
				}
				b.ReportMetric(float64(fetchHWM)/1024, "fetch-peak-RSS-MiB")
				b.ReportMetric(float64(checkRSS)/1024, "check-peak-RSS-MiB")
				b.ReportMetric(float64(check128)/1024, "check-128Mi-peak-RSS-MiB")
				b.ReportMetric(float64(pullHWM)/1024, "pull-peak-RSS-MiB")
				b.ReportMetric(took.Seconds(), "fetch-s")
				b.Logf("%s: fetch (fetch, check, bundle of %d bytes) %.1fs, peak RSS fetch %d KiB, check %d KiB (%d KiB under a 128Mi limit), pull %d KiB",
					name, rev.Size, took.Seconds(), fetchHWM, checkRSS, check128, pullHWM)
			}
		})
	}
}

// agentProcess is a running content-agent with its HTTP port.
type agentProcess struct {
	cmd *exec.Cmd
	url string
}

// startAgent runs the agent binary with args plus a --listen on a free loopback port, and env added.
func startAgent(b testing.TB, bin string, env []string, args ...string) *agentProcess {
	b.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	cmd := exec.Command(bin, append(args, "--listen", addr)...)
	cmd.Env = append(os.Environ(), env...)
	logFile, err := os.Create(filepath.Join(b.TempDir(), args[0]+".log"))
	if err != nil {
		b.Fatal(err)
	}
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	p := &agentProcess{cmd: cmd, url: "http://" + addr}
	b.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
		_ = logFile.Close()
	})
	return p
}

// stop reads the process's peak RSS (VmHWM, KiB: its own, not its children's) and ends it with SIGTERM.
func (p *agentProcess) stop(b testing.TB) int64 {
	b.Helper()
	hwm := statusKiB(b, p.cmd.Process.Pid, "VmHWM")
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	_ = p.cmd.Wait()
	return hwm
}

// waitPublished long-polls url/revision until it names a commit (bounded: a hung process fails the benchmark).
func waitPublished(b testing.TB, url string) contentagent.Revision {
	b.Helper()
	deadline := time.Now().Add(5 * time.Minute)
	for time.Now().Before(deadline) {
		resp, err := http.Get(url + "/revision?wait=&commit=")
		if err != nil { // not listening yet
			time.Sleep(50 * time.Millisecond)
			continue
		}
		var rev contentagent.Revision
		err = json.NewDecoder(resp.Body).Decode(&rev)
		_ = resp.Body.Close()
		if err == nil && rev.Commit != "" && rev.Digest != "" {
			return rev
		}
		if err == nil && rev.LastError != nil {
			b.Fatalf("%s: %+v", url, rev.LastError)
		}
	}
	b.Fatalf("%s published nothing in 5 minutes", url)
	return contentagent.Revision{}
}

// checkPeak runs `server --check --root tree more...` under /usr/bin/time -v and returns its peak RSS (KiB). Not
// from this process's rusage of a child: Go starts children with vfork, so a child's maximum RSS includes this
// (large) process's until the exec, while /usr/bin/time is small.
func checkPeak(b *testing.B, server, tree string, more ...string) int64 {
	b.Helper()
	cmd := exec.Command("/usr/bin/time", append([]string{"-v", server, "--check", "--root", tree}, more...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		b.Fatalf("/usr/bin/time -v %s --check (apt-get install time): %v\n%s", server, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "Maximum resident set size (kbytes):"); ok {
			n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no maximum RSS in the output of /usr/bin/time:\n%s", out)
	return 0
}

// statusKiB reads one "Name: N kB" line of /proc/PID/status.
func statusKiB(b testing.TB, pid int, name string) int64 {
	b.Helper()
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), name+":"); ok {
			n, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				b.Fatal(err)
			}
			return n
		}
	}
	b.Fatalf("no %s in /proc/%d/status", name, pid)
	return 0
}
