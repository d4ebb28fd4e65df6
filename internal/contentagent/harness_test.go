package contentagent_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// waitLimit only bounds a test that would otherwise hang; no assertion depends on it.
const waitLimit = 2 * time.Minute

// interval is the fetcher's interval in these tests: its timer is the test's ticks channel, so an interval
// fetch happens exactly when the test sends a tick, and never on its own.
const interval = time.Hour

// webhookGap is the fetcher's WebhookMinGap in the tests that set it: its timer is the test's gaps channel, so a
// gap ends exactly when the test sends on it.
const webhookGap = 7 * time.Minute

// syncEvent is one fetch attempt as the fetcher's OnSync reports it.
type syncEvent struct {
	trigger string
	rev     contentagent.Revision
}

// runningFetcher is a Fetcher serving on real loopback ports.
type runningFetcher struct {
	f        *contentagent.Fetcher
	url      string // http://addr: /revision, /bundles/
	hookURL  string
	addr     string
	hookAddr string
	ticks    chan time.Time
	// gaps ends the minimum gap between webhook fetches (with WebhookMinGap set to webhookGap).
	gaps chan time.Time
	// timeouts ends the long polls waiting: one send ends one.
	timeouts chan time.Time
	events   chan syncEvent
	stop     func()
}

// startFetcher runs a fetcher over dir on addr and hookAddr ("127.0.0.1:0" for fresh ports), after configure
// has changed it; stop closes its listeners and connections (as a killed process would) and ends its loop.
func startFetcher(t testing.TB, src gitsource.Source, check func(string) error, dir, addr, hookAddr string, secret []byte,
	configure ...func(*contentagent.Fetcher)) *runningFetcher {
	t.Helper()
	rf := &runningFetcher{ticks: make(chan time.Time), gaps: make(chan time.Time), timeouts: make(chan time.Time), events: make(chan syncEvent, 100)}
	rf.f = &contentagent.Fetcher{
		Source: src,
		Store: &gitsource.Store{Dir: filepath.Join(dir, "trees"), Check: check,
			Objects: &gitsource.Objects{Dir: filepath.Join(dir, "objects")}},
		BundleDir:     filepath.Join(dir, "bundles"),
		Interval:      interval,
		WebhookSecret: secret,
		StatusFile:    filepath.Join(dir, "status.json"),
		After: func(d time.Duration) <-chan time.Time {
			switch d {
			case interval:
				return rf.ticks
			case webhookGap:
				return rf.gaps
			}
			return rf.timeouts
		},
		OnSync: func(trigger string, rev contentagent.Revision) { rf.events <- syncEvent{trigger, rev} },
	}
	for _, c := range configure {
		c(rf.f)
	}
	if err := rf.f.Init(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	main, mainAddr := serveOn(t, addr, rf.f.Handler())
	hook, hookBound := serveOn(t, hookAddr, rf.f.WebhookHandler())
	rf.addr, rf.hookAddr = mainAddr, hookBound
	rf.url, rf.hookURL = "http://"+mainAddr, "http://"+hookBound+"/hooks"
	done := make(chan struct{})
	go func() { rf.f.Run(ctx); close(done) }()
	stopped := false
	rf.stop = func() {
		if stopped {
			return
		}
		stopped = true
		_ = main.Close()
		_ = hook.Close()
		cancel()
		<-done
	}
	t.Cleanup(rf.stop)
	return rf
}

// nextSync returns the fetcher's next attempt.
func (rf *runningFetcher) nextSync(t testing.TB) syncEvent {
	t.Helper()
	select {
	case e := <-rf.events:
		return e
	case <-time.After(waitLimit):
		t.Fatal("no fetch attempt")
		return syncEvent{}
	}
}

func serveOn(t testing.TB, addr string, h http.Handler) (*http.Server, string) {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(l) }()
	return srv, l.Addr().String()
}

// fakeBackoff is a puller's clock: each backoff the puller asks for is reported on asked, and ends only when
// the test sends on fire. A test sees that a puller failed, and decides when it retries.
type fakeBackoff struct {
	asked chan time.Duration
	fire  chan time.Time
}

func newFakeBackoff() *fakeBackoff {
	return &fakeBackoff{asked: make(chan time.Duration, 100), fire: make(chan time.Time)}
}

func (b *fakeBackoff) after(d time.Duration) <-chan time.Time {
	b.asked <- d
	return b.fire
}

// runningPuller is a Puller following a fetcher into its own directory, as one server pod would.
type runningPuller struct {
	p       *contentagent.Puller
	backoff *fakeBackoff
	dir     string
	stop    func()
}

func startPuller(t testing.TB, fetcherURL string) *runningPuller {
	t.Helper()
	return startPullerIn(t, fetcherURL, t.TempDir())
}

// startPullerIn runs a puller over dir, which may hold what an earlier puller served (a restarted container).
func startPullerIn(t testing.TB, fetcherURL, dir string, configure ...func(*contentagent.Puller)) *runningPuller {
	t.Helper()
	rp := &runningPuller{backoff: newFakeBackoff(), dir: dir}
	rp.p = &contentagent.Puller{
		FetcherURL: fetcherURL,
		Store:      &gitsource.Store{Dir: rp.dir},
		After:      rp.backoff.after,
	}
	for _, c := range configure {
		c(rp.p)
	}
	if err := rp.p.Init(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { rp.p.Run(ctx); close(done) }()
	rp.stop = sync.OnceFunc(func() { cancel(); <-done })
	t.Cleanup(rp.stop)
	return rp
}

// waitCommit waits until the puller serves commit and returns the revision it reports.
func (rp *runningPuller) waitCommit(t testing.TB, commit string) contentagent.Revision {
	t.Helper()
	timeout := time.After(waitLimit)
	for {
		rev, changed := rp.p.Revision()
		if rev.Commit == commit && rev.Digest != "" {
			return rev
		}
		select {
		case <-changed:
		case <-timeout:
			t.Fatalf("the puller serves %s, want %s", rev.Commit, commit)
		}
	}
}

// waitBackoff waits until the puller (pod i) saw the fetcher go and waits to retry on its backoff.
func (rp *runningPuller) waitBackoff(t testing.TB, i int) {
	t.Helper()
	select {
	case <-rp.backoff.asked:
	case <-time.After(waitLimit):
		t.Fatalf("pod %d did not notice the fetcher stopped", i)
	}
}

// served reads a file of the tree the puller's directory serves now (through current, as the server would).
func (rp *runningPuller) served(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(rp.p.Store.Served(), name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// postGitHubPush delivers a GitHub push webhook for repoURL's ref, signed with secret, and returns the status.
func postGitHubPush(t testing.TB, hookURL, repoURL, ref, after string, secret []byte) int {
	t.Helper()
	body := map[string]any{"ref": ref, "after": after, "repository": map[string]string{"clone_url": repoURL}}
	return postHook(t, hookURL, body, func(h http.Header, payload []byte) {
		h.Set("X-GitHub-Event", "push")
		h.Set("X-Hub-Signature-256", "sha256="+hmacHex(secret, payload))
	})
}

// postForgePush delivers a push of refs/heads/main as Gitea or GitLab sends it.
func postForgePush(t testing.TB, forge, hookURL, repoURL, after string, secret []byte) int {
	t.Helper()
	if forge == "gitlab" {
		body := map[string]any{"object_kind": "push", "ref": "refs/heads/main", "after": after,
			"project": map[string]string{"git_http_url": repoURL}}
		return postHook(t, hookURL, body, func(h http.Header, _ []byte) {
			h.Set("X-Gitlab-Event", "Push Hook")
			h.Set("X-Gitlab-Token", string(secret))
		})
	}
	body := map[string]any{"ref": "refs/heads/main", "after": after, "repository": map[string]string{"clone_url": repoURL}}
	return postHook(t, hookURL, body, func(h http.Header, payload []byte) {
		h.Set("X-Gitea-Event", "push")
		h.Set("X-Gitea-Signature", hmacHex(secret, payload))
	})
}

func hmacHex(secret, payload []byte) string {
	mac := hmac.New(sha256.New, secret)
	mac.Write(payload)
	return hex.EncodeToString(mac.Sum(nil))
}

// postHook POSTs body as JSON with the headers sign sets, and returns the status.
func postHook(t testing.TB, hookURL string, body any, sign func(http.Header, []byte)) int {
	t.Helper()
	payload, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodPost, hookURL, bytes.NewReader(payload))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	sign(req.Header, payload)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// get returns the status and body of GET url.
func get(t testing.TB, url string) (int, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil && !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// metric returns the value of one series line ("name{labels}") of a /metrics page, "" when absent.
func metric(page, series string) string {
	for _, line := range strings.Split(page, "\n") {
		if v, ok := strings.CutPrefix(line, series+" "); ok {
			return v
		}
	}
	return ""
}

// secretGeneration numbers the directories writeSecretVolume makes (kubelet names them by time).
var secretGeneration atomic.Int64

// writeSecretVolume writes data into dir the way kubelet updates a mounted Secret: the keys go into a new hidden
// directory, the ..data link is flipped to it with one rename, each key is a link through ..data
// (KEY -> ..data/KEY), keys no longer in data lose their link, and the previous directory is removed.
func writeSecretVolume(t testing.TB, dir string, data map[string]string) {
	t.Helper()
	gen := filepath.Join(dir, fmt.Sprintf("..gen-%d", secretGeneration.Add(1))) // inside the volume, as kubelet's
	if err := os.Mkdir(gen, 0o755); err != nil {
		t.Fatal(err)
	}
	for k, v := range data {
		if err := os.WriteFile(filepath.Join(gen, k), []byte(v), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	dataLink := filepath.Join(dir, "..data")
	previous, _ := os.Readlink(dataLink)
	tmp := filepath.Join(dir, "..data_tmp")
	if err := os.Symlink(filepath.Base(gen), tmp); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, dataLink); err != nil {
		t.Fatal(err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if _, kept := data[e.Name()]; !kept && !strings.HasPrefix(e.Name(), "..") {
			if err := os.Remove(filepath.Join(dir, e.Name())); err != nil {
				t.Fatal(err)
			}
		}
	}
	for k := range data {
		if _, err := os.Lstat(filepath.Join(dir, k)); errors.Is(err, os.ErrNotExist) {
			if err := os.Symlink(filepath.Join("..data", k), filepath.Join(dir, k)); err != nil {
				t.Fatal(err)
			}
		}
	}
	if previous != "" {
		if err := os.RemoveAll(filepath.Join(dir, previous)); err != nil {
			t.Fatal(err)
		}
	}
}
