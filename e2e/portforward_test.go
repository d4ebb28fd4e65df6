//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// portForward is a `kubectl port-forward` to a Service's port, listening on loopback only: the way the test
// process reaches something in the cluster that the API server does not proxy as a plain GET (a Git push, a
// webhook POST). Its local port is fixed at the first start, so a URL built on it stays valid when the forward is
// started again (kubectl ends a forward whose pod went away).
type portForward struct {
	ns, target string // e.g. "svc/gitserver"
	remotePort int
	localPort  int

	mu  sync.Mutex
	cmd *exec.Cmd
}

// forwardedRE is kubectl's line once it listens: "Forwarding from 127.0.0.1:43567 -> 8443".
var forwardedRE = regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> `)

// startPortForward forwards a free loopback port to target's remotePort and stops it when the test ends.
func startPortForward(t *testing.T, ns, target string, remotePort int) *portForward {
	t.Helper()
	pf := &portForward{ns: ns, target: target, remotePort: remotePort}
	t.Cleanup(pf.stop)
	pf.restart(t)
	return pf
}

// addr is the forward's loopback address, e.g. 127.0.0.1:43567.
func (pf *portForward) addr() string { return fmt.Sprintf("127.0.0.1:%d", pf.localPort) }

// restart (re)starts kubectl and returns once it listens. A forward to a Service picks one of its ready pods when
// it starts, so after a restart of that pod the forward must be started again.
func (pf *portForward) restart(t *testing.T) {
	t.Helper()
	pf.stop()
	bin := os.Getenv("E2E_KUBECTL")
	if bin == "" {
		t.Fatal("E2E_KUBECTL is not set: run the suite with make")
	}
	// The first start lets kubectl pick the port (":443" form), the next ones ask for the same.
	ports := fmt.Sprintf(":%d", pf.remotePort)
	if pf.localPort != 0 {
		ports = fmt.Sprintf("%d:%d", pf.localPort, pf.remotePort)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		cmd := exec.Command(bin, "--kubeconfig", cfg.kubeCfg, "-n", pf.ns, "port-forward", "--address", "127.0.0.1", pf.target, ports)
		port, err := startKubectlForward(cmd)
		if err == nil {
			pf.mu.Lock()
			pf.cmd, pf.localPort = cmd, port
			pf.mu.Unlock()
			return
		}
		// Right after a rollout the Service may have no ready pod yet: try again for a minute.
		if time.Now().After(deadline) {
			t.Fatalf("kubectl port-forward %s/%s %s: %v", pf.ns, pf.target, ports, err)
		}
		time.Sleep(time.Second)
	}
}

// startKubectlForward starts cmd and waits (at most 30 s) for its "Forwarding from" line; it returns the local
// port, or the error and kubectl's output if it ended first.
func startKubectlForward(cmd *exec.Cmd) (int, error) {
	out, err := cmd.StdoutPipe()
	if err != nil {
		return 0, err
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		return 0, err
	}
	found := make(chan int, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if m := forwardedRE.FindStringSubmatch(sc.Text()); m != nil {
				var p int
				_, _ = fmt.Sscan(m[1], &p)
				found <- p
				break
			}
		}
		// Keep reading so kubectl never blocks on a full pipe ("Handling connection for ..." per connection).
		_, _ = io.Copy(io.Discard, out)
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case p := <-found:
		// kubectl prints the line once it listens; check that the port answers before anyone uses it.
		if c, err := net.DialTimeout("tcp", fmt.Sprintf("127.0.0.1:%d", p), 5*time.Second); err == nil {
			_ = c.Close()
			return p, nil
		}
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("port %d does not accept connections", p)
	case err := <-exited:
		return 0, fmt.Errorf("kubectl ended (%w): %s", err, strings.TrimSpace(stderr.String()))
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("no \"Forwarding from\" line within 30 s: %s", strings.TrimSpace(stderr.String()))
	}
}

// stop ends kubectl (its process only; it started no children).
func (pf *portForward) stop() {
	pf.mu.Lock()
	defer pf.mu.Unlock()
	if pf.cmd != nil && pf.cmd.Process != nil {
		_ = pf.cmd.Process.Kill()
	}
	pf.cmd = nil
}

// withForward runs do against pf and, when it fails with a connection error (the pod behind the forward was
// replaced, or kubectl lost it), starts the forward again and tries once more.
func withForward(t *testing.T, pf *portForward, do func(ctx context.Context) error) error {
	t.Helper()
	ctx := ctxFor(t, 2*time.Minute)
	err := do(ctx)
	if err == nil || !isConnError(err) {
		return err
	}
	t.Logf("port-forward to %s/%s failed (%v): starting it again", pf.ns, pf.target, err)
	pf.restart(t)
	return do(ctx)
}

func isConnError(err error) bool {
	s := err.Error()
	for _, m := range []string{"connection refused", "connection reset", "EOF", "broken pipe"} {
		if strings.Contains(s, m) {
			return true
		}
	}
	return false
}
