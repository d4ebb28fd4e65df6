// Package staticsite reconciles StaticSites into a Deployment, a Service and a PodDisruptionBudget, and reports
// their state in conditions. docs/staticsite.md says when each child is created or updated.
package staticsite

import (
	"context"
	"errors"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	ctrlreconcile "sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// Reconciler reconciles a StaticSite.
type Reconciler struct {
	ctrl.Client
	// Recorder records events on StaticSites.
	Recorder record.EventRecorder
	// Clock is the controller's time source, read once per pass through reconcile.Now (nil: the real clock);
	// tests inject a fake one.
	Clock clock.PassiveClock
	// Scraper reads a ready pod's metrics, for the Pinned and ContentInMemory conditions and status.content.
	Scraper podmetrics.Scraper
	// ServerImage is the default server image (operator flag --server-image).
	ServerImage string
	// ContentAgentImage is the image of Git sites' fetcher pods and puller sidecars (operator flag
	// --content-agent-image).
	ContentAgentImage string
	// GitReader reads /revision of Git sites' fetcher pods and pullers (gitrevision.HTTPReader); tests point it
	// at real in-process content-agent processes.
	GitReader gitrevision.Reader
	// gitWatch long-polls each Git site's fetcher and wakes the site when it publishes or fails (gitrevision.Watch):
	// set up by SetupWithManager when GitReader can wait (gitrevision.Waiter), nil otherwise.
	gitWatch *gitrevision.Watch
	// GitRefresh is how often a Git site whose pods all serve the fetcher's commit is read again (0: the site's
	// spec.content.git.interval, the pace at which the fetcher itself looks for new commits).
	GitRefresh time.Duration
	// ServerVersion reports the API server's version (discovery), to know whether image volumes exist.
	ServerVersion func() (*version.Info, error)
	// ScrapeRetry is how soon a ready pod whose metrics could not be read is tried again (0: 15 s).
	ScrapeRetry time.Duration
	// ContentRefresh is how often status.content is read again from a pod while one can be read (0:
	// DefaultContentRefresh). See servedcontent.go.
	ContentRefresh time.Duration
	// APIReader reads around the manager's cache, which only holds objects carrying the operator's label: it tells
	// a foreign object with a child's name from a missing one, and gives the Deployment as an apply left it. Nil
	// means the Client (tests that run without a cache).
	APIReader ctrl.Reader
	// SiteValueRetry is how soon a pass runs again while ready pods still serve an older site value (0:
	// DefaultSiteValueRetry). See step_sitevalue.go.
	SiteValueRetry time.Duration
	// StalledRetry is how often a Stalled site is tried again, so a problem fixed outside the operator's watches (a
	// quota, an admission webhook, RBAC, a foreign object removed) heals without an edit (0: DefaultStalledRetry).
	StalledRetry time.Duration
	// ServerImageRolloutConcurrency is how many sites may roll to a new ServerImage at a time (operator flag
	// --server-image-rollout-concurrency); 0 means no limit. See serverimage.go.
	ServerImageRolloutConcurrency int
	// ServerImageQueueRetry is how often a site waiting for its turn to move to a new ServerImage checks again (0:
	// DefaultServerImageQueueRetry).
	ServerImageQueueRetry time.Duration
	// OperatorNamespace is the namespace the operator runs in: a site's NetworkPolicy opens the admin port to it.
	// Empty (the operator runs outside the cluster): no such rule.
	OperatorNamespace string
	// TLSRecheck is how often a site with spec.tls reads its Secret again (0: DefaultTLSRecheck). See tls.go.
	TLSRecheck time.Duration
	// Policy is the tenancy policy (operator flag --tenancy-policy); nil: tenancy.Unrestricted. See tenancy.go.
	Policy *tenancy.Policy

	optional *optionalWatches // watches of HTTPRoutes and PodMonitors, started once their CRDs are seen

	serverImageMu sync.Mutex // serializes the admissions of sites to a new ServerImage (chooseServerImage)

	samplesMu sync.Mutex
	samples   map[types.UID]cachedSample // a pod's CPU set never changes: scrape it once (and see settled.go)
	// siteValues: readings of the site value a pod serves that hold until the ConfigMap changes (step_sitevalue.go).
	siteValues map[types.UID]siteValueSeen

	contentMu    sync.Mutex
	contentKnown map[types.NamespacedName]metav1.ConditionStatus // last known ContentInMemory (True/False), for its events
	servedKnown  map[types.NamespacedName]string                 // Git: the last commit every ready pod served, for GitRevisionServed
}

type cachedSample struct {
	site   types.NamespacedName
	sample podmetrics.Sample
	// restarts is the server container's restart count when the sample was taken (settled.go).
	restarts int32
}

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
	} else {
		for _, s := range []step{r.reconcileHostnames, r.reconcileContent, r.reconcileGitFetcher, r.reconcileTLS, r.reconcileSiteValue, r.reconcileDeployment, r.reconcileService,
			r.reconcileDisruptionBudget, r.reconcileRoute, r.reconcilePodMonitor, r.reconcileNetworkPolicy, r.reconcilePods, r.reconcileSiteValuePods,
			r.reconcileGitPullers, r.reconcileCapacity} {
			if o.err = s(ctx, o); o.err != nil {
				break
			}
		}
	}

	status := deriveStatus(site, o)
	retryStalled(o, status)
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

// retryStalled: a Stalled site is tried again every StalledRetry, so a problem fixed outside the operator's watches
// (a quota, a webhook, RBAC, a foreign object removed, a policy loosened by an operator restart) heals without an
// edit.
func retryStalled(o *observation, status v1alpha1.StaticSiteStatus) {
	if meta.IsStatusConditionTrue(status.Conditions, v1alpha1.ConditionStalled) {
		o.requeue(o.tun.stalledRetry)
	}
}

// newObservation starts a pass's observation of site: the clock read once, the tunables resolved once.
func (r *Reconciler) newObservation(site *v1alpha1.StaticSite) *observation {
	return &observation{site: site, now: reconcile.Now(r.Clock), tun: r.tunables()}
}

// DefaultStalledRetry is how often a Stalled site is tried again when StalledRetry is not set.
const DefaultStalledRetry = time.Minute

// tunables are the Reconciler's intervals with "0 means the default" resolved, in one place.
type tunables struct {
	stalledRetry, scrapeRetry, contentRefresh, serverImageQueueRetry, tlsRecheck, siteValueRetry time.Duration
	gitRefresh                                                                                   time.Duration // 0: the site's interval
}

func (r *Reconciler) tunables() tunables {
	return tunables{
		stalledRetry:          reconcile.OrDefault(r.StalledRetry, DefaultStalledRetry),
		scrapeRetry:           reconcile.OrDefault(r.ScrapeRetry, defaultScrapeRetry),
		contentRefresh:        reconcile.OrDefault(r.ContentRefresh, DefaultContentRefresh),
		serverImageQueueRetry: reconcile.OrDefault(r.ServerImageQueueRetry, DefaultServerImageQueueRetry),
		tlsRecheck:            reconcile.OrDefault(r.TLSRecheck, DefaultTLSRecheck),
		siteValueRetry:        reconcile.OrDefault(r.SiteValueRetry, DefaultSiteValueRetry),
		gitRefresh:            r.GitRefresh,
	}
}

// directReader reads around the cache (see APIReader).
func (r *Reconciler) directReader() ctrl.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}
