package contentagent_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// hostileFetcher answers /revision and /bundles/ with whatever the test sets (bundles by the path after
// /bundles/: "<digest>" or "<digest>/files"): a fetcher that is broken, truncated or lying, which a real one
// cannot be made to be.
type hostileFetcher struct {
	mu       sync.Mutex
	revision []byte
	bundles  map[string][]byte
	changed  chan struct{}
}

func (h *hostileFetcher) set(rev []byte, bundles map[string][]byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.revision, h.bundles = rev, bundles
	if h.changed != nil {
		close(h.changed)
	}
	h.changed = make(chan struct{})
}

func (h *hostileFetcher) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h.mu.Lock()
	if r.URL.Path == "/revision" {
		rev, changed := h.revision, h.changed
		h.mu.Unlock()
		// A long poll, so the puller does not spin: a caller that has the digest and commit waits for the next set.
		q := r.URL.Query()
		if wait := q.Get("wait"); wait != "" && bytes.Contains(rev, []byte(wait)) && bytes.Contains(rev, []byte(q.Get("commit"))) {
			select {
			case <-changed:
			case <-r.Context().Done():
				return
			}
			h.mu.Lock()
			rev = h.revision
			h.mu.Unlock()
		}
		_, _ = w.Write(rev)
		return
	}
	defer h.mu.Unlock()
	b, ok := h.bundles[strings.TrimPrefix(r.URL.Path, "/bundles/")]
	if !ok {
		http.NotFound(w, r)
		return
	}
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(b)) // ranges as the fetcher answers them
}

// bundleOf returns the bundle of a one-file tree and its digest.
func bundleOf(t *testing.T, page string) ([]byte, string) {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "index.html"), []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	digest, err := gitsource.WriteBundle(&buf, dir)
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), digest
}

func revisionJSON(t *testing.T, digest, commit string) []byte {
	t.Helper()
	data, err := json.Marshal(contentagent.Revision{Digest: digest, Commit: commit})
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestPullerKeepsTheLastGoodTree: a bundle whose bytes do not match its digest, a truncated one, one over the
// size limit and an oversized /revision each leave the served tree as it was, report why, and back off.
func TestPullerKeepsTheLastGoodTree(t *testing.T) {
	const commitA, commitB = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	goodA, digestA := bundleOf(t, "A\n")
	goodB, digestB := bundleOf(t, strings.Repeat("B", 4096))
	hf := &hostileFetcher{}
	hf.set(revisionJSON(t, digestA, commitA), map[string][]byte{digestA: goodA})
	srv := httptest.NewServer(hf)
	t.Cleanup(srv.Close)

	// A's file fits the limit, B's does not.
	pod := startPullerIn(t, srv.URL, t.TempDir(), func(p *contentagent.Puller) { p.MaxBytes = 1024 })
	pod.waitCommit(t, commitA)

	goodSmall, digestSmall := bundleOf(t, "B\n")
	cases := map[string]struct {
		digest string
		bundle []byte
	}{
		"other bytes under the digest": {digestSmall, goodA},
		"altered end":                  {digestSmall, append(bytes.Clone(goodSmall[:len(goodSmall)-1]), 'x')},
		"cut short":                    {digestSmall, goodSmall[:len(goodSmall)/2]},
		"over the size":                {digestB, goodB},
		"missing":                      {digestSmall, nil},
	}
	retry := false
	for name, c := range cases {
		bundles := map[string][]byte{}
		if c.bundle != nil {
			bundles[c.digest] = c.bundle
		}
		hf.set(revisionJSON(t, c.digest, commitB), bundles)
		if retry {
			pod.backoff.fire <- time.Now() // the puller waits out its backoff from the previous case
		}
		retry = true
		<-pod.backoff.asked
		rev, _ := pod.p.Revision()
		if cur, _ := pod.p.Store.Current(); cur != commitA || pod.served(t, "index.html") != "A\n" || rev.LastError == nil {
			t.Errorf("%s: serves %s (%+v), want %s and the error", name, cur, rev, commitA)
		} else {
			t.Logf("%s: %s: %s", name, rev.LastError.Reason, rev.LastError.Message)
		}
	}
	hf.set(bytes.Repeat([]byte(" "), 512<<10), nil)
	pod.backoff.fire <- time.Now()
	<-pod.backoff.asked
	if rev, _ := pod.p.Revision(); rev.LastError == nil || !strings.Contains(rev.LastError.Message, "over") {
		t.Errorf("an oversized /revision: %+v, want it refused", rev)
	}
	// The next good bundle is taken: the failures left nothing behind.
	hf.set(revisionJSON(t, digestSmall, commitB), map[string][]byte{digestSmall: goodSmall})
	pod.backoff.fire <- time.Now()
	if rev := pod.waitCommit(t, commitB); rev.LastError != nil || pod.served(t, "index.html") != "B\n" {
		t.Errorf("after the failures: %+v serving %q, want B", rev, pod.served(t, "index.html"))
	}
}

// TestPullerHealthz: the puller's /healthz (the sidecar's startup probe, which holds the server container back)
// is 503 until a tree is served and 200 from then on; a restarted puller that finds its tree is 200 at once,
// even with the fetcher unreachable.
func TestPullerHealthz(t *testing.T) {
	const commitA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	hf := &hostileFetcher{}
	hf.set([]byte("{}"), nil) // nothing published yet: the long poll waits
	fetcher := httptest.NewServer(hf)
	t.Cleanup(fetcher.Close)
	dir := t.TempDir()
	pod := startPullerIn(t, fetcher.URL, dir)
	admin := httptest.NewServer(pod.p.Handler(time.Minute))
	t.Cleanup(admin.Close)
	if code, body := get(t, admin.URL+"/healthz"); code != http.StatusServiceUnavailable {
		t.Errorf("/healthz with nothing served: %d %q, want 503", code, body)
	}
	bundle, digest := bundleOf(t, "A\n")
	hf.set(revisionJSON(t, digest, commitA), map[string][]byte{digest: bundle})
	pod.waitCommit(t, commitA)
	if code, _ := get(t, admin.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz serving A: %d, want 200", code)
	}

	pod.stop()
	fetcher.Close()
	restarted := startPullerIn(t, fetcher.URL, dir)
	restartedAdmin := httptest.NewServer(restarted.p.Handler(time.Minute))
	t.Cleanup(restartedAdmin.Close)
	if code, _ := get(t, restartedAdmin.URL+"/healthz"); code != http.StatusOK {
		t.Errorf("/healthz of a restarted puller with its tree on disk: %d, want 200", code)
	}
}
