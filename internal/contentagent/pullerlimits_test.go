package contentagent_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gitsource"
)

// craftedBundle is a tar no fetcher would write (it passes no tree check), with its digest.
func craftedBundle(t *testing.T, hdrs []*tar.Header) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hdrs {
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), hex.EncodeToString(sum[:])
}

// TestPullerRefusesABundlePastTheTreeLimits: a hostile fetcher's bundle of more entries than --max-entries (empty
// files, which cost no content bytes), or with a path deeper than --max-depth, is refused naming the limit; the
// last good tree keeps serving and nothing past the limit stays on disk.
func TestPullerRefusesABundlePastTheTreeLimits(t *testing.T) {
	const commitA, commitB = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
	const maxEntries = 1000
	var many []*tar.Header
	for i := range 5 * maxEntries {
		many = append(many, &tar.Header{Name: fmt.Sprintf("f%05d", i), Typeflag: tar.TypeReg, Mode: 0o644})
	}
	deepName := strings.Repeat("d/", gitsource.DefaultMaxDepth) + "page.html"
	var deep []*tar.Header
	for i := 1; i <= gitsource.DefaultMaxDepth; i++ {
		deep = append(deep, &tar.Header{Name: strings.Repeat("d/", i), Typeflag: tar.TypeDir, Mode: 0o755})
	}
	deep = append(deep, &tar.Header{Name: deepName, Typeflag: tar.TypeReg, Mode: 0o644})

	goodA, digestA := bundleOf(t, "A\n")
	hf := &hostileFetcher{}
	hf.set(revisionJSON(t, digestA, commitA), map[string][]byte{digestA: goodA})
	srv := httptest.NewServer(hf)
	t.Cleanup(srv.Close)
	dir := t.TempDir()
	pod := startPullerIn(t, srv.URL, dir, func(p *contentagent.Puller) { p.MaxEntries = maxEntries })
	pod.waitCommit(t, commitA)

	for i, c := range []struct {
		name string
		hdrs []*tar.Header
		says string
	}{
		{"5,000 empty files", many, "limit of 1000 entries (files, directories and links) at f01000"},
		{"65 levels deep", deep, "depth limit of 64 directories at " + deepName},
	} {
		bundle, digest := craftedBundle(t, c.hdrs)
		hf.set(revisionJSON(t, digest, commitB), map[string][]byte{digest: bundle})
		if i > 0 {
			pod.backoff.fire <- time.Now() // the puller waits out its backoff from the previous case
		}
		select {
		case <-pod.backoff.asked: // the refusal: the puller backs off
		case <-time.After(waitLimit):
			rev, _ := pod.p.Revision()
			t.Fatalf("%s: no refusal; the puller reports %+v", c.name, rev)
		}
		rev, _ := pod.p.Revision()
		if cur, _ := pod.p.Store.Current(); cur != commitA || pod.served(t, "index.html") != "A\n" {
			t.Fatalf("%s: serves %s, want %s still", c.name, cur, commitA)
		}
		if rev.LastError == nil || rev.LastError.Reason != string(gitsource.TooLarge) || !strings.Contains(rev.LastError.Message, c.says) {
			t.Fatalf("%s: last error %+v, want TooLarge saying %q", c.name, rev.LastError, c.says)
		}
		if stages, _ := filepath.Glob(filepath.Join(dir, ".stage-*")); len(stages) != 0 {
			t.Fatalf("%s: the refused bundle's tree was left on disk: %v", c.name, stages)
		}
		if _, err := os.Stat(filepath.Join(dir, commitB)); err == nil {
			t.Fatalf("%s: the refused bundle was published as %s", c.name, commitB)
		}
	}
}
