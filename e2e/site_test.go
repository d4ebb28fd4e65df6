//go:build e2e

package e2e

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// siteFile is one file a site must serve, with its exact bytes.
type siteFile struct {
	path string // URL path, e.g. "/css/site.css"
	data []byte
}

// filesOf walks a site directory into the URL paths and bytes a server must serve for it.
func filesOf(t *testing.T, dir string) []siteFile {
	t.Helper()
	var files []siteFile
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files = append(files, siteFile{path: "/" + filepath.ToSlash(rel), data: data})
		return nil
	})
	if err != nil || len(files) == 0 {
		t.Fatalf("site directory %s: %v (%d files)", dir, err, len(files))
	}
	return files
}

// urlFor joins a site's base URL (status.url) and a URL path, escaping each segment.
func urlFor(base, path string) string {
	segs := strings.Split(strings.TrimPrefix(path, "/"), "/")
	for i, s := range segs {
		segs[i] = url.PathEscape(s)
	}
	return strings.TrimSuffix(base, "/") + "/" + strings.Join(segs, "/")
}

// checkBytes runs a fetch pod (with flags) over every file and compares status, size and SHA-256 with the
// expected bytes. It returns the fetch pod's allowed CPU list (the shared pool, since the fetch pod is BestEffort).
func checkBytes(t *testing.T, ns, job, base string, files []siteFile, flags ...string) string {
	t.Helper()
	return checkBytesOnNode(t, ns, job, "", base, files, flags...)
}

// checkBytesOnNode is checkBytes from a fetch pod on the named node: the CPU list it returns is that node's shared
// pool.
func checkBytesOnNode(t *testing.T, ns, job, node, base string, files []siteFile, flags ...string) string {
	t.Helper()
	results := fetchFilesOnNode(t, ns, job, node, []string{base}, files, flags, exactBytes(t))
	t.Logf("fetched %d files from %s %v with the exact bytes", len(files), base, flags)
	return results[0].CPUsAllowedList
}

// exactBytes is a fetchFiles check: status 200 and the file's size and SHA-256.
func exactBytes(t *testing.T) func(siteFile, fetchResult) {
	t.Helper()
	return func(f siteFile, r fetchResult) {
		sum := sha256.Sum256(f.data)
		if r.Error != "" || r.Status != 200 || r.Size != len(f.data) || r.SHA256 != hex.EncodeToString(sum[:]) {
			t.Errorf("%s: got status %d, %d bytes, sha256 %s, error %q; want 200, %d bytes, sha256 %x",
				r.URL, r.Status, r.Size, r.SHA256, r.Error, len(f.data), sum)
		}
	}
}

// fetchFiles runs one fetch pod (flags first, then one URL per file under each base) and calls check with each
// result. It fails the test when the pod fails, prints a result count other than one per URL plus its CPU
// affinity, or answers a URL it was not given. It returns every result, the affinity first.
func fetchFiles(t *testing.T, ns, job string, bases []string, files []siteFile, flags []string, check func(siteFile, fetchResult)) []fetchResult {
	t.Helper()
	return fetchFilesOnNode(t, ns, job, "", bases, files, flags, check)
}

// fetchFilesOnNode is fetchFiles from a pod on the named node ("": anywhere).
func fetchFilesOnNode(t *testing.T, ns, job, node string, bases []string, files []siteFile, flags []string, check func(siteFile, fetchResult)) []fetchResult {
	t.Helper()
	urls, want := fileURLs(bases, files)
	args := append(append([]string{}, flags...), urls...)
	ok, results := fetchOnNode(t, ns, job, node, 3*time.Minute, args...)
	if !ok {
		t.Errorf("fetch job %s failed", job)
	}
	if urls := len(args) - len(flags); len(results) != urls+1 {
		t.Fatalf("fetch printed %d results, want %d (affinity + one per file and base)", len(results), urls+1)
	}
	for _, r := range results[1:] {
		f, known := want[r.URL]
		if !known {
			t.Errorf("unexpected result for %s", r.URL)
			continue
		}
		check(f, r)
	}
	return results
}

// fileURLs are the URLs of every file under each base, in order, and the file each names.
func fileURLs(bases []string, files []siteFile) ([]string, map[string]siteFile) {
	var urls []string
	want := map[string]siteFile{}
	for _, base := range bases {
		for _, f := range files {
			u := urlFor(base, f.path)
			urls = append(urls, u)
			want[u] = f
		}
	}
	return urls, want
}

// testBakedSite: a StaticSite whose content is an image baked FROM the server image becomes Ready; a client pod
// gets every file's exact bytes; the server pod is Guaranteed and its workers run pinned on an exclusive CPU that
// is not in the shared pool the (BestEffort) client pod on the same node runs in.
func testBakedSite(t *testing.T) {
	requireOperator(t)
	ns := newNamespace(t, "baked", false)
	ctx := ctxFor(t, 10*time.Minute)
	site := newSite(ns, "baked", v1alpha1.ContentSource{Image: cfg.siteImage}, "1") // one whole CPU: exclusive
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatalf("create StaticSite: %v", err)
	}
	site = waitSiteReady(t, ns, "baked", 3*time.Minute)
	if site.Status.URL == "" {
		t.Fatalf("status.url is empty")
	}
	if site.Status.ContentSource != v1alpha1.ContentSourceImage {
		t.Errorf("status.contentSource = %q, want image", site.Status.ContentSource)
	}
	pods := sitePods(ctx, t, ns, "baked")
	if len(pods) != 1 {
		t.Fatalf("%d running server pods, want 1", len(pods))
	}
	pod := pods[0]
	if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("server pod QoS = %s, want Guaranteed", pod.Status.QOSClass)
	}

	// The client runs on the server pod's node: the shared pool it reports is that node's, the one the server's
	// exclusive CPU must be outside of (every worker numbers its CPUs alike).
	sharedPool := checkBytesOnNode(t, ns, "fetch-all", pod.Spec.NodeName, site.Status.URL, filesOf(t, cfg.siteDir))

	// The server reports the CPUs its workers are pinned to; the operator turns that into the Pinned condition.
	sample, err := scrapePod(ctx, &pod)
	if err != nil {
		t.Fatalf("scrape server metrics: %v", err)
	}
	t.Logf("server pod %s: workers=%d cpus=%q pinned=%v; shared pool (client pod) = %q",
		pod.Name, sample.Workers, sample.CPUs, sample.Pinned, sharedPool)
	if !sample.Pinned || sample.CPUs == "" {
		t.Errorf("server workers are not pinned (cpus=%q pinned=%v)", sample.CPUs, sample.Pinned)
	}
	serverCPUs, shared := cpuSet(sample.CPUs), cpuSet(sharedPool)
	if len(shared) == 0 {
		t.Errorf("client pod reported no CPU list")
	}
	for c := range serverCPUs {
		if shared[c] {
			t.Errorf("server CPU %d is in the shared pool %q: not exclusive", c, sharedPool)
		}
	}
	eventually(t, time.Minute, "condition Pinned=True", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "baked"}, site); err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionPinned)
		return c != nil && c.Status == metav1.ConditionTrue, condString(c), nil
	})
	t.Logf("Pinned: %s", condString(meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionPinned)))
}

// testConfigMapSite: a StaticSite from two ConfigMaps (one with binaryData, one under a path prefix) serves their
// exact bytes; a changed ConfigMap value is served without any pod restart (same pod UIDs, same restart counts).
func testConfigMapSite(t *testing.T) {
	requireOperator(t)
	ns := newNamespace(t, "cm", false)
	ctx := ctxFor(t, 10*time.Minute)

	logo := make([]byte, 3000)
	_, _ = rand.Read(logo)
	pages := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pages"},
		Data:       map[string]string{"index.html": "<!doctype html><title>cm</title><p>version one</p>\n"},
		BinaryData: map[string][]byte{"logo.bin": logo},
	}
	assets := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "assets"},
		Data:       map[string]string{"site.css": "body { color: #123456 }\n"},
	}
	for _, cm := range []*corev1.ConfigMap{pages, assets} {
		if err := k8s.Create(ctx, cm); err != nil {
			t.Fatal(err)
		}
	}
	site := newSite(ns, "cm", v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{
		{Name: "pages"}, {Name: "assets", PathPrefix: "static/css"},
	}}, "250m")
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatalf("create StaticSite: %v", err)
	}
	site = waitSiteReady(t, ns, "cm", 3*time.Minute)
	files := []siteFile{
		{"/index.html", []byte(pages.Data["index.html"])},
		{"/logo.bin", logo},
		{"/static/css/site.css", []byte(assets.Data["site.css"])},
	}
	checkBytes(t, ns, "fetch-v1", site.Status.URL, files)

	before := podRestarts(sitePods(ctx, t, ns, "cm"))

	// Change a value: the operator annotates the pods with the new content revision, so the kubelet swaps the
	// projected volume's ..data link at once (else within its periodic sync, a minute or more); the server reloads
	// live.
	newIndex := "<!doctype html><title>cm</title><p>version two</p>\n"
	pages.Data["index.html"] = newIndex
	if err := k8s.Update(ctx, pages); err != nil {
		t.Fatal(err)
	}
	changed := time.Now()
	sum := sha256.Sum256([]byte(newIndex))
	ok, results := fetch(t, ns, "fetch-v2", 4*time.Minute,
		"-want-sha256", hex.EncodeToString(sum[:]), "-poll", "200s", urlFor(site.Status.URL, "/index.html"))
	if !ok {
		t.Fatalf("the changed ConfigMap value was not served within 200 s: %+v", results)
	}
	t.Logf("MEASURED ConfigMap content change served %s after the update", time.Since(changed).Round(100*time.Millisecond))

	checkPodsKept(t, before, sitePods(ctx, t, ns, "cm"))
}

// podRestarts is each pod's restart count, by UID: what checkPodsKept compares against later.
func podRestarts(pods []corev1.Pod) map[types.UID]int32 {
	out := map[types.UID]int32{}
	for _, p := range pods {
		out[p.UID] = restarts(&p)
	}
	return out
}

// checkPodsKept fails the test when the pods now are not the pods of before, each with the same restart count: a
// change that should apply live restarted or replaced one.
func checkPodsKept(t *testing.T, before map[types.UID]int32, after []corev1.Pod) {
	t.Helper()
	if len(after) != len(before) {
		t.Errorf("%d server pods after the change, %d before", len(after), len(before))
	}
	for _, p := range after {
		r, existed := before[p.UID]
		if !existed {
			t.Errorf("pod %s (uid %s) is new: the change restarted or replaced a pod", p.Name, p.UID)
		} else if restarts(&p) != r {
			t.Errorf("pod %s restarted (%d -> %d)", p.Name, r, restarts(&p))
		}
	}
}

func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

// testInvalidRefused: the API server itself (CRD schema + CEL, no webhook) refuses invalid StaticSites with a
// message that names the offending field.
func testInvalidRefused(t *testing.T) {
	requireOperator(t)
	ns := newNamespace(t, "invalid", false)
	ctx := ctxFor(t, 2*time.Minute)
	cases := []struct {
		name  string
		spec  map[string]any
		field string
	}{
		{"two-sources", map[string]any{"content": map[string]any{
			"image": cfg.siteImage, "configMaps": []any{map[string]any{"name": "x"}}}}, "spec.content"},
		{"no-source", map[string]any{"content": map[string]any{}}, "spec.content"},
		{"zero-cpu", map[string]any{"content": map[string]any{"image": cfg.siteImage}, "cpu": "0"}, "spec.cpu"},
		{"tiny-memory", map[string]any{"content": map[string]any{"image": cfg.siteImage}, "memory": "1Mi"}, "spec.memory"},
		{"admin-port", map[string]any{"content": map[string]any{"image": cfg.siteImage},
			"service": map[string]any{"port": int64(9090)}}, "spec.service"},
		{"escaping-prefix", map[string]any{"content": map[string]any{
			"configMaps": []any{map[string]any{"name": "x", "pathPrefix": "../etc"}}}}, "spec.content.configMaps[0].pathPrefix"},
		{"autoscaling-min-above-max", map[string]any{"content": map[string]any{"image": cfg.siteImage},
			"autoscaling": map[string]any{"minReplicas": int64(3), "maxReplicas": int64(2), "targetRPSPerPod": int64(100)}}, "spec.autoscaling"},
	}
	for _, c := range cases {
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": v1alpha1.GroupVersion.String(), "kind": "StaticSite",
			"metadata": map[string]any{"name": c.name, "namespace": ns},
			"spec":     c.spec,
		}}
		err := k8s.Create(ctx, u)
		switch {
		case err == nil:
			t.Errorf("%s: accepted, want refused naming %s", c.name, c.field)
			_ = k8s.Delete(ctx, u)
		case !apierrors.IsInvalid(err):
			t.Errorf("%s: error %v, want Invalid", c.name, err)
		case !strings.Contains(err.Error(), c.field):
			t.Errorf("%s: error %q does not name %s", c.name, err, c.field)
		default:
			t.Logf("%s: refused: %s", c.name, shorten(err.Error(), 300))
		}
	}
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d more bytes)", len(s)-n)
}
