package pool

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/poolread"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsitepools,verbs=get;list;watch
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsitepools/status,verbs=get;update
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsitepools/finalizers,verbs=update
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// DefaultClusterDomain is the cluster's DNS domain a pool site's Service names end with (operator flag
// --cluster-domain).
const DefaultClusterDomain = "cluster.local"

// Defaults of the tunables.
const (
	// DefaultServedRetry: how soon a pass runs again, at the latest, while a site is not yet served by every ready
	// pool pod (sooner in the seconds after the pods were told of a new index: served_retry.go).
	DefaultServedRetry = 5 * time.Second
	// DefaultServedRefresh: how often a pool whose sites are all served reads its pods again (a new Git commit
	// reaches the fetcher and the pods without any Kubernetes event).
	DefaultServedRefresh = time.Minute
	// DefaultStalledRetry: how often a Stalled pool is tried again (a namespace created, a foreign object removed).
	DefaultStalledRetry = 30 * time.Second
	// DefaultMirrorsPerPass bounds the mirrors one pass writes (step_mirrors.go): each costs two ConfigMap requests
	// of the operator's 50/s, so a batch takes about 8 s, after which the pass publishes what it placed and the
	// next batch follows a second later.
	DefaultMirrorsPerPass = 200
)

// Reconciler reconciles StaticSitePools.
type Reconciler struct {
	client.Client
	// APIReader reads around the manager's cache (which holds only the operator's labelled objects): a foreign
	// object with a pool object's name, the tenants' ConfigMaps a mirror copies, the namespace.
	APIReader client.Reader
	Recorder  record.EventRecorder
	// Clock is read once per pass (nil: the real clock).
	Clock clock.PassiveClock
	// ServerImage and ContentAgentImage are the operator's default images (flags --server-image and
	// --content-agent-image).
	ServerImage, ContentAgentImage string
	// OperatorNamespace is where the operator runs: the fetcher's NetworkPolicy admits it ("" leaves it out).
	OperatorNamespace string
	// ClusterDomain ends the Service host names in the index (DefaultClusterDomain when empty).
	ClusterDomain string
	// Reader reads the pool pods' and the fetcher's /sites (poolread.HTTPReader).
	Reader poolread.Reader
	// Releaser ends the held drain of a terminating pool pod no slice sends new connections (step_release.go;
	// poolread.HTTPReader); nil: none is released, each pod's hold (poolplacement.DrainHold) ends it.
	Releaser poolread.Releaser
	// Board receives what the pool serves, per site, for the site controller; nil: nothing is published.
	Board *poolstate.Board
	// Policy is the tenancy policy (operator flag --tenancy-policy), the StaticSite controller's: a site that breaks
	// it is kept out of the index, as it gets no child of its own (nil: tenancy.Unrestricted).
	Policy *tenancy.Policy
	// ServedRetry, ServedRefresh, StalledRetry: see the defaults above (0: the default).
	ServedRetry, ServedRefresh, StalledRetry time.Duration
	// MirrorsPerPass: see DefaultMirrorsPerPass (0: the default).
	MirrorsPerPass int
	// Scraper reads the admin port of the own pods of a site placed automatically, for its traffic
	// (step_traffic.go); nil: their traffic is unknown, so such a site is never demoted.
	Scraper podmetrics.Scraper
	// TrafficInterval is how often a pool with sites placed automatically is read at least (0:
	// DefaultTrafficInterval); TrafficMinInterval the shortest time between two readings that give a rate (0:
	// pooltraffic.DefaultMinInterval).
	TrafficInterval, TrafficMinInterval time.Duration

	// referenced is the metadata-only cache of every ConfigMap (tenants' sources and the pool's mirrors).
	referenced cache.Cache

	memoryMu sync.Mutex
	memory   map[string]*poolMemory // per pool: what its passes keep (memory.go)
}

// tunables are the Reconciler's settings with their defaults resolved, once per pass.
type tunables struct {
	servedRetry, servedRefresh, stalledRetry, trafficInterval time.Duration
	clusterDomain                                             string
	mirrorsPerPass                                            int
}

func (r *Reconciler) tunables() tunables {
	d := r.ClusterDomain
	if d == "" {
		d = DefaultClusterDomain
	}
	return tunables{
		servedRetry:     reconcile.OrDefault(r.ServedRetry, DefaultServedRetry),
		servedRefresh:   reconcile.OrDefault(r.ServedRefresh, DefaultServedRefresh),
		stalledRetry:    reconcile.OrDefault(r.StalledRetry, DefaultStalledRetry),
		trafficInterval: reconcile.OrDefault(r.TrafficInterval, DefaultTrafficInterval),
		clusterDomain:   d,
		mirrorsPerPass:  reconcile.OrDefault(r.MirrorsPerPass, DefaultMirrorsPerPass),
	}
}

// Reconcile runs one pass: the clock read once, the steps in order, the status derived in one place and written
// only when it changed, the events recorded once the write is in.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrlreconcile.Request) (ctrlreconcile.Result, error) {
	pool := &v1alpha1.StaticSitePool{}
	if err := r.Get(ctx, req.NamespacedName, pool); err != nil {
		if apierrors.IsNotFound(err) {
			r.publish(req.Name, nil) // its sites are no longer served by it
			r.forget(req.Name)
			return r.releaseAll(ctx, req.Name)
		}
		return ctrlreconcile.Result{}, err
	}
	if !pool.DeletionTimestamp.IsZero() {
		// The garbage collector deletes its objects through their owner references; its pods need not wait.
		return r.releaseAll(ctx, pool.Name)
	}
	before := pool.DeepCopy()
	o := &observation{pool: pool, now: reconcile.Now(r.Clock), tun: r.tunables()}
	for _, s := range r.steps() {
		if o.err = s(ctx, o); o.err != nil || o.namespaceMissing {
			break
		}
	}
	status := deriveStatus(pool, o)
	changed := !equality.Semantic.DeepEqual(pool.Status, status)
	pool.Status = status
	if o.err == nil {
		r.keepEvents(pool.Name, drainEvents(o.drain, o.now))
		r.keepEvents(pool.Name, releaseEvents(o.released))
	}
	if err := reconcile.WriteStatus(ctx, r, pool, changed, func() { r.recordEvents(before, pool, o) }); err != nil {
		if apierrors.IsConflict(err) {
			return ctrlreconcile.Result{RequeueAfter: 200 * time.Millisecond}, nil
		}
		if apierrors.IsNotFound(err) {
			return ctrlreconcile.Result{}, nil // deleted during the pass: its deletion queues the pass that forgets it
		}
		return ctrlreconcile.Result{}, errors.Join(o.err, err)
	}
	r.keepScaleWindow(o) // only now: the decision it led to is published
	r.flushEvents(pool)
	if o.err != nil {
		return ctrlreconcile.Result{}, o.err
	}
	if o.namespaceMissing || o.rejected != nil {
		o.requeue(o.tun.stalledRetry)
	}
	return ctrlreconcile.Result{RequeueAfter: o.requeueAfter}, nil
}

// steps are a pass's steps in their order.
func (r *Reconciler) steps() []step {
	return []step{
		r.reconcileNamespace, // spec.namespace exists (else Stalled, nothing else runs)
		r.reconcileSites,     // the sites asking for the pool: admitted (entries) or refused
		r.reconcileMirrors,   // ConfigMap sites' content mirrored into the pool namespace, a batch a pass
		r.reconcileIndex,     // the index shards' ConfigMaps (sites mirrored), only the changed ones written
		r.deleteLeftMirrors,  // the mirrors of sites no longer in the index
		r.reconcileFetcher,   // the fetcher: its identity, Deployment, Service, NetworkPolicy
		r.reconcileDrain,     // the server replicas: a scale-down waits until the sites' slices drop its pods
		r.releaseDrained,     // terminating server pods no slice sends to: their held drain released
		r.reconcileServer,    // the server pods: Deployment and PodDisruptionBudget
		r.deliverIndex,       // the pods that read the index told of a new one (their kubelet remounts it)
		r.reconcileServed,    // what the pods and the fetcher serve, published to the Board
		r.retellIndex,        // the pods told of the index that still lack part of it told again, a bounded few times
	}
}

// publish gives the Board what pool serves (nil: nothing any more).
func (r *Reconciler) publish(pool string, sites map[string]poolstate.Served) {
	if r.Board != nil {
		r.Board.Publish(pool, sites)
	}
}

// policy is the Reconciler's tenancy policy; nil means the single-tenant one.
func (r *Reconciler) policy() tenancy.Policy {
	if r.Policy == nil {
		return tenancy.Unrestricted()
	}
	return *r.Policy
}
