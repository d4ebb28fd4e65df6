package contentagent_test

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	gts "hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// The webhook's limits (webhook.go) against the real `content-agent fetch` process and the real test Git server,
// all on loopback.

// webhookAgent is a content-agent fetch process following repo, with its webhook port.
type webhookAgent struct {
	*agentProcess
	hookAddr string
	hookURL  string
	secret   []byte
}

// startWebhookAgent runs `content-agent fetch` on repo's main (interval 1h: every fetch after the first is a
// webhook's) with a webhook secret and more flags, and waits until its first fetch is published and its webhook
// port accepts connections.
func startWebhookAgent(t *testing.T, repoURL string, more ...string) *webhookAgent {
	t.Helper()
	dir := t.TempDir()
	a := &webhookAgent{hookAddr: serverbin.FreeAddr(t), secret: []byte("hook-secret")}
	a.hookURL = "http://" + a.hookAddr + "/hooks"
	secretFile := filepath.Join(dir, "token")
	if err := os.WriteFile(secretFile, a.secret, 0o600); err != nil {
		t.Fatal(err)
	}
	args := append([]string{"fetch", "--url", repoURL, "--ref", "main", "--interval", "1h", "--dir", filepath.Join(dir, "work"),
		"--webhook-listen", a.hookAddr, "--webhook-secret-file", secretFile}, more...)
	a.agentProcess = startAgent(t, serverbin.ContentAgent(t), nil, args...)
	waitPublished(t, a.url)
	deadline := time.Now().Add(waitLimit)
	for {
		c, err := net.DialTimeout("tcp", a.hookAddr, time.Second)
		if err == nil {
			_ = c.Close()
			return a
		}
		if time.Now().After(deadline) {
			t.Fatalf("the webhook port %s does not accept connections: %v", a.hookAddr, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// counter reads one series of the agent's metrics as a number (0 when absent).
func (a *webhookAgent) counter(t *testing.T, series string) float64 {
	t.Helper()
	_, page := get(t, a.url+"/metrics")
	v := metric(page, series)
	if v == "" {
		return 0
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil {
		t.Fatalf("%s = %q: %v", series, v, err)
	}
	return f
}

// waitCommit long-polls /revision until the agent publishes commit.
func (a *webhookAgent) waitCommit(t *testing.T, commit plumbing.Hash) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		rev := waitPublished(t, a.url)
		if rev.Commit == commit.String() {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the agent publishes %s, want %s", rev.Commit, commit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// The flood's connections, each a way to hold a receiver without ever being authenticated: a header block left
// unfinished; a complete head announcing 1 MiB of body (gitwebhook's limit) that never comes; the same with all
// of the body but its last byte.
const (
	floodHeads        = 50
	floodNoBody       = 50
	floodAlmostBodies = 200
)

// floodLimit bounds each flood connection on the client's side: a connection the receiver has not closed by
// then counts as held forever. The receiver's own bound (--webhook-timeout in the test) is 2 s.
const floodLimit = time.Minute

// TestWebhookFloodIsBounded: a few hundred stalled deliveries neither grow the fetcher's memory past a bound
// (VmHWM, its peak RSS) nor stop its controller port, and every one of them is closed by the receiver. An
// authentic delivery sent during the flood is answered (at once or once a connection frees), and its push is
// fetched: by itself, or, refused 503 at the cap, by its redelivery once the flood is over.
func TestWebhookFloodIsBounded(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	c1 := repo.Commit("v1", map[string]gts.File{"index.html": gts.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)
	agent := startWebhookAgent(t, repo.URL, "--webhook-timeout", "2s")
	before := statusKiB(t, agent.cmd.Process.Pid, "VmRSS")

	head := "POST /hooks HTTP/1.1\r\nHost: fetcher\r\nX-GitHub-Event: push\r\nX-Hub-Signature-256: sha256=" + strings.Repeat("0", 64) + "\r\n"
	full := head + "Content-Type: application/json\r\nContent-Length: " + strconv.Itoa(gitwebhook.DefaultMaxBytes) + "\r\n\r\n"
	almost := []byte(full + strings.Repeat("x", gitwebhook.DefaultMaxBytes-1))
	var dialed, done sync.WaitGroup
	var dialErrs, held atomic.Int64
	stalled := func(payload []byte) {
		defer done.Done()
		c, err := net.DialTimeout("tcp", agent.hookAddr, floodLimit)
		dialed.Done()
		if err != nil {
			dialErrs.Add(1)
			return
		}
		defer c.Close()
		_ = c.SetDeadline(time.Now().Add(floodLimit))
		// A write fails when the receiver refuses first and closes: that is an answer too.
		if _, err := c.Write(payload); err != nil && isTimeout(err) {
			held.Add(1)
			return
		}
		if _, err := io.Copy(io.Discard, c); isTimeout(err) {
			held.Add(1)
		}
	}
	for _, kind := range []struct {
		n       int
		payload []byte
	}{{floodHeads, []byte(head)}, {floodNoBody, []byte(full)}, {floodAlmostBodies, almost}} {
		for range kind.n {
			dialed.Add(1)
			done.Add(1)
			go stalled(kind.payload)
		}
	}
	dialed.Wait()
	if n := dialErrs.Load(); n > 0 {
		t.Fatalf("%d flood connections were not even established", n)
	}

	// The controller's port answers during the flood.
	if code, body := get(t, agent.url+"/revision"); code != http.StatusOK || !strings.Contains(body, c1.String()) {
		t.Errorf("/revision during the flood: %d %s", code, body)
	}
	c2 := repo.Commit("v2", map[string]gts.File{"index.html": gts.Regular("v2\n")}, c1)
	repo.Push("refs/heads/main", c2, false)
	during := postGitHubPushFull(t, agent.hookURL, repo.URL, c2.String(), agent.secret)
	if during.code != http.StatusOK && (during.code != http.StatusServiceUnavailable || during.retryAfter != "2") {
		t.Errorf("the authentic webhook during the flood: %d (Retry-After %q), want 200, or 503 with Retry-After 2", during.code, during.retryAfter)
	}

	t.Logf("the authentic webhook during the flood: %d (Retry-After %q)", during.code, during.retryAfter)
	done.Wait()
	hwm := statusKiB(t, agent.cmd.Process.Pid, "VmHWM")
	if n := held.Load(); n > 0 {
		t.Errorf("%d of %d stalled connections were still open after %s", n, floodHeads+floodNoBody+floodAlmostBodies, floodLimit)
	}
	// What the receiver may hold (webhook.go): WebhookMaxInFlight bodies of 1 MiB, each read by io.ReadAll
	// (whose growth leaves up to about as much again as garbage), and WebhookMaxConns connections of at most a
	// header block (16 KiB + net/http's 4 KiB) plus buffers and a goroutine; doubled for the garbage collector's
	// target (GOGC=100), plus 16 MiB for the runtime's own. Unbounded, the 200 almost-bodies alone are 200 MiB.
	bound := int64(2*(contentagent.WebhookMaxInFlight*2*gitwebhook.DefaultMaxBytes+contentagent.WebhookMaxConns*32<<10))>>10 + 16<<10
	t.Logf("fetcher RSS %d KiB before the flood, peak %d KiB (growth %d KiB, bound %d KiB)", before, hwm, hwm-before, bound)
	if hwm-before > bound {
		t.Errorf("the fetcher's peak RSS grew by %d KiB under the flood (%d → %d KiB), over the bound of %d KiB", hwm-before, before, hwm, bound)
	}

	if during.code != http.StatusOK {
		// The forge's redelivery, once the flood is over.
		if again := postGitHubPushFull(t, agent.hookURL, repo.URL, c2.String(), agent.secret); again.code != http.StatusOK {
			t.Fatalf("the redelivery after the flood: %d, want 200", again.code)
		}
	}
	agent.waitCommit(t, c2)
	if n := agent.counter(t, `hyperstatic_git_fetch_triggers_total{trigger="webhook"}`); n != 1 {
		t.Errorf("webhook fetches %v, want 1", n)
	}
	for _, result := range []string{"Overloaded", "Timeout"} {
		if n := agent.counter(t, `hyperstatic_git_webhook_requests_total{result="`+result+`"}`); n < 1 {
			t.Errorf("webhook requests refused %s: %v, want at least one", result, n)
		}
	}
}

// TestWebhookBurstFetchesTwice: authentic webhooks, each for a new push, sent one after the other inside the
// minimum gap (15 s here; the burst takes milliseconds) start one fetch at once and one at the gap's end, which
// publishes the newest push. Each delivery after the first is sent only once the previous one is accounted for
// (a fetch started or a coalesced count), so a receiver that fetched for every webhook would show it.
func TestWebhookBurstFetchesTwice(t *testing.T) {
	const burst = 10
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	head := repo.Commit("v0", map[string]gts.File{"index.html": gts.Regular("v0\n")})
	repo.Push("refs/heads/main", head, false)
	agent := startWebhookAgent(t, repo.URL, "--webhook-min-gap", "15s")

	start := time.Now()
	for i := 1; i <= burst; i++ {
		head = repo.Commit(fmt.Sprint("v", i), map[string]gts.File{"index.html": gts.Regular(fmt.Sprint("v", i, "\n"))}, head)
		repo.Push("refs/heads/main", head, false)
		if code := postGitHubPush(t, agent.hookURL, repo.URL, "refs/heads/main", head.String(), agent.secret); code != http.StatusOK {
			t.Fatalf("webhook %d: status %d", i, code)
		}
		if i == 1 {
			agent.waitCommit(t, head) // the first fetches at once; the gap starts when it ends
			continue
		}
		deadline := time.Now().Add(waitLimit)
		for agent.counter(t, `hyperstatic_git_fetch_triggers_total{trigger="webhook"}`)+
			agent.counter(t, "hyperstatic_git_webhook_coalesced_total") < float64(i) {
			if time.Now().After(deadline) {
				t.Fatalf("webhook %d is neither fetched nor coalesced after %s", i, waitLimit)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	t.Logf("%d webhooks sent in %s", burst, time.Since(start).Round(time.Millisecond))
	agent.waitCommit(t, head) // the newest push is fetched, at the gap's end
	if n := agent.counter(t, `hyperstatic_git_fetch_triggers_total{trigger="webhook"}`); n != 2 {
		t.Errorf("%d webhooks started %v fetches, want 2 (one at once, one at the gap's end)", burst, n)
	}
	if n := agent.counter(t, "hyperstatic_git_webhook_coalesced_total"); n != burst-1 {
		t.Errorf("coalesced webhooks %v, want %d", n, burst-1)
	}
}

// TestWebhookHeaderLimit: a header block over the limit is refused 431 by the webhook port; one of a few KiB (a
// forge sends about 1) still reaches the receiver, which refuses its missing signature.
func TestWebhookHeaderLimit(t *testing.T) {
	srv, base := gts.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	c1 := repo.Commit("v1", map[string]gts.File{"index.html": gts.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)
	agent := startWebhookAgent(t, repo.URL)
	for _, tc := range []struct {
		pad  int
		want int
	}{
		{8 << 10, http.StatusUnauthorized},
		{64 << 10, http.StatusRequestHeaderFieldsTooLarge},
	} {
		req, err := http.NewRequest(http.MethodPost, agent.hookURL, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("X-GitHub-Event", "push")
		req.Header.Set("X-Pad", strings.Repeat("a", tc.pad))
		resp, err := (&http.Client{Timeout: waitLimit}).Do(req)
		if err != nil {
			t.Fatalf("%d bytes of header: %v", tc.pad, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%d bytes of header: %s, want %d", tc.pad, resp.Status, tc.want)
		}
	}
}

// hookAnswer is a webhook delivery's status and Retry-After.
type hookAnswer struct {
	code       int
	retryAfter string
}

// postGitHubPushFull delivers a signed GitHub push of refs/heads/main like postGitHubPush, with a client bounded
// by waitLimit (the delivery may wait for a connection slot), and returns the Retry-After too.
func postGitHubPushFull(t *testing.T, hookURL, repoURL, after string, secret []byte) hookAnswer {
	t.Helper()
	payload := fmt.Sprintf(`{"ref":"refs/heads/main","after":%q,"repository":{"clone_url":%q}}`, after, repoURL)
	req, err := http.NewRequest(http.MethodPost, hookURL, strings.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-Hub-Signature-256", "sha256="+hmacHex(secret, []byte(payload)))
	resp, err := (&http.Client{Timeout: waitLimit}).Do(req)
	if err != nil {
		t.Fatalf("webhook: %v", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return hookAnswer{resp.StatusCode, resp.Header.Get("Retry-After")}
}

func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
