package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/serverbin"
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
	cmd.Env = serverbin.CleanEnv()
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

// pendingServerFlags are flags of the HTTP/2 contract whose two halves are built on two branches at once: the
// operator writes them (ServerArgs) before the server binary in this tree may know them. A case that passes one to
// a binary whose --help does not list it is checked without it (the rest of its arguments still go through
// --check) and then skipped, saying so; under CI=true it fails instead: CI builds the merged tree, where every
// case must run whole. Delete a flag from this list once the server in main has it.
var pendingServerFlags = []string{"--http2", "--h2c"}

var serverHelp = struct {
	sync.Mutex
	text map[string]string
}{text: map[string]string{}}

// withoutUnknownPendingFlags returns args without the pendingServerFlags that bin does not know, and those flags.
func withoutUnknownPendingFlags(t *testing.T, bin string, args []string) (known []string, unknown []string) {
	t.Helper()
	serverHelp.Lock()
	help, ok := serverHelp.text[bin]
	if !ok {
		out, err := exec.Command(bin, "--help").CombinedOutput()
		if err != nil {
			serverHelp.Unlock()
			t.Fatalf("%s --help: %v\n%s", bin, err, out)
		}
		help = string(out)
		serverHelp.text[bin] = help
	}
	serverHelp.Unlock()
	for _, a := range args {
		flag, _, _ := strings.Cut(a, "=")
		if slices.Contains(pendingServerFlags, flag) && !strings.Contains(help, flag+"[=") && !strings.Contains(help, flag+" ") {
			unknown = append(unknown, a)
			continue
		}
		known = append(known, a)
	}
	return known, unknown
}

// skipForUnknownPendingFlags ends a case whose pending flags were left out of its check (see pendingServerFlags).
func skipForUnknownPendingFlags(t *testing.T, bin string, unknown []string) {
	t.Helper()
	if len(unknown) == 0 {
		return
	}
	msg := fmt.Sprintf("the server binary %s does not know %q yet (the HTTP/2 contract's server half): the other arguments pass, these are not checked", bin, unknown)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
