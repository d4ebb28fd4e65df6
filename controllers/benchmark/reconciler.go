// Package benchmark reconciles Benchmarks: it writes the k6 script into a ConfigMap, runs an Indexed Job of k6
// pods, samples the target server's metrics at step boundaries, and, when the Job ends, merges every pod's results
// into a results ConfigMap and a compact status. docs/benchmark-controller.md is the contract: when each child is
// created, changed and deleted, what each step observes, and how the conditions are derived.
package benchmark

import (
	"context"
	"time"

	"hyperstatic.dev/hyperstatic/internal/reconcile"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// Defaults of the Reconciler's tunables.
const (
	// DefaultStartDelay is the time between the Job's creation and step 0: the k6 pods are scheduled and started
	// in it, then all start loading together.
	DefaultStartDelay = 15 * time.Second
	// targetWait is how long a Benchmark waits for its target (e.g. a StaticSite still starting) before failing,
	// when spec.timeout does not say.
	targetWait = 10 * time.Minute
	// pollInterval re-checks a running benchmark even when nothing is due (the Job's events also trigger passes).
	pollInterval = 10 * time.Second
	// conflictRetry is how soon a pass whose status write lost a race runs again.
	conflictRetry = 200 * time.Millisecond
)

// Reconciler reconciles a Benchmark.
type Reconciler struct {
	client.Client
	// Recorder records events on Benchmarks.
	Recorder record.EventRecorder
	// Clock is the only time source of the controller, read once per pass through reconcile.Now; tests inject a fake
	// one. Nil means the real clock.
	Clock clock.PassiveClock
	// Image is the default k6 image (operator flag --k6-image).
	Image string
	// Logs reads k6 pods' output; Content lists a StaticSite's files; Scraper reads its pods' metrics.
	Logs    LogSource
	Content ContentLister
	Scraper podmetrics.Scraper
	// StartDelay overrides DefaultStartDelay.
	StartDelay time.Duration
	// APIReader reads around the cache (mgr.GetAPIReader()): to tell a deleted Job from a cache that lags, and to
	// check who owns the results ConfigMap before writing it. Nil means the Client.
	APIReader client.Reader
	// Policy is the tenancy policy (operator flag --tenancy-policy); nil: tenancy.Unrestricted. See tenancy.go.
	Policy *tenancy.Policy
	// ResultBytes bounds the result blocks of all the pods of a run together (0: DefaultResultBytes). See collect.go.
	ResultBytes int
}

// tunables are the Reconciler's settings with "0 means the default" resolved, in one place.
type tunables struct {
	startDelay  time.Duration
	resultBytes int
}

func (r *Reconciler) tunables() tunables {
	return tunables{
		startDelay:  reconcile.OrDefault(r.StartDelay, DefaultStartDelay),
		resultBytes: reconcile.OrDefault(r.ResultBytes, DefaultResultBytes),
	}
}

// direct reads from the API server, around the cache.
func (r *Reconciler) direct() client.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// step is one sub-reconciler: it acts on one child and records what it saw in the observation. An error stops
// the pass (it is retried with backoff and the status is left as it was); a problem no retry can fix is recorded
// as o.failure instead, and ends as conditions.
type step func(ctx context.Context, b *v1alpha1.Benchmark, o *observation) error

// stepsFor is the fixed, ordered list of steps of a pass. Until the outcome is recorded in the status, a pass
// moves the run forward; once it is (Complete or Failed is True) the outcome is a persisted fact, never derived
// again (the Job that proved it may be gone), and a pass only applies spec.cleanup.
func (r *Reconciler) stepsFor(b *v1alpha1.Benchmark) []step {
	if outcomeRecorded(b.Status) {
		return []step{r.cleanup}
	}
	return []step{r.checkPolicy, r.resolveTarget, r.ensureScript, r.ensureResults, r.ensureJob, r.watchSite, r.sample, r.collect}
}

// Reconcile runs one pass: the steps in order, then the status, derived in one place from what they observed and
// written only when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &v1alpha1.Benchmark{}
	if err := r.Get(ctx, req.NamespacedName, b); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if b.DeletionTimestamp != nil {
		return ctrl.Result{}, nil // owner references take the Job, its pods and the ConfigMaps away
	}
	o := &observation{now: reconcile.Now(r.Clock)}
	for _, s := range r.stepsFor(b) {
		if o.halted() {
			break
		}
		if err := s(ctx, b, o); err != nil {
			return ctrl.Result{}, err
		}
	}

	status := deriveStatus(b, o)
	before := b.DeepCopy()
	changed := !equality.Semantic.DeepEqual(b.Status, status)
	b.Status = status
	if err := reconcile.WriteStatus(ctx, r, b, changed, func() { r.recordTransitions(ctx, before, b) }); err != nil {
		if apierrors.IsConflict(err) {
			log.FromContext(ctx).V(1).Info("the Benchmark changed meanwhile; requeueing")
			return ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{RequeueAfter: requeueAfter(b, o)}, nil
}

// getFresh reads through the cache and, when the cache does not have the object, from the API server: a child
// created by the previous pass may not have reached the cache yet, and the Job cache of the operator only holds
// Jobs labelled as its own.
func (r *Reconciler) getFresh(ctx context.Context, key client.ObjectKey, obj client.Object) error {
	err := r.Get(ctx, key, obj)
	if apierrors.IsNotFound(err) {
		return r.direct().Get(ctx, key, obj)
	}
	return err
}
