package serverbin

import (
	"bytes"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Process is a real server running on loopback for one test: the contract tests and the StaticSite envtest (which
// has no kubelet) use it as a server pod's container.
type Process struct {
	Args      []string // the arguments it runs with, ports filled in
	HTTPAddr  string
	AdminAddr string
	Stderr    *LockedBuffer

	cmd    *exec.Cmd
	exited chan struct{}
}

// Signal sends sig to the server (a kubelet's SIGTERM).
func (p *Process) Signal(tb testing.TB, sig os.Signal) {
	tb.Helper()
	if err := p.cmd.Process.Signal(sig); err != nil {
		tb.Fatalf("signal the server: %v", err)
	}
}

// Exited is closed once the server's process has ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// Start runs bin with args, their --listen and --admin-listen values (each present once, as the operator writes
// them) replaced by free loopback ports, in this process's environment without HYPERSTATIC_* variables plus env
// (NAME=VALUE), and returns once the admin /readyz answers 200. The process is killed when the test ends.
//
// The ports are picked by binding port 0 and closing it, so another process could take one before the server binds
// it; the server then exits, and Start tries again with new ports (three times, then fails with the server's
// stderr). Readiness is polled to a deadline, never assumed after a sleep.
func Start(tb testing.TB, bin string, args []string, env ...string) *Process {
	tb.Helper()
	var lastErr error
	for range 3 {
		p, exitedEarly, err := tryStart(tb, bin, args, env)
		if err == nil {
			return p
		}
		lastErr = err
		if !exitedEarly {
			break // a server that runs but never gets ready would not do better on other ports
		}
	}
	tb.Fatalf("hyperstatic-server did not become ready: %v", lastErr)
	return nil
}

// tryStart starts one server; exitedEarly says the process ended before it was ready (a port taken meanwhile).
func tryStart(tb testing.TB, bin string, args, env []string) (p *Process, exitedEarly bool, err error) {
	tb.Helper()
	p = &Process{HTTPAddr: FreeAddr(tb), AdminAddr: FreeAddr(tb), Stderr: &LockedBuffer{}}
	p.Args = SetFlag(tb, SetFlag(tb, args, "--listen", p.HTTPAddr), "--admin-listen", p.AdminAddr)
	cmd := exec.Command(bin, p.Args...)
	cmd.Env = append(CleanEnv(), env...)
	cmd.Stderr = p.Stderr
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	exited := make(chan struct{})
	p.cmd, p.exited = cmd, exited
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() {
		_ = cmd.Process.Kill()
		<-exited
	}

	client := &http.Client{Timeout: time.Second}
	deadline := time.Now().Add(30 * time.Second)
	for {
		select {
		case <-exited:
			return nil, true, fmt.Errorf("server exited before it was ready (%s)\nargs: %s\nstderr:\n%s",
				cmd.ProcessState, QuoteArgs(p.Args), p.Stderr.String())
		default:
		}
		if resp, err := client.Get("http://" + p.AdminAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				tb.Cleanup(stop)
				return p, false, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, false, fmt.Errorf("/readyz on %s did not answer 200 within 30s\nargs: %s\nstderr:\n%s",
				p.AdminAddr, QuoteArgs(p.Args), p.Stderr.String())
		}
		// Poll interval while the server loads the site: readiness is checked, not assumed.
		time.Sleep(20 * time.Millisecond)
	}
}

// AdminPort is the admin listener's port number.
func (p *Process) AdminPort() int {
	_, port, _ := net.SplitHostPort(p.AdminAddr)
	n, _ := strconv.Atoi(port)
	return n
}

// SetFlag returns a copy of args with the value after flag replaced. flag must appear exactly once, followed by a
// value, as the operator's ServerArgs writes every flag it sets: anything else is a contract change the test names.
func SetFlag(tb testing.TB, args []string, flag, value string) []string {
	tb.Helper()
	out := append([]string(nil), args...)
	at := -1
	for i, a := range out {
		if a == flag {
			if at >= 0 {
				tb.Fatalf("%s appears twice in %q", flag, args)
			}
			at = i
		}
	}
	if at < 0 || at+1 >= len(out) {
		tb.Fatalf("ServerArgs no longer writes %s VALUE: %q", flag, args)
	}
	out[at+1] = value
	return out
}

// CleanEnv is this process's environment without HYPERSTATIC_* variables: the server reads those as flag defaults,
// and none of the shell's may leak into a test.
func CleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HYPERSTATIC_") {
			env = append(env, kv)
		}
	}
	return env
}

// QuoteArgs renders an argument list so it can be pasted into a shell.
func QuoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}

// FreeAddr returns a loopback address whose port was free a moment ago (another listener of a test's server,
// such as --tls-listen, is picked the same way). The port is not one the kernel picks for port 0: those come from
// the ephemeral range every outgoing connection on the machine draws from, so any of them could take it before the
// server binds it (a CI run lost its browser check that way). Below that range only an explicit bind can.
func FreeAddr(tb testing.TB) string {
	tb.Helper()
	low := ephemeralLow()
	for range 200 {
		port := 10000 + rand.IntN(max(1, low-10000))
		l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err != nil {
			continue
		}
		addr := l.Addr().String()
		_ = l.Close()
		return addr
	}
	tb.Fatalf("no free loopback port in 10000..%d", low)
	return ""
}

// ephemeralLow is the first port of the kernel's ephemeral range (32768 when it cannot be read or leaves no room
// below it).
func ephemeralLow() int {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 32768
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 32768
	}
	low, err := strconv.Atoi(f[0])
	if err != nil || low <= 10000 {
		return 32768
	}
	return low
}

// LockedBuffer collects a child's stderr while the test reads it.
type LockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *LockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *LockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// GetByHost asks the server's HTTP port for path with Host host (a pool's or a previews site's sites are chosen
// by it) and returns the status and body; redirects are followed.
func (p *Process) GetByHost(tb testing.TB, host, path string) (int, string) {
	tb.Helper()
	code, body, _ := p.ask(tb, http.DefaultClient.Do, host, path)
	return code, body
}

// Ask asks the server's HTTP port for path with Host host and the header fields given as name, value pairs, and
// returns the answer as it is (a redirect is not followed): its status, body and header.
func (p *Process) Ask(tb testing.TB, host, path string, header ...string) (int, string, http.Header) {
	tb.Helper()
	return p.ask(tb, http.DefaultTransport.RoundTrip, host, path, header...)
}

func (p *Process) ask(tb testing.TB, do func(*http.Request) (*http.Response, error), host, path string,
	header ...string) (int, string, http.Header) {
	tb.Helper()
	req, err := http.NewRequest(http.MethodGet, "http://"+p.HTTPAddr+path, nil)
	if err != nil {
		tb.Fatal(err)
	}
	req.Host = host
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := do(req)
	if err != nil {
		tb.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		tb.Fatal(err)
	}
	return resp.StatusCode, string(body), resp.Header
}
