package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// The harness' pool sites must be ones the pool admits: a refused site would never be Placed and the run would
// time out instead of measuring.
func TestPoolSitesAreAdmitted(t *testing.T) {
	cfg := &config{namespaces: 10, poolReplicas: 2, poolShards: 16}
	pool := newPool(cfg)
	for _, i := range []int{0, 1, 9, 10, 9999} {
		site := newPoolSite(i, cfg.namespaces)
		if r := poolplacement.Check(pool, site); r != nil {
			t.Fatalf("site %d refused: %v", i, r)
		}
		if got := poolplacement.Wants(site); got != benchPool {
			t.Fatalf("site %d wants pool %q", i, got)
		}
		cm := newPoolContent(i, cfg.namespaces)
		if cm.Namespace != site.Namespace || site.Spec.Content.ConfigMaps[0].Name != cm.Name {
			t.Fatalf("site %d's ConfigMap %s/%s is not the one it names", i, cm.Namespace, cm.Name)
		}
	}
	if a, b := newPoolContent(1, 10).Data["index.html"], newPoolContent(2, 10).Data["index.html"]; a == b {
		t.Fatal("two pool sites have the same page: their bundles would be one")
	}
}

func TestPoolSitesProgress(t *testing.T) {
	cond := func(typ string, status metav1.ConditionStatus, gen int64) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, ObservedGeneration: gen}
	}
	site := func(mode string, gen int64, conds ...metav1.Condition) v1alpha1.StaticSite {
		s := v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Generation: gen}}
		if mode != "" {
			s.Spec.Placement = &v1alpha1.PlacementSpec{Mode: mode, Pool: benchPool}
		}
		s.Status.Conditions = conds
		return s
	}
	sites := []v1alpha1.StaticSite{
		site("", 1, cond(v1alpha1.ConditionPlaced, metav1.ConditionTrue, 1)),                          // dedicated: not a pool site
		site(v1alpha1.PlacementDedicated, 1, cond(v1alpha1.ConditionPlaced, metav1.ConditionTrue, 1)), // the same, said
		site(v1alpha1.PlacementPool, 2, cond(v1alpha1.ConditionPlaced, metav1.ConditionTrue, 2), cond(v1alpha1.ConditionReady, metav1.ConditionTrue, 2)),
		site(v1alpha1.PlacementPool, 2, cond(v1alpha1.ConditionPlaced, metav1.ConditionTrue, 1)),    // an older generation's
		site(v1alpha1.PlacementPool, 1, cond(v1alpha1.ConditionPlaced, metav1.ConditionUnknown, 1)), // catching up
		site(v1alpha1.PlacementPool, 1, cond(v1alpha1.ConditionPlaced, metav1.ConditionTrue, 1), cond(v1alpha1.ConditionReady, metav1.ConditionFalse, 1)),
		site(v1alpha1.PlacementPool, 1), // no status yet
	}
	if got := poolSitesProgress(sites); got != (poolProgress{sites: 5, placed: 2, ready: 1}) {
		t.Fatalf("progress: %+v", got)
	}
}

func TestAdminRoute(t *testing.T) {
	for path, want := range map[string]string{"/sites": routePool, "/metrics": routeDedicated, "/content": routeDedicated,
		"/load-error": routeDedicated, "/sites/x": routeDedicated, "/": routeDedicated} {
		if got := adminRoute(path); got != want {
			t.Errorf("adminRoute(%q) = %s, want %s", path, got, want)
		}
	}
}

// The index volume the harness writes is one the pool's readers read, through each update (the contract the
// puller, the fetcher and the server share: docs/design/pools.md, "The index").
func TestWriteProjectedIsReadByThePoolsIndexReader(t *testing.T) {
	dir := t.TempDir()
	shard := func(i int, ids ...string) string {
		var sites []poolindex.Site
		for _, id := range ids {
			sites = append(sites, poolindex.Site{ID: id, Hosts: []string{id + ".example"}, Value: json.RawMessage(`{"version":1}`),
				Limits:  poolindex.Limits{MaxFiles: 10, MaxBytes: 1 << 20, RequestsPerSecond: 10},
				Content: poolindex.Content{ConfigMaps: []poolindex.ConfigMapContent{{Name: "m-" + id}}}})
		}
		b, err := poolindex.Render(i, sites)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	x := &contentagent.IndexDir{Dir: dir}
	load := func(want ...string) {
		t.Helper()
		if _, err := x.Load(); err != nil {
			t.Fatal(err)
		}
		got := x.Sites()
		if len(got) != len(want) || len(x.Refused()) != 0 {
			t.Fatalf("sites %v (refused %v), want %v", got, x.Refused(), want)
		}
		for _, id := range want {
			if _, ok := got[id]; !ok {
				t.Fatalf("site %s missing from %v", id, got)
			}
		}
	}
	w := &indexWriter{dir: dir}
	files := map[string]string{poolplacement.IndexKey(0): shard(0, "a.one"), poolplacement.IndexKey(1): shard(1, "b.two")}
	w.list = func(context.Context) (map[string]string, error) { return files, nil }
	if err := w.write(context.Background()); err != nil {
		t.Fatal(err)
	}
	load("a.one", "b.two")
	files = map[string]string{poolplacement.IndexKey(0): shard(0, "a.one", "c.three")}
	if err := w.write(context.Background()); err != nil {
		t.Fatal(err)
	}
	load("a.one", "c.three") // shard 1 left: its name is gone, the old version's directory too
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if len(names) != 3 || names[0] != "..data" || names[1] != "..v000002" || names[2] != poolplacement.IndexKey(0) {
		t.Fatalf("volume holds %v, want ..data, ..v000002 and %s", names, poolplacement.IndexKey(0))
	}
	if target, _ := os.Readlink(filepath.Join(dir, poolplacement.IndexKey(0))); target != filepath.Join("..data", poolplacement.IndexKey(0)) {
		t.Fatalf("file link -> %q", target)
	}
	v := w.version
	if err := w.write(context.Background()); err != nil || w.version != v {
		t.Fatalf("an unchanged index was written again (version %d -> %d, %v)", v, w.version, err)
	}
	if err := writeProjected(dir, map[string]string{"../escape": "x"}, "bad"); err == nil {
		t.Fatal("a file name with a slash must be refused")
	}
}

// The operator's policy here admits every site the harness makes: a refused site is never reconciled, and the run
// would time out instead of measuring.
func TestBenchPolicyAdmitsTheBenchSites(t *testing.T) {
	raw, err := benchPolicy()
	if err != nil {
		t.Fatal(err)
	}
	p, err := tenancy.Parse(raw)
	if err != nil {
		t.Fatalf("the operator would refuse --tenancy-policy: %v", err)
	}
	for _, s := range []*v1alpha1.StaticSite{newSite(3, 10, 2), newPoolSite(3, 10)} {
		if vs := p.CheckSite(s); len(vs) > 0 {
			t.Fatalf("%s refused: %v", s.Name, vs.Error())
		}
	}
	if vs := tenancy.Default().CheckSite(newSite(3, 10, 2)); len(vs) == 0 {
		t.Fatal("the default policy admits the content image: the test no longer shows what benchPolicy adds")
	}
}
