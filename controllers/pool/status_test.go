package pool

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// deriveStatus, the one place a pool's status comes from, on observations built by hand: every condition is
// consistent with kstatus (Stalled excludes Reconciling, Ready True excludes both), and a pass stopped by an error
// keeps the status it read.
func TestDeriveStatus(t *testing.T) {
	now := time.Date(2026, 12, 2, 0, 0, 0, 0, time.UTC)
	pool := &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 3}}
	rolled := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: 1}, Spec: appsv1.DeploymentSpec{},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2, AvailableReplicas: 2}}
	twoSites := []admittedSite{{}, {}}
	for _, c := range []struct {
		name                      string
		o                         observation
		ready, reconciling, stall string // reasons; "" when absent
		readyTrue                 bool
	}{
		{"namespace missing", observation{namespaceMissing: true}, ReasonNamespaceMissing, "", ReasonNamespaceMissing, false},
		{"rejected", observation{deployment: rolled, rejected: &reconcile.Problem{Reason: ReasonNotOwned, Message: "m"}}, ReasonNotOwned, "", ReasonNotOwned, false},
		{"no Deployment yet", observation{}, ReasonRollingOut, ReasonRollingOut, "", false},
		{"pods unreadable", observation{deployment: rolled, unreadable: []string{"x"}}, ReasonPodsUnread, ReasonPodsUnread, "", false},
		{"sites pending", observation{deployment: rolled, readyPods: 2, admitted: twoSites,
			served: map[string]poolstate.Served{"a.a": {ServedBy: 2, ReadyPods: 2}, "a.b": {ServedBy: 1, ReadyPods: 2}}},
			ReasonSitesPending, ReasonSitesPending, "", false},
		{"a failing fetch does not hold the pool", observation{deployment: rolled, readyPods: 2, admitted: twoSites,
			served: map[string]poolstate.Served{"a.a": {ServedBy: 2, ReadyPods: 2}, "a.b": {ReadyPods: 2, FetchError: "RefNotFound"}}},
			ReasonAvailable, "", "", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.o.pool, c.o.now = pool, now
			st := deriveStatus(pool, &c.o)
			check := func(typ, reason string) {
				t.Helper()
				got := meta.FindStatusCondition(st.Conditions, typ)
				switch {
				case reason == "" && got != nil:
					t.Errorf("%s present: %+v", typ, *got)
				case reason != "" && (got == nil || got.Reason != reason || got.ObservedGeneration != 3):
					t.Errorf("%s = %+v, want reason %s at generation 3", typ, got, reason)
				}
			}
			check(v1alpha1.PoolConditionReady, c.ready)
			check(v1alpha1.ConditionReconciling, c.reconciling)
			check(v1alpha1.ConditionStalled, c.stall)
			if meta.IsStatusConditionTrue(st.Conditions, v1alpha1.PoolConditionReady) != c.readyTrue {
				t.Errorf("Ready True = %v, want %v", !c.readyTrue, c.readyTrue)
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d", st.ObservedGeneration)
			}
		})
	}
	before := v1alpha1.StaticSitePoolStatus{Sites: 7, IndexRevision: "abc"}
	kept := &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Generation: 4}, Status: before}
	if st := deriveStatus(kept, &observation{pool: kept, err: errors.New("transient")}); st.Sites != 7 || st.IndexRevision != "abc" || st.ObservedGeneration != 0 {
		t.Errorf("a failed pass changed the status: %+v", st)
	}
}
