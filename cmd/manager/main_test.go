package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/autoscaling"
	"hyperstatic.dev/hyperstatic/internal/managercache"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func TestFlagDefaults(t *testing.T) {
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	o := bindFlags(fs)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.serverImage != "hyperstatic/server:"+version || o.leaderElect || o.probeAddr != ":8081" || o.metricsAddr != ":8080" ||
		o.staticSiteConcurrency != defaultStaticSiteConcurrency || o.contentAgentImage != "hyperstatic/content-agent:"+version ||
		o.kubeAPIQPS != defaultKubeAPIQPS || o.kubeAPIBurst != defaultKubeAPIBurst || o.skipNameValidation ||
		o.pprofAddr != "0" { // profiles are opt-in: an unauthenticated endpoint
		t.Errorf("defaults %+v", o)
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	return serverbin.FreeAddr(t)
}

// operatorNamespace and operatorUser are where config/rbac installs the operator and who it runs as.
const (
	operatorNamespace = "hyperstatic-system"
	operatorUser      = "system:serviceaccount:" + operatorNamespace + ":hyperstatic-operator"
)

// asOperator installs config/rbac (the generated ClusterRole, the leader election Role and their bindings) and
// returns a config that acts as the operator's ServiceAccount: the manager then runs with exactly the permissions
// a real installation grants, and a missing one fails the test.
func asOperator(t testing.TB, env *testenv.Env) *rest.Config {
	t.Helper()
	ctx := context.Background()
	testenv.Must(t, env.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}))
	for _, f := range []struct {
		file string
		obj  client.Object
	}{
		{"role.yaml", &rbacv1.ClusterRole{}},
		{"role_binding.yaml", &rbacv1.ClusterRoleBinding{}},
		{"leader_election_role.yaml", &rbacv1.Role{}},
		{"leader_election_role_binding.yaml", &rbacv1.RoleBinding{}},
	} {
		raw, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), "config", "rbac", f.file))
		testenv.Must(t, err)
		testenv.Must(t, yaml.Unmarshal(raw, f.obj))
		testenv.Must(t, env.Client.Create(ctx, f.obj))
	}
	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: operatorUser}
	return cfg
}

// The real manager against a real API server, with the permissions config/rbac grants: it becomes ready, takes the
// leader Lease, reconciles a StaticSite with the --server-image it was given, keeps its memory small in a cluster
// full of large ConfigMaps, and stops cleanly.
func TestManagerRuns(t *testing.T) {
	env, err := testenv.Start()
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	cfg := asOperator(t, env)
	// 50 ConfigMaps of 900 KiB: 44 MiB of data the operator must never cache.
	const bigCount, bigSize = 50, 900 << 10
	largeConfigMaps(t, env.Client, "big", bigCount, bigSize)
	heapBefore := liveHeap()
	probe, metrics := freeAddr(t), freeAddr(t)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, cfg, &options{metricsAddr: metrics, probeAddr: probe, leaderElect: true,
			leaderElectNS: operatorNamespace, serverImage: "hyperstatic/server:under-test", contentAgentImage: "hyperstatic/content-agent:under-test",
			staticSiteConcurrency: 3, skipNameValidation: true})
	}()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with %v", err)
		}
	}()

	within := func(what string, check func() error) {
		t.Helper()
		var err error
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			if err = check(); err == nil {
				return
			}
		}
		t.Fatalf("%s: %v", what, err)
	}
	get := func(url string) error {
		resp, err := http.Get(url)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s: HTTP %d", url, resp.StatusCode)
		}
		return nil
	}
	within("readyz", func() error { return get("http://" + probe + "/readyz") })
	within("metrics", func() error { return get("http://" + metrics + "/metrics") })
	// The StaticSite controller runs the flag's worker count; the autoscaler (also For StaticSites) keeps its own,
	// the Benchmark controller one.
	metricsHave := func(wants ...string) error {
		resp, err := http.Get("http://" + metrics + "/metrics")
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			return err
		}
		for _, want := range wants {
			if !strings.Contains(string(body), want) {
				return fmt.Errorf("no %s in the metrics", want)
			}
		}
		return nil
	}
	within("worker counts", func() error {
		return metricsHave(
			`controller_runtime_max_concurrent_reconciles{controller="staticsite"} 3`,
			fmt.Sprintf(`controller_runtime_max_concurrent_reconciles{controller="autoscaler"} %d`, autoscaling.DefaultMaxConcurrentReconciles),
			`controller_runtime_max_concurrent_reconciles{controller="benchmark"} 1`)
	})
	c := env.Client
	within("leader lease", func() error {
		return c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: "operator.hyperstatic.dev"}, &coordinationv1.Lease{})
	})

	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "smoke"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "smoke"}}}}}
	if err := c.Create(ctx, site); err != nil {
		t.Fatal(err)
	}
	within("Deployment with the flag's image", func() error {
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(site), d); err != nil {
			return err
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "hyperstatic/server:under-test" {
			return fmt.Errorf("image %s", img)
		}
		return nil
	})

	// The state metrics (internal/statemetrics) are registered on the manager's /metrics and read its cache.
	within("the site's state metrics", func() error {
		return metricsHave(`hyperstatic_staticsite_latency_objective_seconds{namespace="default",staticsite="smoke"} 0.1`,
			`hyperstatic_staticsite_status_condition{condition="Ready",namespace="default",reason=`)
	})

	// The manager caches only objects labelled as the operator's own (managercache.OwnedObjectsOnly): what it creates must
	// carry that label, or it would never see its own children change. Deleting the Service must bring it back.
	svc := &corev1.Service{}
	within("Service created", func() error { return c.Get(ctx, client.ObjectKeyFromObject(site), svc) })
	if err := c.Delete(ctx, svc); err != nil {
		t.Fatal(err)
	}
	within("Service recreated after deletion", func() error {
		fresh := &corev1.Service{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(site), fresh); err != nil {
			return err
		}
		if fresh.UID == svc.UID {
			return fmt.Errorf("still the deleted Service")
		}
		return nil
	})

	// A pool, with the operator's own permissions: the API server lets it create the fetcher's Role and RoleBinding
	// only because it holds every permission they grant (it has no escalate or bind), and its server pods use the
	// flag's image.
	testenv.Must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "pools"}}))
	testenv.Must(t, c.Create(ctx, &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: "smoke"},
		Spec: v1alpha1.StaticSitePoolSpec{Namespace: "pools", Namespaces: []string{"default"}}}))
	within("the pool's fetcher identity and server pods", func() error {
		for _, o := range []client.Object{&rbacv1.Role{}, &rbacv1.RoleBinding{}, &corev1.ServiceAccount{}} {
			if err := c.Get(ctx, client.ObjectKey{Namespace: "pools", Name: "smoke-fetcher"}, o); err != nil {
				return err
			}
		}
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: "pools", Name: "smoke"}, d); err != nil {
			p := &v1alpha1.StaticSitePool{}
			_ = c.Get(ctx, client.ObjectKey{Name: "smoke"}, p)
			return fmt.Errorf("%w (pool status %+v)", err, p.Status)
		}
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "hyperstatic/server:under-test" {
			return fmt.Errorf("pool image %s", img)
		}
		return nil
	})

	// Memory: a site serving one of the large ConfigMaps makes the operator read it, and whatever watches
	// ConfigMaps (the StaticSite controller's metadata-only watch, the Benchmark controller's watch of its own) must
	// not make the manager cache the others. Its heap grows by its own structures only, far below the 44 MiB.
	const heapBudget = 20 << 20
	big := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "big", Name: "big"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "big-07"}}}}}
	testenv.Must(t, c.Create(ctx, big))
	within("the large site's content read", func() error {
		testenv.Must(t, c.Get(ctx, client.ObjectKeyFromObject(big), big))
		if cond := meta.FindStatusCondition(big.Status.Conditions, v1alpha1.ConditionContentAvailable); cond == nil || cond.Reason != v1alpha1.ReasonConfigMapsFound {
			return fmt.Errorf("ContentAvailable %+v", cond)
		}
		return nil
	})
	heapAfter := liveHeap()
	t.Logf("live heap before the manager started %d MiB, with it running %d MiB", heapBefore>>20, heapAfter>>20)
	if heapAfter > heapBefore+heapBudget {
		t.Errorf("the manager's heap grew by %d MiB with %d MiB of ConfigMaps in the cluster (budget %d MiB)",
			(heapAfter-heapBefore)>>20, bigCount*bigSize>>20, heapBudget>>20)
	}
}

// The cache filter keeps the operator's own objects and drops everybody else's.
func TestCacheKeepsOnlyOwnedObjects(t *testing.T) {
	own := labels.Set{v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}
	for obj, by := range managercache.OwnedObjectsOnly() {
		if !by.Label.Matches(own) {
			t.Errorf("%T: the operator's own objects would not be cached", obj)
		}
		if by.Label.Matches(labels.Set{"app": "someone-else"}) {
			t.Errorf("%T: other objects would be cached", obj)
		}
	}
}

// The generated ClusterRole grants exactly the allow-list in docs/security.md: widening it (or leaving the docs
// behind when narrowing it) fails here, so every permission has a documented reason.
func TestClusterRoleIsTheDocumentedAllowList(t *testing.T) {
	root := testenv.RepoRoot()
	raw, err := os.ReadFile(filepath.Join(root, "config", "rbac", "role.yaml"))
	testenv.Must(t, err)
	role := &rbacv1.ClusterRole{}
	testenv.Must(t, yaml.Unmarshal(raw, role))
	granted := map[string]bool{}
	for _, rule := range role.Rules {
		if len(rule.NonResourceURLs) > 0 {
			t.Errorf("rule %+v: nonResourceURLs are not in the allow-list's vocabulary", rule)
		}
		names := rule.ResourceNames
		if len(names) == 0 {
			names = []string{""} // every object of the resource
		}
		for _, g := range rule.APIGroups {
			for _, r := range rule.Resources {
				for _, v := range rule.Verbs {
					for _, n := range names {
						granted[allowListEntry(g, r, v, n)] = true
					}
				}
			}
		}
	}

	doc, err := os.ReadFile(filepath.Join(root, "docs", "security.md"))
	testenv.Must(t, err)
	allowed := documentedAllowList(t, string(doc))
	for p := range granted {
		if !allowed[p] {
			t.Errorf("config/rbac/role.yaml grants %s, which the allow-list in docs/security.md does not list", p)
		}
	}
	for p := range allowed {
		if !granted[p] {
			t.Errorf("docs/security.md lists %s, which config/rbac/role.yaml does not grant", p)
		}
	}
}

// allowListEntry is one permission: a verb on a resource of an API group, on the object named name only when name
// is not empty (RBAC's resourceNames).
func allowListEntry(group, resource, verb, name string) string {
	if name == "" {
		return group + "|" + resource + "|" + verb
	}
	return group + "|" + resource + "|" + verb + "|" + name
}

// documentedAllowList reads the table between the rbac-allow-list markers: rows of API group, resource, verbs
// (comma-separated) and reason, names in backquotes, the core group an empty pair of backquotes followed by
// " (core)". A resource granted on some objects only reads "`resource` named `a`, `b`". It returns
// allowListEntry entries.
func documentedAllowList(t *testing.T, doc string) map[string]bool {
	t.Helper()
	const begin, end = "<!-- rbac-allow-list: begin -->", "<!-- rbac-allow-list: end -->"
	i, j := strings.Index(doc, begin), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/security.md has no %s ... %s table", begin, end)
	}
	allowed := map[string]bool{}
	for _, line := range strings.Split(doc[i+len(begin):j], "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue // blank, header or separator
		}
		group := strings.Trim(strings.TrimSuffix(strings.TrimSpace(cells[1]), " (core)"), "`")
		resource, named, _ := strings.Cut(strings.TrimSpace(cells[2]), " named ")
		resource = strings.Trim(resource, "`")
		names := []string{""}
		if named != "" {
			names = nil
			for _, n := range strings.Split(named, ",") {
				names = append(names, strings.Trim(strings.TrimSpace(n), "`"))
			}
		}
		for _, v := range strings.Split(cells[3], ",") {
			for _, n := range names {
				allowed[allowListEntry(group, resource, strings.TrimSpace(v), n)] = true
			}
		}
	}
	if len(allowed) == 0 {
		t.Fatal("the allow-list in docs/security.md is empty")
	}
	return allowed
}

// largeConfigMaps stands for a big cluster's ConfigMaps: count of them, size bytes each, none of them the
// operator's.
func largeConfigMaps(t *testing.T, c client.Client, ns string, count, size int) {
	t.Helper()
	ctx := context.Background()
	testenv.Must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	for i := range count {
		testenv.Must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("big-%02d", i)},
			Data: map[string]string{"index.html": strings.Repeat("x", size)}}))
	}
}

// liveHeap is the bytes of heap in use after a full collection.
func liveHeap() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// --tenancy-policy: absent, the multi-tenant default; given, the chart's JSON; a typo is an error at start, never a
// silent default.
func TestTenancyPolicyFlag(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		wantErr bool
		check   func(tenancy.Policy) bool
	}{
		{nil, false, func(p tenancy.Policy) bool { return reflect.DeepEqual(p, tenancy.Default()) }},
		{[]string{`--tenancy-policy={"extraArgs":["*"],"images":["*"],"benchmark":{"maxVUs":3}}`}, false,
			func(p tenancy.Policy) bool { return p.Benchmark.MaxVUs == 3 && !p.ServiceAccountName }},
		{[]string{`--tenancy-policy={"extraArgz":[]}`}, true, nil},
	} {
		fs := flag.NewFlagSet("manager", flag.ContinueOnError)
		o := bindFlags(fs)
		if err := fs.Parse(tc.args); err != nil {
			t.Fatal(err)
		}
		p, err := o.policy()
		if (err != nil) != tc.wantErr || (err == nil && !tc.check(p)) {
			t.Errorf("%q: policy %+v, error %v", tc.args, p, err)
		}
	}
}
