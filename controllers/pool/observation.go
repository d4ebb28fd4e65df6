package pool

import (
	"context"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// observation is what one pass learns about a pool. The steps fill it in order; deriveStatus turns it into the
// status, recordEvents into events.
type observation struct {
	pool *v1alpha1.StaticSitePool
	now  time.Time
	tun  tunables

	// err is the transient error that stopped the pass (retried with backoff); the steps after it did not run.
	err error
	// namespaceMissing: spec.namespace does not exist; no other step ran.
	namespaceMissing bool
	// rejected is the first object the API server refused or that is not the pool's (Stalled).
	rejected *reconcile.Problem

	// admitted are the sites admitted to the pool with their entries, sorted by id (in the index unless
	// unmirrored); refused the sites that asked for the pool and were refused, with why.
	admitted []admittedSite
	refused  []refusedSite

	// shardsWritten are the index shards this pass created or changed; indexRevision names the whole index.
	shardsWritten []int
	indexRevision string
	// mirrorsWritten and mirrorsDeleted count this pass's mirror writes; unmirrored are the admitted sites (by
	// id) some of whose mirrors do not exist yet (a later batch writes them): out of the index until then.
	mirrorsWritten, mirrorsDeleted int
	unmirrored                     map[string]bool

	deployment *appsv1.Deployment // the server Deployment as the cache has it; nil before it exists
	// serverReplicas is the server Deployment's replicas this pass applies (step_drain.go); drain its scale-down
	// waiting for the pool sites' slices, nil when the pass removes no pod.
	serverReplicas int32
	drain          *drainObservation
	// released: the terminating pods whose held drain this pass released (step_release.go), for the events.
	released []releasedPod

	// served: what the pods and the fetcher said, per site id (step_served.go); nil until that step ran.
	served map[string]poolstate.Served
	// readyPods: ready pool server pods; unreadable: those (and the fetcher) whose /sites could not be read.
	readyPods  int32
	unreadable []string
	// indexLags: the pods that read the index whose /sites this pass read (ready server pods, the running
	// fetcher), with how many sites of the index each answer lacks (step_served.go), for the re-tell
	// (step_retell.go).
	indexLags []indexLag
	// scale: the pool autoscaler's reading and decision (step_scale.go); nil without spec.autoscaling or before
	// reconcileServed ran.
	scale *scaleObservation

	requeueAfter time.Duration
}

// admittedSite is a site of the index.
type admittedSite struct {
	site  *v1alpha1.StaticSite
	entry poolindex.Site
}

// refusedSite is a site that asked for the pool and is not in its index.
type refusedSite struct {
	namespace, name string
	refusal         *poolplacement.Refusal
}

func (o *observation) requeue(d time.Duration) {
	if o.requeueAfter == 0 || d < o.requeueAfter {
		o.requeueAfter = d
	}
}

func (o *observation) reject(p *reconcile.Problem) {
	if o.rejected == nil {
		o.rejected = p
	}
}

// step is one sub-reconciler; an error stops the pass and is retried with backoff.
type step func(ctx context.Context, o *observation) error
