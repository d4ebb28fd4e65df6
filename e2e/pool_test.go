//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// Pool scenario (20, issue 40): a StaticSitePool of two pods serves poolSites sites of two tenant namespaces:
// poolGitSites small Git sites (branches of one public repository on the scenario's own Git server), the Python
// docs from Git, and ConfigMap sites for the rest, poolFilesPerSite files each. Every file of every site is fetched byte for byte by its Service's DNS
// name (a client pod: the site's selector-less Service, its EndpointSlice, a pool pod, chosen by Host) and by its
// hostname from each pool pod (a port-forward per pod, the Host header set); an unknown host gets one 404 that
// names no site; and the pods of the namespaces involved are counted before and after adding the sites: a pool
// site costs no pod. MEASURED: the time from the first site's creation to every site served by both pool pods,
// the pod counts, the pool pods' resident memory. Then, on the same pool, automatic placement (poolauto_test.go).
const (
	poolSites        = 200
	poolGitSites     = 10
	poolFilesPerSite = 20
	poolSiteCPU      = "250m"
)

func testPool(t *testing.T) {
	requireOperator(t)
	git := deployPublicGitServer(t)
	poolNS := newNamespace(t, "pool", false)
	tenants := []string{newNamespace(t, "pool-a", false), newNamespace(t, "pool-b", false)}
	pool := &v1alpha1.StaticSitePool{
		ObjectMeta: metav1.ObjectMeta{Name: poolNS},
		Spec: v1alpha1.StaticSitePoolSpec{
			Namespace:  poolNS,
			Namespaces: tenants,
			Replicas:   ptr.To[int32](2),
			CPU:        ptr.To(resource.MustParse(poolSiteCPU)),
			Memory:     ptr.To(resource.MustParse("384Mi")), // the docs (67 MB) in memory beside the small sites
			Disk:       ptr.To(resource.MustParse("1Gi")),
		},
	}
	ctx := ctxFor(t, 15*time.Minute)
	if err := k8s.Create(ctx, pool); err != nil {
		t.Fatalf("create StaticSitePool: %v", err)
	}
	t.Cleanup(func() {
		_ = k8s.Delete(context.Background(), pool)
	})
	waitPoolReady(t, pool.Name, 3*time.Minute)
	involved := append([]string{poolNS, cfg.releaseNamespace}, tenants...)
	before := podsIn(ctx, t, involved)

	sites := poolSiteSet(t, tenants)
	git.pushSites(t, sites)
	created := time.Now()
	createPoolSites(ctx, t, pool.Name, sites)
	waitPoolSitesServed(t, sites, 0, 5*time.Minute)
	t.Logf("MEASURED pool: %d sites (%d Git of %d files, the Python docs from Git, %d ConfigMap of %d files) created -> served by both pool pods: %.1f s",
		len(sites), poolGitSites, poolFilesPerSite, len(sites)-poolGitSites-1, poolFilesPerSite, time.Since(created).Seconds())
	after := podsIn(ctx, t, involved)
	t.Logf("MEASURED pool: pods in the pool's, the tenants' and the operator's namespaces before the %d sites: %d, after: %d",
		len(sites), len(before), len(after))
	if len(after) != len(before) {
		t.Errorf("adding %d pool sites changed the pod count from %d to %d: %v", len(sites), len(before), len(after), after)
	}
	// One more site on a pool already serving the others: what a tenant waits for when adding a site (the batch
	// above measures the pool's start). Its files are fetched with the others' below.
	one := smallPoolSite(rand.New(rand.NewPCG(40, 2)), tenants[1], "s-added")
	added := time.Now()
	createPoolSites(ctx, t, pool.Name, []poolSite{one})
	waitPoolSitesServed(t, []poolSite{one}, 0, 2*time.Minute)
	t.Logf("MEASURED pool: one more ConfigMap site (%d files) on the pool serving %d -> served by both pool pods: %.1f s (status polled each second)",
		poolFilesPerSite, len(sites), time.Since(added).Seconds())
	sites = append(sites, one)

	t.Run("by-service-name", func(t *testing.T) { poolFetchByService(t, tenants[0], sites) })
	pods := poolServerPods(ctx, t, pool)
	t.Run("by-hostname-on-each-pod", func(t *testing.T) { poolFetchByHostname(t, pods, sites) })
	for _, p := range pods {
		if s, err := scrapePod(ctx, &p); err == nil {
			t.Logf("MEASURED pool: pod %s resident memory %.1f MiB serving %d sites", p.Name, s.ResidentBytes/(1<<20), len(sites))
		} else {
			t.Errorf("scrape pool pod %s: %v", p.Name, err)
		}
	}
	// On the same pool, already serving: automatic placement costs the step alone (poolauto_test.go).
	t.Run("auto-placement", func(t *testing.T) { testPoolAutoPlacement(t, pool, tenants[0]) })
	// Last: it leaves the pool at one pod (poolscale_test.go).
	t.Run("autoscaling", func(t *testing.T) { testPoolAutoscaling(t, pool.Name, sites) })
}

// poolSite is one site of the scenario and the files it must serve.
type poolSite struct {
	ns, name, hostname string
	// branch of the scenario's public repository gitRepo holding the site, "" for a ConfigMap site.
	gitRepo, branch string
	files           []siteFile
}

func (s poolSite) key() string { return s.ns + "/" + s.name }

// poolSiteSet is the scenario's sites, half in each tenant namespace, each with files of its own bytes (a site
// served another's tree fails the byte check): the Python docs, poolGitSites small Git sites, ConfigMap sites.
func poolSiteSet(t *testing.T, tenants []string) []poolSite {
	t.Helper()
	rng := rand.New(rand.NewPCG(40, 1))
	out := make([]poolSite, 0, poolSites)
	docs := poolSite{ns: tenants[0], name: "pydocs", gitRepo: poolDocsRepo, branch: "main", files: filesOf(t, cfg.pydocsDir)}
	docs.hostname = "pydocs." + docs.ns + ".pool.e2e.test"
	out = append(out, docs)
	for i := range poolSites - 1 {
		s := smallPoolSite(rng, tenants[i%len(tenants)], fmt.Sprintf("s-%03d", i))
		if i < poolGitSites {
			s.gitRepo, s.branch = poolSitesRepo, s.name
		}
		out = append(out, s)
	}
	return out
}

// smallPoolSite is a site of poolFilesPerSite files of its own bytes (each starts with the site's namespace, name
// and the file's path), from 64 bytes to 12 KiB, an index among them.
func smallPoolSite(rng *rand.Rand, ns, name string) poolSite {
	s := poolSite{ns: ns, name: name, hostname: fmt.Sprintf("%s.%s.pool.e2e.test", name, ns)}
	for f := range poolFilesPerSite {
		var path string
		switch f % 4 {
		case 0:
			path = fmt.Sprintf("/page-%02d.html", f)
		case 1:
			path = fmt.Sprintf("/style-%02d.css", f)
		case 2:
			path = fmt.Sprintf("/data-%02d.json", f)
		default:
			path = fmt.Sprintf("/blob-%02d.bin", f)
		}
		if f == 0 {
			path = "/index.html"
		}
		size := 64 + rng.IntN(12<<10)
		data := make([]byte, size)
		head := fmt.Sprintf("%s %s %s\n", s.ns, s.name, path)
		for j := range data {
			data[j] = byte('a' + rng.IntN(26))
		}
		copy(data, head)
		s.files = append(s.files, siteFile{path: path, data: data})
	}
	return s
}

// createPoolSites creates each site's ConfigMap and StaticSite (placement Pool), eight at a time.
func createPoolSites(ctx context.Context, t *testing.T, pool string, sites []poolSite) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, len(sites))
	sem := make(chan struct{}, 8)
	for _, s := range sites {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			content := v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: s.name}}}
			if s.gitRepo != "" {
				content = v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: poolGitURL(s.gitRepo), Ref: s.branch}}
			} else {
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name}, BinaryData: map[string][]byte{}}
				for _, f := range s.files {
					cm.BinaryData[strings.TrimPrefix(f.path, "/")] = f.data
				}
				if err := k8s.Create(ctx, cm); err != nil {
					errs <- fmt.Errorf("ConfigMap %s: %w", s.key(), err)
					return
				}
			}
			site := &v1alpha1.StaticSite{
				ObjectMeta: metav1.ObjectMeta{Namespace: s.ns, Name: s.name},
				Spec: v1alpha1.StaticSiteSpec{
					Content:   content,
					Placement: &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: pool},
					Hostnames: []v1alpha1.Hostname{v1alpha1.Hostname(s.hostname)},
				},
			}
			if err := k8s.Create(ctx, site); err != nil {
				errs <- fmt.Errorf("StaticSite %s: %w", s.key(), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// waitPoolReady waits for the pool's Ready condition with every replica ready.
func waitPoolReady(t *testing.T, name string, timeout time.Duration) *v1alpha1.StaticSitePool {
	t.Helper()
	pool := &v1alpha1.StaticSitePool{}
	eventually(t, timeout, "StaticSitePool "+name+" Ready", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, pool); err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(pool.Status.Conditions, v1alpha1.PoolConditionReady)
		want := ptr.Deref(pool.Spec.Replicas, 1)
		ok := c != nil && c.Status == metav1.ConditionTrue && pool.Status.ObservedGeneration == pool.Generation &&
			pool.Status.ReadyReplicas == want
		return ok, fmt.Sprintf("ready %d/%d, %s", pool.Status.ReadyReplicas, want, condString(c)), nil
	})
	return pool
}

// waitPoolSitesServed waits until every site says Placed=True with every ready pool pod serving it, and (pods > 0)
// with that many ready pool pods.
func waitPoolSitesServed(t *testing.T, sites []poolSite, pods int32, timeout time.Duration) {
	t.Helper()
	namespaces, ours := map[string]bool{}, map[string]bool{}
	for _, s := range sites {
		namespaces[s.ns] = true
		ours[s.key()] = true
	}
	eventually(t, timeout, fmt.Sprintf("%d pool sites served", len(sites)), func(ctx context.Context) (bool, string, error) {
		served, example := 0, ""
		for ns := range namespaces {
			var list v1alpha1.StaticSiteList
			if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
				return false, err.Error(), nil
			}
			for i := range list.Items {
				s := &list.Items[i]
				if !ours[s.Namespace+"/"+s.Name] { // another step's site (auto-placement's)
					continue
				}
				p := s.Status.Placement
				c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionPlaced)
				if p != nil && p.Mode == v1alpha1.PlacementPool && p.ReadyPods > 0 && p.ServedBy == p.ReadyPods &&
					(pods == 0 || p.ReadyPods == pods) && c != nil && c.Status == metav1.ConditionTrue {
					served++
				} else if example == "" {
					example = fmt.Sprintf("%s/%s: placement %+v, Placed %s", s.Namespace, s.Name, p, condString(c))
				}
			}
		}
		return served == len(sites), fmt.Sprintf("%d of %d served; %s", served, len(sites), example), nil
	})
}

// podsIn lists the names of the pods in namespaces, with their phase (the fetch jobs of this scenario run after
// the second count).
func podsIn(ctx context.Context, t *testing.T, namespaces []string) []string {
	t.Helper()
	var out []string
	for _, ns := range namespaces {
		var list corev1.PodList
		if err := k8s.List(ctx, &list, client.InNamespace(ns)); err != nil {
			t.Fatalf("list pods in %s: %v", ns, err)
		}
		for _, p := range list.Items {
			if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
				out = append(out, ns+"/"+p.Name)
			}
		}
	}
	return out
}

// poolServerPods are the pool's running server pods.
func poolServerPods(ctx context.Context, t *testing.T, pool *v1alpha1.StaticSitePool) []corev1.Pod {
	t.Helper()
	var list corev1.PodList
	sel := labels.SelectorFromSet(poolplacement.PodSelector(pool.Name))
	if err := k8s.List(ctx, &list, client.InNamespace(pool.Spec.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		t.Fatalf("list pool pods: %v", err)
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
			out = append(out, p)
		}
	}
	if len(out) != int(ptr.Deref(pool.Spec.Replicas, 1)) {
		t.Fatalf("%d running pool pods, want %d", len(out), ptr.Deref(pool.Spec.Replicas, 1))
	}
	return out
}

// poolFetchByService fetches every file of every site from one client pod, by the site's Service DNS name.
func poolFetchByService(t *testing.T, ns string, sites []poolSite) {
	t.Helper()
	var args []string
	want := map[string]siteFile{}
	for _, s := range sites {
		base := fmt.Sprintf("http://%s.%s.svc.cluster.local", s.name, s.ns)
		for _, f := range s.files {
			u := urlFor(base, f.path)
			args = append(args, u)
			want[u] = f
		}
	}
	ok, results := fetch(t, ns, "pool-by-service", 5*time.Minute, args...)
	if !ok {
		t.Errorf("fetch job failed")
	}
	if len(results) != len(args)+1 {
		t.Fatalf("fetch printed %d results, want %d", len(results), len(args)+1)
	}
	check := exactBytes(t)
	for _, r := range results[1:] {
		f, known := want[r.URL]
		if !known {
			t.Errorf("unexpected result for %s", r.URL)
			continue
		}
		check(f, r)
	}
	t.Logf("fetched %d files of %d sites by their Services' DNS names: the exact bytes", len(args), len(sites))
}

// poolFetchByHostname fetches every file of every site from each pool pod with the site's hostname as Host, and
// two unknown hosts, whose answers must be the same 404.
func poolFetchByHostname(t *testing.T, pods []corev1.Pod, sites []poolSite) {
	t.Helper()
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableCompression: true, MaxIdleConnsPerHost: 16}}
	for _, p := range pods {
		pf := startPortForward(t, p.Namespace, "pod/"+p.Name, v1alpha1.ServerPort)
		base := "http://" + pf.addr()
		var mu sync.Mutex
		var bad []string
		retried := 0
		var wg sync.WaitGroup
		work := make(chan poolSite)
		for range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := range work {
					for _, f := range s.files {
						status, body, err := getWithHost(client, urlFor(base, f.path), s.hostname)
						// A site the pod has not loaded yet may answer 503 with Retry-After: 1 while its tree
						// loads (its first request waits at most 1 s: images/server/README.md, "Shared pools").
						// The client does what the header says, twice at most; the scenario reports how often.
						for try := 0; try < 2 && err == nil && status == http.StatusServiceUnavailable; try++ {
							mu.Lock()
							retried++
							mu.Unlock()
							time.Sleep(time.Second)
							status, body, err = getWithHost(client, urlFor(base, f.path), s.hostname)
						}
						if err != nil || status != 200 || sha256.Sum256(body) != sha256.Sum256(f.data) {
							mu.Lock()
							bad = append(bad, fmt.Sprintf("%s %s%s: status %d, %d bytes, %v", p.Name, s.hostname, f.path, status, len(body), err))
							mu.Unlock()
						}
					}
				}
			}()
		}
		for _, s := range sites {
			work <- s
		}
		close(work)
		wg.Wait()
		t.Logf("MEASURED pool: %d of %d requests by hostname to %s answered 503 (Retry-After: 1) while the site loaded, then retried",
			retried, poolFileCount(sites), p.Name)
		if len(bad) > 0 {
			t.Fatalf("%d of %d files not served byte for byte by hostname from %s; first: %s", len(bad), poolFileCount(sites), p.Name, bad[0])
		}
		s1, b1, err1 := getWithHost(client, base+"/index.html", "nobody.pool.e2e.test")
		s2, b2, err2 := getWithHost(client, base+"/index.html", "other.unknown.example")
		if err1 != nil || err2 != nil || s1 != 404 || s2 != 404 || string(b1) != string(b2) {
			t.Errorf("unknown hosts on %s: %d %q (%v) and %d %q (%v); want the same 404", p.Name, s1, b1, err1, s2, b2, err2)
		}
		for _, s := range sites {
			if strings.Contains(string(b1), s.name) {
				t.Errorf("the unknown host's 404 names site %s: %q", s.name, b1)
				break
			}
		}
	}
	t.Logf("fetched %d files of %d sites by hostname from each of %d pool pods: the exact bytes; unknown hosts: one 404", poolFileCount(sites), len(sites), len(pods))
}

func poolFileCount(sites []poolSite) int {
	n := 0
	for _, s := range sites {
		n += len(s.files)
	}
	return n
}

func getWithHost(c *http.Client, u, host string) (int, []byte, error) {
	req, err := http.NewRequest(http.MethodGet, u, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Host = host
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20)) // the docs' largest page is over 1 MiB
	return resp.StatusCode, body, err
}
