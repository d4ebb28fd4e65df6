package staticsite

// The Reconciler: what the operator gives it (clients, clock, scraper, readers), its settings (the operator's flags
// and the tests' short intervals), what it keeps across passes, and the settings resolved once per pass (tunables).

import (
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
	"hyperstatic.dev/hyperstatic/internal/retrybudget"
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
	// pins is what the pin's fast path knows of each Git site's fetcher (pinpath.go, gitcontent/pinnow.go): set up
	// by SetupWithManager when GitReader can pin, nil otherwise.
	pins *gitcontent.PinTargets
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
	// StalledRetriesPerSecond bounds the periodic retries of all Stalled sites together (0:
	// DefaultStalledRetriesPerSecond): past StalledRetry × this many Stalled sites, each is retried less often
	// (internal/retrybudget), so that a problem stalling every site does not spend the operator's API budget.
	StalledRetriesPerSecond float64
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
	// Pools is what the pool controller (controllers/pool) learns of each pool site from the pool's pods and
	// fetcher: the site controller reads a pool site's status.placement and Placed from it, and wakes a site when
	// its entry changes (Events). Nil (the pool controller does not run, tests that are not about pools): a site
	// asking for a pool is refused (reason PoolsNotRunning). See pool.go.
	Pools *poolstate.Board

	optional *optionalWatches // watches of HTTPRoutes, PodMonitors and Certificates, started once their CRDs are seen
	// crdCaches hold the optional children's CRDs, by name (optionalcrds.go): set up by SetupWithManager.
	crdCaches map[string]cache.Cache

	serverImageMu sync.Mutex // serializes the admissions of sites to a new ServerImage (chooseServerImage)

	stalledOnce sync.Once
	stalled     *retrybudget.Budget // the Stalled sites and their retries' budget (stalledBudget)

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

// The defaults of the Reconciler's intervals, each where a field of 0 means it (tunables).
const (
	// DefaultStalledRetry is how often a Stalled site is tried again when StalledRetry is not set.
	DefaultStalledRetry = time.Minute
	// DefaultStalledRetriesPerSecond is the most periodic retries a second of all Stalled sites together when
	// StalledRetriesPerSecond is not set: a tenth of the manager's default API budget for one kind of object
	// (--kube-api-qps 50) when every retry is refused the same kind of write (a quota on Services, a webhook on
	// Deployments); its other writes find their objects unchanged in the cache.
	// Up to 300 Stalled sites are each retried every StalledRetry (a minute); 10,000 every 33 minutes.
	DefaultStalledRetriesPerSecond = 5
	// DefaultContentRefresh is how often a site whose pod could be read is read again when ContentRefresh is not set.
	DefaultContentRefresh = time.Minute
	// defaultScrapeRetry is how soon a pod whose metrics could not be read is tried again.
	defaultScrapeRetry = 15 * time.Second
	// DefaultSiteValueRetry is how soon a pass runs again while ready pods still serve an older site value, when
	// SiteValueRetry is not set: the kubelet refreshes an annotated pod's mount within a second or two.
	DefaultSiteValueRetry = 2 * time.Second
	// DefaultTLSRecheck is how often a site with spec.tls reads its Secret again when TLSRecheck is not set. The
	// operator does not watch Secrets (see reconcileTLS), so this bounds how stale TLSReady can be after a rotation.
	DefaultTLSRecheck = time.Minute
	// DefaultServerImageQueueRetry is how often a waiting site checks for its turn when ServerImageQueueRetry is
	// not set. The turn comes when another site's rollout completes, which only wakes that other site.
	DefaultServerImageQueueRetry = 10 * time.Second
)

// tunables are the Reconciler's intervals with "0 means the default" resolved, in one place.
type tunables struct {
	stalledRetry, scrapeRetry, contentRefresh, serverImageQueueRetry, tlsRecheck, siteValueRetry time.Duration
	gitRefresh                                                                                   time.Duration // 0: the site's interval
}

// directReader reads around the cache (see APIReader).
func (r *Reconciler) directReader() ctrl.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
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
