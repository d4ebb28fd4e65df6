package contract

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The content-agent contract (content from Git): the command lines the operator writes for a Git site's fetcher
// container (staticsite.FetchArgs) and its pods' puller sidecar (staticsite.PullArgs) are accepted by the real
// `content-agent` binary (cmd/content-agent), and what the operator reads from those processes (/revision, the
// /healthz its probes ask) is what they serve. Like the server's, nothing else ties the two halves together: a
// renamed flag would be a fetcher in CrashLoopBackOff and server pods that never start.
//
// Accepted means parsed: each list is run with "-h" appended. Go's flag package parses the arguments in order and
// stops at -h with exit status 0 (usage on stderr); an unknown flag or a value it cannot parse exits 2 first.

// gitCase is one Git site whose content-agent command lines are checked.
type gitCase struct {
	name string
	git  v1alpha1.GitContent
}

func gitCases() []gitCase {
	base := v1alpha1.GitContent{URL: "https://github.com/example/docs.git", Ref: "main"}
	with := func(mutate func(*v1alpha1.GitContent)) v1alpha1.GitContent {
		g := base
		mutate(&g)
		return g
	}
	secret := &v1alpha1.LocalObjectReference{Name: "docs-git-auth"}
	hook := &v1alpha1.LocalObjectReference{Name: "docs-git-hook"}
	return []gitCase{
		{"defaults", base},
		{"path", with(func(g *v1alpha1.GitContent) { g.Path = "site/public" })},
		{"secret", with(func(g *v1alpha1.GitContent) { g.SecretRef = secret })},
		{"webhook", with(func(g *v1alpha1.GitContent) { g.WebhookSecretRef = hook })},
		{"path, secret and webhook", with(func(g *v1alpha1.GitContent) {
			g.Path, g.SecretRef, g.WebhookSecretRef = "public", secret, hook
		})},
		{"ssh scp form, tag", with(func(g *v1alpha1.GitContent) { g.URL, g.Ref = "git@github.com:example/docs.git", "refs/tags/v1.2.0" })},
		{"ssh url with port, commit", with(func(g *v1alpha1.GitContent) {
			g.URL, g.Ref = "ssh://git@gitea.internal:2222/example/docs.git", "0123456789abcdef0123456789abcdef01234567"
		})},
		// The CRD admits a ref and a path that start with '-': a parser that took them for flags would refuse the
		// whole list.
		{"values starting with a hyphen", with(func(g *v1alpha1.GitContent) { g.Ref, g.Path = "-draft", "-build" })},
		{"interval whole seconds", with(func(g *v1alpha1.GitContent) { g.Interval = &metav1.Duration{Duration: 10 * time.Second} })},
		{"interval in hours", with(func(g *v1alpha1.GitContent) { g.Interval = &metav1.Duration{Duration: 90 * time.Minute} })},
		{"interval fractional", with(func(g *v1alpha1.GitContent) { g.Interval = &metav1.Duration{Duration: 10500 * time.Millisecond} })},
		{"max size small", with(func(g *v1alpha1.GitContent) { g.MaxSize = ptr.To(resource.MustParse("1")) })},
		{"max size 16Gi", with(func(g *v1alpha1.GitContent) { g.MaxSize = ptr.To(resource.MustParse("16Gi")) })},
		{"max size decimal", with(func(g *v1alpha1.GitContent) { g.MaxSize = ptr.To(resource.MustParse("1.5G")) })},
		{"tree limits at the CRD's bounds", with(func(g *v1alpha1.GitContent) { g.MaxEntries, g.MaxDepth = ptr.To[int32](1000000), ptr.To[int32](256) })},
		{"tree limits smallest", with(func(g *v1alpha1.GitContent) { g.MaxEntries, g.MaxDepth = ptr.To[int32](1), ptr.To[int32](1) })},
		{"history at the CRD's bounds", with(func(g *v1alpha1.GitContent) { g.History = ptr.To[int32](20) })},
		{"history smallest, pinned", with(func(g *v1alpha1.GitContent) { g.History, g.Pin = ptr.To[int32](1), strings.Repeat("ab", 20) })},
	}
}

func gitSite(g v1alpha1.GitContent) *v1alpha1.StaticSite {
	return &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "web"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Git: &g}}}
}

// parseOnly runs `content-agent ARGS... -h` and returns its exit status and stderr.
func parseOnly(t *testing.T, bin string, args []string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append(append([]string(nil), args...), "-h")...)
	cmd.Dir = t.TempDir()
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("content-agent %s did not exit: it ran instead of parsing\nstderr: %s", serverbin.QuoteArgs(args), stderr.String())
	}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		return exit.ExitCode(), stderr.String()
	case err != nil:
		t.Fatal(err)
	}
	return 0, stderr.String()
}

// flagNames are the --flags of an argument list (its first element is the subcommand).
func flagNames(args []string) []string {
	var out []string
	for _, a := range args[1:] {
		if name, ok := strings.CutPrefix(a, "--"); ok {
			name, _, _ = strings.Cut(name, "=")
			out = append(out, name)
		}
	}
	return out
}

var usageFlag = regexp.MustCompile(`(?m)^\s+-([a-z-]+)`)

func TestContractContentAgentAcceptsTheOperatorsArguments(t *testing.T) {
	bin := serverbin.ContentAgent(t)
	for _, c := range gitCases() {
		site := gitSite(c.git)
		for _, args := range [][]string{gitcontent.FetchArgs(site), gitcontent.PullArgs(site)} {
			t.Run(c.name+"/"+args[0], func(t *testing.T) {
				code, out := parseOnly(t, bin, args)
				if code != 0 || !strings.Contains(out, "Usage of "+args[0]) {
					t.Fatalf("content-agent refuses the operator's arguments (exit %d)\nargs: %s\noutput: %s", code, serverbin.QuoteArgs(args), out)
				}
				// Each flag the operator writes is one the subcommand defines (its usage lists it).
				defined := map[string]bool{}
				for _, m := range usageFlag.FindAllStringSubmatch(out, -1) {
					defined[m[1]] = true
				}
				for _, f := range flagNames(args) {
					if !defined[f] {
						t.Errorf("--%s is not in the usage of %s: %s", f, args[0], out)
					}
				}
			})
		}
	}
}

// The check above can fail: the binary refuses a flag it does not know and a value it cannot parse.
func TestContractContentAgentRejectsUnknownFlags(t *testing.T) {
	bin := serverbin.ContentAgent(t)
	site := gitSite(gitCases()[4].git)
	for _, m := range []struct {
		name string
		args []string
	}{
		{"misspelled --max-bytes", replaceArg(gitcontent.FetchArgs(site), "--max-bytes", "--max-byte")},
		{"unknown flag", append(gitcontent.PullArgs(site), "--no-such-flag")},
		{"unparsable interval", append(gitcontent.FetchArgs(site), "--interval", "soon")},
		{"pull flag given to fetch", append(gitcontent.FetchArgs(site), "--fetcher", "http://x")},
	} {
		t.Run(m.name, func(t *testing.T) {
			if code, out := parseOnly(t, bin, m.args); code == 0 {
				t.Fatalf("accepted: %s\n%s", serverbin.QuoteArgs(m.args), out)
			}
		})
	}
}

// freePort returns a loopback address whose port was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	return serverbin.FreeAddr(t)
}

// runAgent starts `content-agent ARGS` (stopped at the end of the test) and waits until addr answers.
func runAgent(t *testing.T, args []string, addr string) {
	t.Helper()
	cmd := exec.Command(serverbin.ContentAgent(t), args...)
	var out serverbin.LockedBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-exited:
			t.Fatalf("content-agent %s exited: %v\n%s", serverbin.QuoteArgs(args), waitErr, out.String())
		default:
		}
		if c, err := net.DialTimeout("tcp", addr, time.Second); err == nil {
			_ = c.Close()
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("content-agent %s does not listen on %s\n%s", serverbin.QuoteArgs(args), addr, out.String())
}

// setArg replaces the value after flag (or the flag=value form) in a copy of args.
func setArg(t *testing.T, args []string, flag, value string) []string {
	t.Helper()
	out := slices.Clone(args)
	for i, a := range out {
		if a == flag && i+1 < len(out) {
			out[i+1] = value
			return out
		}
		if strings.HasPrefix(a, flag+"=") {
			out[i] = flag + "=" + value
			return out
		}
	}
	t.Fatalf("%s is not in %q", flag, args)
	return nil
}

func statusOf(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	return resp.StatusCode
}

// The real processes, started from the operator's own command lines (ports and directories moved to the test's):
// the probe paths the operator sets answer as the pod spec expects (the fetcher is not ready and the puller not
// started before a commit is there), and the operator's reader understands their /revision, a failed fetch's
// reason included.
func TestContractContentAgentAnswersWhatTheOperatorReads(t *testing.T) {
	site := gitSite(v1alpha1.GitContent{URL: "http://127.0.0.1:1/docs.git", Ref: "main", WebhookSecretRef: &v1alpha1.LocalObjectReference{Name: "hook"}})
	dir := t.TempDir()
	fetchAddr, hookAddr := freePort(t), freePort(t)
	fetch := gitcontent.FetchArgs(site)
	fetch = setArg(t, fetch, "--dir", filepath.Join(dir, "fetcher"))
	fetch = setArg(t, fetch, "--listen", fetchAddr)
	fetch = setArg(t, fetch, "--webhook-listen", hookAddr)
	fetch = setArg(t, fetch, "--webhook-secret-file", filepath.Join(dir, "token"))
	fetch = setArg(t, fetch, "--check-server", serverbin.Require(t))
	runAgent(t, fetch, fetchAddr)

	pullAddr := freePort(t)
	pull := gitcontent.PullArgs(site)
	pull = setArg(t, pull, "--fetcher", "http://"+fetchAddr)
	pull = setArg(t, pull, "--dir", filepath.Join(dir, "site"))
	pull = setArg(t, pull, "--listen", pullAddr)
	runAgent(t, pull, pullAddr)

	reader := gitrevision.NewHTTPReader()
	read := func(addr string) (gitrevision.Revision, error) {
		host, port, _ := net.SplitHostPort(addr)
		n, err := strconv.Atoi(port)
		if err != nil {
			return gitrevision.Revision{}, err
		}
		return reader.Read(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Status: corev1.PodStatus{PodIP: host}}, n)
	}
	// The repository's host does not answer: the fetcher reports it, and the operator reads GitUnreachable.
	testenv.Eventually(t, "the fetcher's first fetch fails", func() error {
		rev, err := read(fetchAddr)
		switch {
		case err != nil:
			return err
		case rev.Failure == nil:
			return fmt.Errorf("no failure yet: %+v", rev)
		case rev.Failure.Reason != v1alpha1.ReasonGitUnreachable || rev.Published():
			return fmt.Errorf("revision %+v failure %+v, want GitUnreachable and nothing published", rev, rev.Failure)
		}
		return nil
	})
	if rev, err := read(pullAddr); err != nil || rev.Published() {
		t.Errorf("the puller's revision %+v, %v: want nothing served", rev, err)
	}
	// The probes: the fetcher's readiness and the puller's startup both wait for a commit.
	if code := statusOf(t, "http://"+fetchAddr+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("fetcher /healthz %d before a publish, want 503", code)
	}
	if code := statusOf(t, "http://"+pullAddr+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("puller /healthz %d before a tree, want 503", code)
	}
	// The webhook port answers /hooks alone (what the Service <site>-git-webhook exposes).
	if code := statusOf(t, "http://"+hookAddr+"/revision"); code != http.StatusNotFound {
		t.Errorf("the webhook port serves /revision: %d", code)
	}
}
