package contentagent_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
)

// fakeAdmin is the server's admin port as the puller reads it: /metrics with the reload counter the test sets,
// or a failure. The counter's meaning (a reload of the new tree) is the server's contract, tested there.
type fakeAdmin struct {
	mu      sync.Mutex
	page    string
	failing bool
}

func (a *fakeAdmin) set(success, failure int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failing = false
	a.page = "# HELP hyperstatic_reloads_total Reloads by result.\n# TYPE hyperstatic_reloads_total counter\n" +
		fmt.Sprintf("hyperstatic_reloads_total{result=\"success\"} %d\n", success)
	if failure > 0 {
		a.page += fmt.Sprintf("hyperstatic_reloads_total{result=\"failure\"} %d\n", failure)
	}
	a.page += "hyperstatic_requests_total 12345\n"
}

func (a *fakeAdmin) fail() {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.failing = true
}

func (a *fakeAdmin) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if r.URL.Path != "/metrics" || a.failing {
		http.Error(w, "unavailable", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte(a.page))
}

// reloadClock is the puller's clock here: every timer it asks for is handed to the test, the reload bound on
// bounds and any other (the counter's polling) on polls, and fires only when the test sends on it.
type reloadClock struct {
	bound         time.Duration
	bounds, polls chan chan time.Time
}

func (c *reloadClock) after(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	if d == c.bound {
		c.bounds <- ch
	} else {
		c.polls <- ch
	}
	return ch
}

// next returns the next timer the puller asks for on ch: the puller has then reached that point.
func next(t *testing.T, ch chan chan time.Time, what string) chan time.Time {
	t.Helper()
	select {
	case timer := <-ch:
		return timer
	case <-time.After(waitLimit):
		t.Fatalf("the puller never asked for %s", what)
		return nil
	}
}

// TestPullerFlipsOncePerServerReload: with --server-admin, after each flip the puller waits for the server's
// reload counter (success and failure summed) to pass its value before the flip, or for the bound, before it
// flips again; trees older than the replaced one are removed only then; a counter it could not read before the
// flip leaves the bound alone to end the wait. Every step is taken while the puller is blocked on a timer only
// the test fires, so what it did not do yet is asserted, not raced.
func TestPullerFlipsOncePerServerReload(t *testing.T) {
	const bound = 7 * time.Second
	versions := []string{"a", "b", "c", "d", "e", "f"}
	bundles, digests := map[string][]byte{}, map[string]string{}
	for _, v := range versions {
		b, d := bundleOf(t, v+"\n")
		bundles[d], digests[v] = b, d
	}
	commit := func(v string) string { return strings.Repeat(v, 40) }
	hf := &hostileFetcher{}
	serve := func(v string) { hf.set(revisionJSON(t, digests[v], commit(v)), bundles) }
	serve("a")
	fetcher := httptest.NewServer(hf)
	t.Cleanup(fetcher.Close)
	admin := &fakeAdmin{}
	admin.set(3, 0)
	adminSrv := httptest.NewServer(admin)
	t.Cleanup(adminSrv.Close)
	clock := &reloadClock{bound: bound, bounds: make(chan chan time.Time, 100), polls: make(chan chan time.Time, 100)}
	pod := startPullerIn(t, fetcher.URL, t.TempDir(), func(p *contentagent.Puller) {
		p.ServerAdmin = adminSrv.URL + "/"
		p.ReloadWait = bound
		p.After = clock.after
	})
	serving := func(v string) {
		t.Helper()
		cur, _ := pod.p.Store.Current()
		rev, _ := pod.p.Revision()
		if cur != commit(v) || rev.Commit != commit(v) || pod.served(t, "index.html") != v+"\n" {
			t.Fatalf("serves %.1s (reports %.1s), want %s", cur, rev.Commit, v)
		}
	}
	trees := func(want string) {
		t.Helper()
		var got string
		for _, v := range versions {
			if _, err := os.Stat(filepath.Join(pod.dir, commit(v))); err == nil {
				got += v
			}
		}
		if got != want {
			t.Fatalf("trees on disk: %q, want %q", got, want)
		}
	}

	// A flips in; the counter reads 3 as before the flip, so the puller polls it again.
	next(t, clock.bounds, "A's reload bound")
	poll := next(t, clock.polls, "a poll of the counter")
	serving("a")
	serve("b") // ready, but the server has not reloaded A yet
	poll <- time.Now()
	poll = next(t, clock.polls, "another poll (no reload yet)")
	serving("a")

	// The server reloads: B is taken at once.
	admin.set(4, 0)
	poll <- time.Now()
	next(t, clock.bounds, "B's reload bound")
	poll = next(t, clock.polls, "a poll after B")
	serving("b")
	trees("ab")

	// A failed reload counts as a reload: C is taken. A, older than the replaced B, stays until C's reload.
	serve("c")
	admin.set(4, 1)
	poll <- time.Now()
	cBound := next(t, clock.bounds, "C's reload bound")
	next(t, clock.polls, "a poll after C")
	serving("c")
	trees("abc")

	// No reload of C, the bound passes: A goes, B (replaced by C) stays, and D is taken.
	serve("d")
	cBound <- time.Now()
	dBound := next(t, clock.bounds, "D's reload bound")
	next(t, clock.polls, "a poll after D")
	serving("d")
	trees("bcd")

	// The counter cannot be read before E's flip (admin down): only the bound ends E's wait.
	admin.fail()
	serve("e")
	dBound <- time.Now()
	eBound := next(t, clock.bounds, "E's reload bound")
	serving("e")
	trees("cde")
	serve("f")
	eBound <- time.Now()
	next(t, clock.bounds, "F's reload bound")
	serving("f")
	trees("def")
	if n := len(clock.polls); n != 0 {
		t.Errorf("the puller polled the counter %d times in waits whose starting value it could not read", n)
	}
}
