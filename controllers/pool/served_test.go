package pool

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

const (
	bundleA = "aaaaaaaaaaaaaaaa0123456789abcdef0123456789abcdef0123456789abcdef"
	bundleB = "bbbbbbbbbbbbbbbb0123456789abcdef0123456789abcdef0123456789abcdef"
	commit  = "0123456789abcdef0123456789abcdef01234567"
)

// The pool's status through its life: Stalled while its namespace is missing, then rolling out, then waiting for
// its pods to serve every site, then Ready. What each ready pod and the fetcher say on /sites (httptest servers
// here) reaches the Board per site: a pod serves a site when it reports the revision of the whole index entry
// (hostnames included) and the content revision of the fetcher's bundle, and has not refused the site; a site no
// pool pod should know about never reaches the Board.
func TestStatusAndBoard(t *testing.T) {
	ctx := context.Background()
	poolNS, tenant := uniqueName("pool"), namespace(t, uniqueName("tenant"))
	pool := createPool(t, poolNS, []string{tenant}, 2)
	waitPool(t, pool.Name, "Stalled NamespaceMissing", func(p *v1alpha1.StaticSitePool) error {
		if err := poolCondition(p, v1alpha1.ConditionStalled, metav1.ConditionTrue, ReasonNamespaceMissing); err != nil {
			return err
		}
		return poolCondition(p, v1alpha1.PoolConditionReady, metav1.ConditionFalse, ReasonNamespaceMissing)
	})
	waitPoolEvent(t, pool.Name, "Warning NamespaceMissing")

	// The platform creates the namespace: the pool heals on its own (StalledRetry), no edit needed.
	namespace(t, poolNS)
	gitSite(t, tenant, "a", pool.Name)
	gitSite(t, tenant, "b", pool.Name)
	waitPool(t, pool.Name, "rolling out", func(p *v1alpha1.StaticSitePool) error {
		if err := poolCondition(p, v1alpha1.ConditionStalled, "", ""); err != nil {
			return err
		}
		return poolCondition(p, v1alpha1.ConditionReconciling, metav1.ConditionTrue, ReasonRollingOut)
	})
	d := getDeployment(t, poolNS, poolplacement.ServerName(pool.Name))
	completeRollout(t, d)
	pod1, pod2 := runPod(t, d, pool.Name+"-1"), runPod(t, d, pool.Name+"-2")
	fetcher := runPod(t, getDeployment(t, poolNS, poolplacement.FetcherName(pool.Name)), pool.Name+"-fetcher-1")
	s1, s2 := newSitesServer(t, poolNS, pod1.Name), newSitesServer(t, poolNS, pod2.Name)
	f := newSitesServer(t, poolNS, fetcher.Name)

	var index map[string]poolindex.Site
	testenv.Eventually(t, "both sites in the index", func() error {
		var err error
		if index, err = indexIDs(t, pool); err != nil {
			return err
		}
		if len(index) != 2 {
			return fmt.Errorf("index holds %v", keys(index))
		}
		return nil
	})
	a, b := poolindex.ID(tenant, "a"), poolindex.ID(tenant, "b")
	entryA, entryB := entryRevision(t, index[a]), entryRevision(t, index[b])
	// b's entry without one of its hostnames: the same site value, so a pod with this entry serves b's value and
	// content by its other names but answers 404 by the missing one.
	older := index[b]
	older.Hosts = older.Hosts[1:]
	olderB := entryRevision(t, older)
	served := func(id, entry, bundle string) map[string]any {
		value := sitevalue.Revision(index[id].Value) // the right value: only the entry revision tells pod 2 apart
		return map[string]any{"id": id, "state": "memory", "entryRevision": entry, "valueRevision": value, "contentRevision": bundle[:16]}
	}
	f.answer(map[string]any{"id": a, "commit": commit, "bundle": bundleA},
		map[string]any{"id": b, "commit": commit, "bundle": bundleB},
		map[string]any{"id": "evil.x", "commit": commit, "bundle": bundleB})
	s1.answer(served(a, entryA, bundleA), served(b, entryB, bundleB))
	// Pod 2 has b's entry without one hostname (its value and content are b's), and says it serves a site that is
	// not in the index.
	s2.answer(served(a, entryA, bundleA), served(b, olderB, bundleB), served("evil.x", entryA, bundleA))

	waitBoard(t, b, func(s poolstate.Served) error {
		if s.ServedBy != 1 || s.ReadyPods != 2 || s.Bundle != bundleB || s.Commit != commit || s.Pool != pool.Name {
			return fmt.Errorf("b: %+v, want served by 1 of 2", s)
		}
		return nil
	})
	waitBoard(t, a, func(s poolstate.Served) error {
		if s.ServedBy != 2 || s.ReadyPods != 2 {
			return fmt.Errorf("a: %+v, want served by 2 of 2", s)
		}
		return nil
	})
	if s, ok := board.Get("evil.x"); ok {
		t.Errorf("a site outside the index reached the Board: %+v", s)
	}
	waitPool(t, pool.Name, "sites pending", func(p *v1alpha1.StaticSitePool) error {
		if p.Status.ReadyReplicas != 2 || p.Status.Replicas != 2 || p.Status.Sites != 2 {
			return fmt.Errorf("status %+v", p.Status)
		}
		if err := poolCondition(p, v1alpha1.PoolConditionReady, metav1.ConditionFalse, ReasonSitesPending); err != nil {
			return err
		}
		return poolCondition(p, v1alpha1.ConditionReconciling, metav1.ConditionTrue, ReasonSitesPending)
	})

	// Pod 2 catches up: every site served by every ready pod, the pool is Ready.
	s2.answer(served(a, entryA, bundleA), served(b, entryB, bundleB))
	waitBoard(t, b, func(s poolstate.Served) error {
		if s.ServedBy != 2 {
			return fmt.Errorf("b: %+v, want served by 2", s)
		}
		return nil
	})
	p := waitPool(t, pool.Name, "Ready", func(p *v1alpha1.StaticSitePool) error {
		if err := poolCondition(p, v1alpha1.PoolConditionReady, metav1.ConditionTrue, ReasonAvailable); err != nil {
			return err
		}
		return poolCondition(p, v1alpha1.ConditionReconciling, "", "")
	})
	if !strings.Contains(describe(p), "2 pool pods serve 2 sites") {
		t.Errorf("Ready message: %s", describe(p))
	}
	waitPoolEvent(t, pool.Name, "Normal Available 2 pool pods serve 2 sites")

	// The fetcher fails a site that has no bundle: its failure reaches the Board, and it does not hold the pool
	// back (the site's own status says why).
	f.answer(map[string]any{"id": a, "commit": commit, "bundle": bundleA},
		map[string]any{"id": b, "bundle": "", "error": "RefNotFound: main"})
	waitBoard(t, b, func(s poolstate.Served) error {
		if s.FetchError != "RefNotFound: main" || s.ServedBy != 0 {
			return fmt.Errorf("b: %+v", s)
		}
		return nil
	})
	testenv.Must(t, poolCondition(waitPool(t, pool.Name, "read", func(*v1alpha1.StaticSitePool) error { return nil }),
		v1alpha1.PoolConditionReady, metav1.ConditionTrue, ReasonAvailable))

	// A pod that is no longer ready is not counted.
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(pod2), pod2))
	pod2.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
	testenv.Must(t, k8s.Status().Update(ctx, pod2))
	waitBoard(t, a, func(s poolstate.Served) error {
		if s.ReadyPods != 1 || s.ServedBy != 1 {
			return fmt.Errorf("a: %+v, want served by 1 of 1", s)
		}
		return nil
	})

	// A pod that refused a's tree (with the entry and content the operator expects) does not serve it, and says why.
	refused := served(a, entryA, bundleA)
	refused["state"], refused["error"] = "refused", "3 files, more than maxFiles 1"
	s1.answer(refused, served(b, entryB, bundleB))
	waitBoard(t, a, func(s poolstate.Served) error {
		if s.ServedBy != 0 || s.PodError != pod1.Name+": 3 files, more than maxFiles 1" {
			return fmt.Errorf("a: %+v, want served by none, the pod's refusal said", s)
		}
		return nil
	})
}

// entryRevision is the revision a pool pod reports for entry (poolindex.EntryRevision).
func entryRevision(t *testing.T, entry poolindex.Site) string {
	t.Helper()
	r, err := poolindex.EntryRevision(entry)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// waitBoard polls the Board's entry of site id until check passes.
func waitBoard(t *testing.T, id string, check func(poolstate.Served) error) poolstate.Served {
	t.Helper()
	var s poolstate.Served
	testenv.Eventually(t, "board entry of "+id, func() error {
		var ok bool
		if s, ok = board.Get(id); !ok {
			return fmt.Errorf("%s not on the board", id)
		}
		err := check(s)
		if err != nil && s.Pool != "" { // what the pool's last pass saw: an unreadable pod, a refused write
			p := &v1alpha1.StaticSitePool{}
			if gerr := k8s.Get(context.Background(), client.ObjectKey{Name: s.Pool}, p); gerr == nil {
				err = fmt.Errorf("%w; pool %s: %s", err, s.Pool, describe(p))
			}
		}
		return err
	})
	return s
}
