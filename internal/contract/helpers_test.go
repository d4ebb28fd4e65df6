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
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testenv"
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

// operatorArgs are the arguments the operator gives a site's server container, runnable here: --root swapped for
// root and --site for a file holding the site value the operator renders for s (the ConfigMap the pod mounts).
// A server binary older than --site skips the test, saying so (serverbin.RequireSiteValue).
func operatorArgs(t *testing.T, bin string, s *v1alpha1.StaticSite, root string) []string {
	t.Helper()
	serverbin.RequireSiteValue(t, bin)
	args := serverbin.SetFlag(t, desired.ServerArgs(s), "--root", root)
	return serverbin.WithSiteValue(t, args, sitevalue.Render(s).Bytes)
}

// sampler returns a function that scrapes the running server with the operator's own scraper, addressed as a pod,
// until ok holds (the server reloads 150 ms after the last inotify event), failing the test after 20 s with the
// last sample.
func sampler(t *testing.T, srv *serverbin.Process) func(what string, ok func(podmetrics.Sample) bool) podmetrics.Sample {
	t.Helper()
	host, port, _ := net.SplitHostPort(srv.AdminAddr)
	adminPort, _ := strconv.Atoi(port)
	scraper := &podmetrics.HTTPScraper{Client: &http.Client{Timeout: 5 * time.Second}, Port: adminPort}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "contract-0"}, Status: corev1.PodStatus{PodIP: host}}
	return func(what string, ok func(podmetrics.Sample) bool) podmetrics.Sample {
		t.Helper()
		for deadline := time.Now().Add(20 * time.Second); ; {
			s, err := scraper.Scrape(context.Background(), pod)
			if err != nil {
				t.Fatal(err)
			}
			if ok(s) {
				return s
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: last sample LoadFailed=%v LoadError=%q site value %q (%v refused)\nstderr:\n%s", what, s.LoadFailed,
					s.LoadError, s.SiteValueRevision, s.SiteValueLoadFailures, srv.Stderr)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
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

// runOperatorFetcher runs the real content-agent fetcher from the operator's own command line for site
// (gitcontent.FetchArgs), its work under dir, polling every 200 ms, checking with the real server, and returns its
// address.
func runOperatorFetcher(t *testing.T, site *v1alpha1.StaticSite, dir string) string {
	t.Helper()
	addr := freePort(t)
	fetch := gitcontent.FetchArgs(site)
	fetch = setArg(t, fetch, "--dir", filepath.Join(dir, "fetcher"))
	fetch = setArg(t, fetch, "--listen", addr)
	fetch = setArg(t, fetch, "--interval", "200ms")
	fetch = setArg(t, fetch, "--check-server", serverbin.Require(t))
	runAgent(t, fetch, addr)
	return addr
}

// runPuller runs the real content-agent with the puller arguments pull (the operator's, with the test's paths)
// on addr, and waits until it installed its first tree.
func runPuller(t *testing.T, pull []string, addr string) {
	t.Helper()
	runAgent(t, setArg(t, pull, "--listen", addr), addr)
	testenv.Eventually(t, "the first tree installed by the puller", func() error {
		if code := statusOf(t, "http://"+addr+"/healthz"); code != http.StatusOK {
			return fmt.Errorf("puller /healthz %d", code)
		}
		return nil
	})
}
