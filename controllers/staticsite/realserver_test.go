package staticsite

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// A real hyperstatic-server process playing a server pod's container: started with the arguments and environment
// of the server container the operator wrote into the Deployment, with the container's paths swapped for
// temporary directories, loopback ports, and --memory-limit set to the pod's memory, as the container's cgroup
// would set it. envtest runs no kubelet; this is the part of
// a pod the status under test is read from.

// realServer is a running server process.
type realServer struct {
	adminPort int
	stderr    *syncBuffer
}

// startRealServer runs the server as container would run it, serving root under the container's memory limit, and
// returns once its /readyz answers 200. The process is killed when the test ends.
//
// The ports are picked by binding port 0 and closing it, so another process may take one first: the server then
// exits before it is ready, and a new pair is tried (three times). Readiness is polled to a deadline.
func startRealServer(t *testing.T, container corev1.Container, root string) *realServer {
	t.Helper()
	bin := serverbin.Require(t)
	memoryLimit := container.Resources.Limits.Memory().String()
	// The container's variables, with its cache directory (an emptyDir) swapped for a temporary one.
	var env []string
	for _, e := range container.Env {
		if e.Value == compressCacheDir {
			e.Value = t.TempDir()
		}
		env = append(env, e.Name+"="+e.Value)
	}
	var lastErr error
	for range 3 {
		s, exited, err := tryRealServer(t, bin, container.Args, env, root, memoryLimit)
		if err == nil {
			return s
		}
		lastErr = err
		if !exited {
			break
		}
	}
	t.Fatalf("hyperstatic-server did not become ready: %v", lastErr)
	return nil
}

func tryRealServer(t *testing.T, bin string, args, env []string, root, memoryLimit string) (*realServer, bool, error) {
	t.Helper()
	httpAddr, adminAddr := loopbackAddr(t), loopbackAddr(t)
	args = swapFlag(t, args, "--root", root)
	args = swapFlag(t, args, "--listen", httpAddr)
	args = swapFlag(t, args, "--admin-listen", adminAddr)
	args = append(args, "--memory-limit", memoryLimit, "--workers", "1")
	s := &realServer{stderr: &syncBuffer{}}
	_, port, _ := net.SplitHostPort(adminAddr)
	s.adminPort, _ = strconv.Atoi(port)

	cmd := exec.Command(bin, args...)
	// The server reads HYPERSTATIC_* variables as flag defaults: none of the shell's may leak in.
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "HYPERSTATIC_") })
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := func() { _ = cmd.Process.Kill(); <-exited }

	client := &http.Client{Timeout: time.Second}
	for deadline := time.Now().Add(30 * time.Second); ; {
		select {
		case <-exited:
			return nil, true, fmt.Errorf("exited before it was ready (%s)\nargs: %q\nstderr:\n%s", cmd.ProcessState, args, s.stderr)
		default:
		}
		if resp, err := client.Get("http://" + adminAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return s, false, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, false, errors.New("/readyz did not answer 200 within 30s\nstderr:\n" + s.stderr.String())
		}
		time.Sleep(20 * time.Millisecond) // poll interval while the site loads: readiness is checked, not assumed
	}
}

// swapFlag replaces the value after flag, which must be in args exactly once (as ServerArgs writes it).
func swapFlag(t *testing.T, args []string, flag, value string) []string {
	t.Helper()
	i := slices.Index(args, flag)
	if i < 0 || i+1 >= len(args) || slices.Index(args[i+1:], flag) >= 0 {
		t.Fatalf("ServerArgs does not write %s VALUE exactly once: %q", flag, args)
	}
	out := slices.Clone(args)
	out[i+1] = value
	return out
}

func loopbackAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// syncBuffer collects a child's stderr while the test may read it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
