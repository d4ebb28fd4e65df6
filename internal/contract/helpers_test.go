package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// siteFiles is the small real site every contract test serves: the pages the StaticSite fields refer to
// (notFoundPage /404.html, spaFallback's /index.html), an /assets tree for the "/assets/**" rules, and one file
// over 1 KiB so the server's background encoder has work, as it does in production.
var siteFiles = map[string]string{
	"index.html":        "<!doctype html><title>contract</title><p>home</p>\n",
	"404.html":          "<!doctype html><title>not found</title><p>404</p>\n",
	"about/index.html":  "<!doctype html><title>about</title>\n",
	"assets/style.css":  "body { margin: 0 }\n",
	"assets/app.js":     strings.Repeat("console.log('hyperstatic contract');\n", 64),
	"assets/img/a b.js": "// a file name with a space\n",
}

// writeSite writes siteFiles into a fresh temporary directory and returns it.
func writeSite(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for name, body := range siteFiles {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

// setFlag returns a copy of args with the value after flag replaced. The flag must be there exactly once as
// "--flag VALUE" (the form ServerArgs writes): the tests only swap container paths and ports for local ones, and
// a generated list without the flag, or with it twice, is itself a contract change worth a failure.
func setFlag(t *testing.T, args []string, flag, value string) []string {
	t.Helper()
	out := append([]string(nil), args...)
	at := -1
	for i, a := range out {
		if a == flag {
			if at >= 0 {
				t.Fatalf("%s appears twice in %q", flag, args)
			}
			at = i
		}
	}
	if at < 0 || at+1 >= len(out) {
		t.Fatalf("ServerArgs no longer writes %s VALUE: %q", flag, args)
	}
	out[at+1] = value
	return out
}

// serverEnv is the environment the server runs with: this process's, without HYPERSTATIC_* variables, which the
// server reads as flag defaults and which would make the result depend on the shell that ran the tests.
func serverEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "HYPERSTATIC_") {
			env = append(env, kv)
		}
	}
	return env
}

// checkResult is one `hyperstatic-server --check` run.
type checkResult struct {
	exitCode       int
	stdout, stderr string
}

// runCheck runs `bin --check args...`. A run that does not finish within the timeout is an error: --check loads
// the site and exits, and one that hangs has started serving.
func runCheck(bin string, args []string) (checkResult, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--check"}, args...)...)
	cmd.Env = serverEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := checkResult{stdout: stdout.String(), stderr: stderr.String()}
	if ctx.Err() != nil {
		return res, fmt.Errorf("--check did not exit within 30s (is it serving?)")
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.exitCode = exit.ExitCode()
	case err != nil:
		return res, err
	}
	return res, nil
}

// quoteArgs renders an argument list so it can be pasted into a shell.
func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = strconv.Quote(a)
	}
	return strings.Join(q, " ")
}

// lockedBuffer collects a child's stderr while the test reads it.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runningServer is a real server process on loopback.
type runningServer struct {
	args      []string
	httpAddr  string
	adminAddr string
	stderr    *lockedBuffer
}

// startServer runs bin with args, --listen and --admin-listen set to free loopback ports, and env (NAME=VALUE)
// added to serverEnv, and returns once the admin /readyz answers 200. The process is killed when the test ends.
//
// The ports are picked by binding port 0 and closing it, so another process could take one before the server
// binds it; the server then exits, and startServer tries again with new ports (a few times, then fails with the
// server's stderr). Readiness is polled with a deadline, never assumed after a sleep.
func startServer(t *testing.T, bin string, args []string, env ...string) *runningServer {
	t.Helper()
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, exitedEarly, err := tryStart(t, bin, args, env)
		if err == nil {
			return s
		}
		lastErr = err
		if !exitedEarly {
			break // a server that runs but never gets ready would not do better on other ports
		}
	}
	t.Fatalf("server did not become ready: %v", lastErr)
	return nil
}

// tryStart starts one server; exitedEarly says the process ended before it was ready (a port taken meanwhile).
func tryStart(t *testing.T, bin string, args, env []string) (s *runningServer, exitedEarly bool, err error) {
	t.Helper()
	s = &runningServer{httpAddr: freeAddr(t), adminAddr: freeAddr(t), stderr: &lockedBuffer{}}
	s.args = setFlag(t, setFlag(t, args, "--listen", s.httpAddr), "--admin-listen", s.adminAddr)
	cmd := exec.Command(bin, s.args...)
	cmd.Env = append(serverEnv(), env...)
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		return nil, false, err
	}
	exited := make(chan struct{})
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
				cmd.ProcessState, quoteArgs(s.args), s.stderr.String())
		default:
		}
		if resp, err := client.Get("http://" + s.adminAddr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				t.Cleanup(stop)
				return s, false, nil
			}
		}
		if time.Now().After(deadline) {
			stop()
			return nil, false, fmt.Errorf("/readyz on %s did not answer 200 within 30s\nargs: %s\nstderr:\n%s",
				s.adminAddr, quoteArgs(s.args), s.stderr.String())
		}
		// Poll interval while the server loads the site: readiness is checked, not assumed.
		time.Sleep(20 * time.Millisecond)
	}
}

// freeAddr returns a loopback address whose port was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}
