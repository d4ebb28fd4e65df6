package contract

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolread"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// The pool server's /sites, as the pool controller reads it (internal/poolread), against the real server reading
// an index the operator's own code renders (poolplacement.Entry, poolindex.Render):
//
//   - every site's entryRevision is poolindex.EntryRevision of its entry: the two sides name an entry alike;
//   - a hostname added to a site changes its entry's revision, and once the server reports the new revision the
//     new hostname answers (the revision is reported only with the host map that holds it), which is what lets
//     the pool controller's servedBy count a pod only when every hostname of the site is in effect;
//   - a refused tree's reason reaches poolread's Error (the field is "error" on both sides).
func TestContractPoolServerReportsTheOperatorsEntries(t *testing.T) {
	bin := serverbin.Require(t)
	dir := t.TempDir()
	pool := &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: "shared"}}
	pool.Spec.IndexShards = ptr.To[int32](2)
	pool.Spec.SiteLimits.MaxFiles = ptr.To[int64](2) // site "big" has three files: refused at load

	docs := poolSite("team-a", "docs", "docs.example.com")
	landing := poolSite("team-b", "landing")
	big := poolSite("team-b", "big")
	trees := map[*v1alpha1.StaticSite]map[string]string{
		docs:    {"index.html": "docs"},
		landing: {"index.html": "landing"},
		big:     {"index.html": "big", "a.html": "a", "b.html": "b"},
	}
	for s, files := range trees {
		writePoolTree(t, dir, poolindex.ID(s.Namespace, s.Name), files)
	}
	writeIndex(t, dir, pool, docs, landing, big)

	srv := serverbin.Start(t, bin, []string{"--sites", dir, "--listen", "x", "--admin-listen", "y"})
	reader := poolread.NewHTTPReader(srv.AdminPort(), 0)
	reader.Addr = func(*corev1.Pod, int) string { return srv.AdminAddr }
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pool-pod"}}
	ids := map[string]bool{}
	for s := range trees {
		ids[poolindex.ID(s.Namespace, s.Name)] = true
	}
	read := func() map[string]poolread.ServerSite {
		t.Helper()
		sites, err := reader.ServerSites(context.Background(), pod, func(id string) bool { return ids[id] })
		if err != nil {
			t.Fatal(err)
		}
		return sites
	}

	sites := read()
	for s := range trees {
		id, want := poolindex.ID(s.Namespace, s.Name), entryRevisionOf(t, pool, s)
		if got := sites[id]; got.EntryRevision != want || got.ContentRevision != treeRevision {
			t.Errorf("%s: /sites says entry %q content %q, the operator renders entry %q content %q",
				id, got.EntryRevision, got.ContentRevision, want, treeRevision)
		}
	}
	// Its first request loads it (answered 503 if the load takes longer than a request is held): asked until 200.
	testenv.Eventually(t, "docs.example.com served", func() error {
		if code, body := getByHost(t, srv, "docs.example.com"); code != http.StatusOK || body != "docs" {
			return fmt.Errorf("docs.example.com: %d %q", code, body)
		}
		return nil
	})
	if code, _ := getByHost(t, srv, "www.example.com"); code != http.StatusNotFound {
		t.Fatalf("www.example.com before it is docs': %d, want 404", code)
	}

	// A hostname added to docs (nothing else changes): a new entry revision; when the server reports it, the new
	// name answers at once.
	before := entryRevisionOf(t, pool, docs)
	docs.Status.Hostnames = append(docs.Status.Hostnames, "www.example.com")
	after := entryRevisionOf(t, pool, docs)
	if after == before {
		t.Fatal("a hostname added left the entry's revision unchanged")
	}
	writeIndex(t, dir, pool, docs, landing, big)
	docsID := poolindex.ID(docs.Namespace, docs.Name)
	testenv.Eventually(t, "the server reports docs' new entry", func() error {
		if got := read()[docsID].EntryRevision; got != after {
			return fmt.Errorf("entryRevision %q, want %q", got, after)
		}
		return nil
	})
	// docs is loaded and only its hosts changed (no reload): the new name is served now, not eventually.
	if code, body := getByHost(t, srv, "www.example.com"); code != http.StatusOK || body != "docs" {
		t.Fatalf("www.example.com once the server reports docs' new entry: %d %q, want 200 docs", code, body)
	}

	// The refused tree: its first request loads it, the load refuses it, and /sites says why.
	bigID := poolindex.ID(big.Namespace, big.Name)
	getByHost(t, srv, poolindex.ServiceHosts(big.Namespace, big.Name, "cluster.local")[0])
	testenv.Eventually(t, "big refused, with its reason", func() error {
		got := read()[bigID]
		if got.State != "refused" || !strings.Contains(got.Error, "maxFiles 2") {
			return fmt.Errorf("big: state %q error %q", got.State, got.Error)
		}
		return nil
	})
}

// treeRevision is the name of every test tree's directory (16 hex digits, as a bundle's first 16).
const treeRevision = "0123456789abcdef"

// poolSite is a ConfigMap site placed in pool "shared" that holds hostnames.
func poolSite(namespace, name string, hostnames ...string) *v1alpha1.StaticSite {
	s := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	s.Spec.Content.ConfigMaps = []v1alpha1.ConfigMapContent{{Name: name + "-pages"}}
	s.Status.Hostnames = hostnames
	return s
}

func entryRevisionOf(t *testing.T, pool *v1alpha1.StaticSitePool, s *v1alpha1.StaticSite) string {
	t.Helper()
	r, err := poolindex.EntryRevision(poolplacement.Entry(pool, s, "cluster.local"))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// writeIndex writes the pool's shards as the operator renders them, each replaced by a rename (as the kubelet
// swaps a ConfigMap volume's files).
func writeIndex(t *testing.T, dir string, pool *v1alpha1.StaticSitePool, sites ...*v1alpha1.StaticSite) {
	t.Helper()
	n := int(*pool.Spec.IndexShards)
	shards := make([][]poolindex.Site, n)
	for _, s := range sites {
		e := poolplacement.Entry(pool, s, "cluster.local")
		i := poolindex.ShardOf(e.ID, n)
		shards[i] = append(shards[i], e)
	}
	index := filepath.Join(dir, "index")
	testenv.Must(t, os.MkdirAll(index, 0o755))
	for i := range n {
		b, err := poolindex.Render(i, shards[i])
		testenv.Must(t, err)
		tmp := filepath.Join(index, ".tmp-"+poolplacement.IndexKey(i))
		testenv.Must(t, os.WriteFile(tmp, b, 0o644))
		testenv.Must(t, os.Rename(tmp, filepath.Join(index, poolplacement.IndexKey(i))))
	}
}

// writePoolTree lays out DIR/content/<id>/<treeRevision> with files and current pointing at it, as the puller does.
func writePoolTree(t *testing.T, dir, id string, files map[string]string) {
	t.Helper()
	tree := filepath.Join(dir, "content", id, treeRevision)
	testenv.Must(t, os.MkdirAll(tree, 0o755))
	for name, body := range files {
		testenv.Must(t, os.WriteFile(filepath.Join(tree, name), []byte(body), 0o644))
	}
	testenv.Must(t, os.Symlink(treeRevision, filepath.Join(dir, "content", id, "current")))
}

// getByHost is GET / on the server's HTTP port with Host host: the status and the body.
func getByHost(t *testing.T, srv *serverbin.Process, host string) (int, string) {
	t.Helper()
	return srv.GetByHost(t, host, "/")
}
