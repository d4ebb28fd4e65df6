package contentagent_test

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

// hostileBundle is a tar whose one file is named name, and its real digest.
func hostileBundle(t *testing.T, name string) ([]byte, string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: 4}); err != nil {
		t.Fatal(err)
	}
	_, _ = tw.Write([]byte("evil"))
	_ = tw.Close()
	sum := sha256.Sum256(buf.Bytes())
	return buf.Bytes(), hex.EncodeToString(sum[:])
}

// A pool fetcher that lies (a bundle whose bytes are not its digest, a bundle naming a file outside the tree, a
// digest that is a path) gets nothing installed, nothing written outside the site's directory, and a reported
// failure; a later honest answer installs.
func TestPoolPullerRefusesHostileAnswers(t *testing.T) {
	escaping, escapingDigest := hostileBundle(t, "../../escape.html")
	honest, honestDigest := hostileBundle(t, "index.html")
	var mu sync.Mutex
	var sites []contentagent.PoolSite
	version := 0
	bundles := map[string][]byte{escapingDigest: escaping, honestDigest: honest,
		strings.Repeat("ab", 32): honest} // served under a digest that is not its own
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		if r.URL.Path == "/sites" {
			w.Header().Set("ETag", fmt.Sprintf(`"v%d"`, version))
			_ = json.NewEncoder(w).Encode(contentagent.PoolSites{Sites: sites})
			return
		}
		if b, ok := bundles[strings.TrimPrefix(r.URL.Path, "/bundles/")]; ok {
			_, _ = w.Write(b)
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(fake.Close)
	set := func(s ...contentagent.PoolSite) {
		mu.Lock()
		sites = s
		version++
		mu.Unlock()
	}
	index := t.TempDir()
	writeIndex(t, index, []poolindex.Site{poolGitSite("ns.a", "https://git.example/a.git", "")})

	set(contentagent.PoolSite{ID: "ns.a", Bundle: strings.Repeat("ab", 32), Commit: "c1"})
	pod := startPoolPuller(t, index, fake.URL)
	failing := func(want string) {
		t.Helper()
		eventually(t, func() string { return "pod sites " + strings.Join(siteErrors(pod), ";") }, func() bool {
			e, _ := siteOf(pod.p.Sites(), "ns.a")
			return strings.Contains(e.Error, want)
		})
		if _, err := os.Lstat(filepath.Join(pod.dir, "ns.a", "current")); !os.IsNotExist(err) {
			t.Errorf("something was installed (%v)", err)
		}
	}
	failing("SHA-256")

	set(contentagent.PoolSite{ID: "ns.a", Bundle: escapingDigest, Commit: "c2"})
	failing("escape.html")
	for _, p := range []string{filepath.Join(pod.dir, "escape.html"), filepath.Join(filepath.Dir(pod.dir), "escape.html")} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s was written (%v)", p, err)
		}
	}

	set(contentagent.PoolSite{ID: "ns.a", Bundle: "../../../../etc/passwd-padding-to-sixty-four-characters-long-xx", Commit: "c3"})
	set(contentagent.PoolSite{ID: "ns.a", Bundle: honestDigest, Commit: "c4"}, contentagent.PoolSite{ID: "../other", Bundle: honestDigest})
	pod.installed(t, "ns.a", honestDigest)
	if got := pod.tree(t, "ns.a")["index.html"]; got != "evil" {
		t.Errorf("installed %q", got)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(pod.dir), "other")); !os.IsNotExist(err) {
		t.Errorf("a site not in the index was installed outside the directory (%v)", err)
	}
}

func siteErrors(pod *poolPod) []string {
	var out []string
	for _, s := range pod.p.Sites().Sites {
		out = append(out, s.ID+": "+s.Error)
	}
	return out
}
