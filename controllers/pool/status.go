package pool

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// Condition reasons of a pool besides the Stalled ones (apply.go).
const (
	ReasonAvailable    = "Available"
	ReasonRollingOut   = "RollingOut"
	ReasonSitesPending = "SitesPending"
	ReasonPodsUnread   = "PodsUnreadable"
	ReasonDraining     = "Draining"
)

// deriveStatus is the whole status of a pool from one pass's observation, in one place. A pass stopped by a
// transient error keeps the status it read (it is retried); otherwise the counts are the pass's and the conditions
// follow kstatus: Stalled (a person must act), else Ready with Reconciling its abnormal-true mirror.
func deriveStatus(pool *v1alpha1.StaticSitePool, o *observation) v1alpha1.StaticSitePoolStatus {
	st := *pool.Status.DeepCopy()
	if o.err != nil {
		return st
	}
	st.ObservedGeneration = pool.Generation
	conds := reconcile.NewConditions(&st.Conditions, pool.Generation, o.now)
	if o.namespaceMissing {
		msg := fmt.Sprintf("namespace %q does not exist: the platform creates it (the operator does not); the pool's objects go there", pool.Spec.Namespace)
		conds.Set(v1alpha1.ConditionStalled, metav1.ConditionTrue, ReasonNamespaceMissing, msg)
		conds.Set(v1alpha1.PoolConditionReady, metav1.ConditionFalse, ReasonNamespaceMissing, msg)
		conds.Remove(v1alpha1.ConditionReconciling)
		return st
	}
	st.Sites, st.RefusedSites = int32(len(o.admitted)), int32(len(o.refused))
	st.IndexRevision = o.indexRevision
	st.Autoscaling = autoscalingStatus(pool, o.scale, o.now)
	st.Replicas, st.ReadyReplicas = 0, 0
	if d := o.deployment; d != nil {
		st.Replicas, st.ReadyReplicas = d.Status.Replicas, d.Status.ReadyReplicas
	}
	if p := o.rejected; p != nil {
		conds.SetProblem(v1alpha1.ConditionStalled, metav1.ConditionTrue, p)
		conds.SetProblem(v1alpha1.PoolConditionReady, metav1.ConditionFalse, p)
		conds.Remove(v1alpha1.ConditionReconciling)
		return st
	}
	conds.Remove(v1alpha1.ConditionStalled)
	reason, msg := progress(pool, o)
	if reason == ReasonAvailable {
		conds.Set(v1alpha1.PoolConditionReady, metav1.ConditionTrue, reason, msg)
		conds.Remove(v1alpha1.ConditionReconciling)
		return st
	}
	conds.Set(v1alpha1.PoolConditionReady, metav1.ConditionFalse, reason, msg)
	conds.Set(v1alpha1.ConditionReconciling, metav1.ConditionTrue, reason, msg)
	return st
}

// progress is where the pool stands: its pods rolled out and ready, then every site served by every ready pod.
func progress(pool *v1alpha1.StaticSitePool, o *observation) (reason, message string) {
	want := replicasOf(pool)
	d := o.deployment
	switch dr := o.drain; {
	case d == nil:
		return ReasonRollingOut, "the server Deployment is being created"
	case dr != nil && !dr.done:
		return ReasonDraining, fmt.Sprintf("scaling down from %d to %d pool pods: %s leaving the sites' EndpointSlices first (%d of %d still list them)",
			dr.from, dr.to, strings.Join(dr.pods, ", "), dr.listing, dr.slices)
	case d.Status.ObservedGeneration < d.Generation || d.Status.UpdatedReplicas < want || d.Status.ReadyReplicas < want ||
		d.Status.AvailableReplicas < want || d.Status.Replicas > want:
		return ReasonRollingOut, fmt.Sprintf("%d of %d pool pods updated and ready", min(d.Status.UpdatedReplicas, d.Status.ReadyReplicas), want)
	case len(o.unreadable) > 0:
		return ReasonPodsUnread, fmt.Sprintf("/sites could not be read: %s", o.unreadable[0])
	}
	if n := pendingSites(o); n > 0 {
		return ReasonSitesPending, fmt.Sprintf("%d of %d sites are not yet served by every ready pool pod (%d)", n, len(o.admitted), o.readyPods)
	}
	return ReasonAvailable, fmt.Sprintf("%d pool pods serve %d sites", o.readyPods, len(o.admitted))
}
