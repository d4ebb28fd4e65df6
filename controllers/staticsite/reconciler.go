// Package staticsite reconciles StaticSites: Reconcile (this file) runs a pass's steps in order (step_*.go), each
// filling its part of the observation (observation.go); deriveStatus (status.go) turns it into the status and its
// conditions in one place; apply.go applies a child only when the fields the operator owns differ. What the
// children look like is package desired; Git content is package gitcontent, capacity and the performance gate
// package capacitygate (each with its contract at its top). docs/staticsite.md says when each child is created or
// updated.
package staticsite

import (
	"context"
	"errors"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
	"hyperstatic.dev/hyperstatic/internal/retrybudget"
)

// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites,verbs=get;list;watch
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites/status,verbs=get;update
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile runs one pass (the shared skeleton, internal/reconcile): the clock read once, the tenancy policy, the
// steps in order (each fills its part of the observation), then the status derived in one place (deriveStatus),
// written only when it changed, and the events of its transitions recorded once the write is in.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrlreconcile.Request) (ctrlreconcile.Result, error) {
	logger := log.FromContext(ctx)
	site := &v1alpha1.StaticSite{}
	if err := r.Get(ctx, req.NamespacedName, site); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetSite(req.NamespacedName)
			return ctrlreconcile.Result{}, nil
		}
		return ctrlreconcile.Result{}, err
	}
	if !site.DeletionTimestamp.IsZero() {
		return ctrlreconcile.Result{}, nil // the garbage collector deletes the children through their owner references
	}
	before := site.DeepCopy()
	o := r.newObservation(site)
	if vs := r.policy().CheckSite(site); len(vs) > 0 {
		o.refused = &problem{Reason: v1alpha1.ReasonPolicyViolation, Message: vs.Error()}
	} else if o.err = r.placeSite(ctx, o); o.err == nil && o.refused == nil { // pool.go
		for _, s := range r.stepsFor(o) {
			if o.err = s(ctx, o); o.err != nil {
				break
			}
		}
	}

	status := deriveStatus(site, o)
	r.retryStalled(o, status)
	changed := !equality.Semantic.DeepEqual(site.Status, status)
	site.Status = status
	if err := reconcile.WriteStatus(ctx, r, site, changed, func() {
		r.recordTransitions(before, site)
		r.recordCapacityEvents(site, &o.capacity)
	}); err != nil {
		if apierrors.IsConflict(err) {
			logger.V(1).Info("status changed meanwhile; requeueing")
			return ctrlreconcile.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrlreconcile.Result{}, errors.Join(o.err, err)
	}
	if o.err != nil {
		return ctrlreconcile.Result{}, o.err
	}
	// A measurement's children go only once its result is in the status (step_capacity.go).
	if err := r.deleteObjects(ctx, o.capacity.Cleanup); err != nil {
		return ctrlreconcile.Result{}, err
	}
	return ctrlreconcile.Result{RequeueAfter: o.requeueAfter}, nil
}

// steps are a pass's steps, in their order: each fills its part of the observation (observation.go) from what the
// ones before it found, and an error stops the pass (retried with backoff).
func (r *Reconciler) steps() []step {
	return []step{
		r.reconcileHostnames,        // which of spec.hostnames the site holds
		r.reconcileContent,          // the content source: revision, size, the pods' memory
		r.reconcileGitFetcher,       // Git: the fetcher's objects, the commit it published (gitcontent)
		r.reconcileCertificate,      // spec.tls.issuerRef: the cert-manager Certificate, CertificateReady
		r.reconcileTLS,              // the TLS Secret: TLSReady
		r.reconcileAccess,           // spec.server.access: the htpasswd Secret the pods mount (AccessApplied)
		r.reconcileSiteValue,        // the site value's ConfigMap, before any pod that mounts it
		r.reconcileDeployment,       // the server pods (the performance gate may hold the template: capacitygate)
		r.reconcileService,          // the Service in front of them
		r.reconcilePoolSlice,        // a site leaving a pool: the pool's EndpointSlice until its own pods serve (step_pool.go)
		r.reconcileDisruptionBudget, // their PodDisruptionBudget
		r.reconcileRoute,            // Ingress or HTTPRoute for the hostnames held
		r.reconcilePodMonitor,       // spec.monitoring
		r.reconcileNetworkPolicy,    // spec.networkPolicy
		r.reconcilePods,             // the pods: pull and load failures, status.content, CPU pinning
		r.reconcilePodAnnouncements, // tell each pod the new site value and ConfigMap content revisions (podannounce.go)
		r.reconcileSiteValuePods,    // read which site value each ready pod serves
		r.reconcileGitPullers,       // Git: which commit each ready pod serves
		r.reconcileCapacity,         // capacity measurement, last: it needs the rollout's state (capacitygate)
	}
}

// stepsFor is the pass's steps: a site a pool serves has steps of its own (step_pool.go); every other site, one
// moving into or out of a pool included, the dedicated ones.
func (r *Reconciler) stepsFor(o *observation) []step {
	if o.pool != nil && o.pool.phase == phasePooled {
		return r.poolSteps()
	}
	return r.steps()
}

// retryStalled: a Stalled site is tried again every StalledRetry, so a problem fixed outside the operator's watches
// (a quota, a webhook, RBAC, a foreign object removed, a policy loosened by an operator restart) heals without an
// edit; less often when so many are Stalled that their retries would pass StalledRetriesPerSecond together
// (internal/retrybudget).
func (r *Reconciler) retryStalled(o *observation, status v1alpha1.StaticSiteStatus) {
	key := o.site.Namespace + "/" + o.site.Name
	if meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionStalled) {
		o.requeue(r.stalledBudget().Stuck(key))
		return
	}
	r.stalledBudget().Unstuck(key)
}

// stalledBudget is the Stalled sites' retry budget, made on first use from the Reconciler's settings.
func (r *Reconciler) stalledBudget() *retrybudget.Budget {
	r.stalledOnce.Do(func() {
		r.stalled = &retrybudget.Budget{Min: r.tunables().stalledRetry,
			PerSecond: reconcile.OrDefault(r.StalledRetriesPerSecond, DefaultStalledRetriesPerSecond)}
	})
	return r.stalled
}

// newObservation starts a pass's observation of site: the clock read once, the tunables resolved once.
func (r *Reconciler) newObservation(site *v1alpha1.StaticSite) *observation {
	return &observation{site: site, now: reconcile.Now(r.Clock), tun: r.tunables()}
}
