// Package autoscaling is Hyperstatic's requests-per-second autoscaler: a controller, separate from the
// StaticSite controller, that scrapes each ready server pod's hyperstatic_requests_total, turns the counters
// into per-pod rates over a sliding window (package rps), runs the HorizontalPodAutoscaler v2 algorithm
// (package hpa) and writes the new replica count through the StaticSite's scale subresource, the path
// `kubectl scale` takes. It acts only on StaticSites with spec.autoscaling set. How it works, and how to use
// an HPA or KEDA instead: docs/autoscaling.md.
package autoscaling

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/autoscaling/hpa"
	"hyperstatic.dev/hyperstatic/controllers/autoscaling/rps"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
)

// staleRetry is how soon a pass that saw a stale cached StaticSite is retried.
const staleRetry = 200 * time.Millisecond

// ControllerName names the controller in logs and metrics, and is the event source.
const ControllerName = "hyperstatic-autoscaler"

// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites,verbs=get;list;watch
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites/scale,verbs=update
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites/status,verbs=get;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconciler decides the replica count of autoscaled StaticSites.
type Reconciler struct {
	client        client.Client
	recorder      record.EventRecorder
	scraper       podmetrics.Scraper
	clock         clock.PassiveClock // read through reconcile.Now, like the other controllers' Clock; nil: the real clock
	interval      time.Duration
	window        time.Duration
	scrapeTimeout time.Duration
	maxConcurrent int

	mu    sync.Mutex
	sites map[types.NamespacedName]*siteState
}

// siteState is what the autoscaler remembers about one StaticSite between passes, as the HPA controller keeps
// recommendations and scale events in memory: it is rebuilt (conservatively, see hpa.State) after a restart.
type siteState struct {
	uid    types.UID
	window *rps.Window
	hpa    hpa.State
	// lastScale is when this process last rescaled the site, kept here too so a lost status write cannot lose it.
	lastScale *metav1.Time
	// lastScaleAt is the same instant at full precision: rates only use samples taken after it.
	lastScaleAt time.Time
	// scaledFrom is the site's resourceVersion this process's last rescale replaced: while the cache still shows
	// it, the cache has not seen the rescale and passes do not decide.
	scaledFrom string
	// pods holds what the autoscaler tracks per ready pod, by podKey; a pod that is not ready is dropped, so its
	// readiness starts over when it is Ready again.
	pods map[string]*podState
	// readyKey identifies the set of ready pods (their UIDs, sorted); readyChanged is the pass that last saw it
	// change. Once a pod has two samples since then, its rate starts there (see Reconciler.rate).
	readyKey     string
	readyChanged time.Time
	// target is the per-pod target last written to status (seeded from the status a new state finds), so a
	// TargetChanged event is recorded once per change even while the cache lags behind the status write.
	target *announcedTarget
}

// podState is one ready pod's history.
type podState struct {
	// readySince is the first pass that found the pod Ready (since it last was not): its rate only uses samples
	// taken since then, so the load it took while joining does not count, and other pods' windows are untouched.
	readySince time.Time
	// failures counts consecutive failed scrapes; skip is how many more passes leave the pod out (backoff).
	failures int
	skip     int
	// lastErr is the last failed scrape's error, reported when no pod could be measured.
	lastErr error
}

// New returns the autoscaler. c should be the manager's client (pods are read from its cache), recorder the
// manager's recorder for ControllerName, scraper podmetrics.NewHTTPScraper() in the operator.
func New(c client.Client, recorder record.EventRecorder, scraper podmetrics.Scraper, opts ...Option) *Reconciler {
	r := &Reconciler{
		client:        c,
		recorder:      recorder,
		scraper:       scraper,
		interval:      DefaultScrapeInterval,
		maxConcurrent: DefaultMaxConcurrentReconciles,
		sites:         map[types.NamespacedName]*siteState{},
	}
	for _, o := range opts {
		o(r)
	}
	if r.window == 0 {
		r.window = DefaultWindowIntervals * r.interval
	}
	if r.scrapeTimeout == 0 {
		r.scrapeTimeout = max(r.interval/2, time.Second)
	}
	return r
}

// SetupWithManager registers the controller. It watches StaticSites for spec changes (generation), changes of
// status.capacity (the StaticSite controller's measurement, which can move the per-pod target), creation and
// deletion; the periodic pass comes from RequeueAfter, so the autoscaler's own status writes do not re-trigger it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("autoscaler").
		For(&v1alpha1.StaticSite{}, builder.WithPredicates(
			predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, capacityChanged))).
		WithOptions(controller.Options{MaxConcurrentReconciles: r.maxConcurrent}).
		Complete(r)
}

// Reconcile is one autoscaler pass for one StaticSite.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	site := &v1alpha1.StaticSite{}
	if err := r.client.Get(ctx, req.NamespacedName, site); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if site.DeletionTimestamp != nil {
		r.forget(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if site.Spec.Autoscaling == nil {
		// The user owns spec.replicas. Only clear what the autoscaler itself reported while it was on.
		r.forget(req.NamespacedName)
		return ctrl.Result{}, r.clearStatus(ctx, req.NamespacedName)
	}

	state := r.stateFor(site)
	pass := r.pass(ctx, site, state)
	if pass.stale {
		return ctrl.Result{RequeueAfter: staleRetry}, nil
	}
	if err := r.writeStatus(ctx, req.NamespacedName, pass); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			log.FromContext(ctx).V(1).Info("status write lost a race; next pass rewrites it", "error", err.Error())
			return ctrl.Result{RequeueAfter: r.interval}, nil
		}
		return ctrl.Result{}, err
	}
	// Recorded after the status write, like every event of this project: it never announces a target status lacks.
	if msg := targetChangeMessage(state.target, pass.status); msg != "" {
		r.recorder.Event(site, corev1.EventTypeNormal, EventReasonTargetChanged, msg)
	}
	if t := announcedFrom(&pass.status); t != nil {
		state.target = t
	}
	return ctrl.Result{RequeueAfter: r.interval}, nil
}

// stateFor is the remembered state of the site, new when the site is new (or re-created under its name).
func (r *Reconciler) stateFor(site *v1alpha1.StaticSite) *siteState {
	key := client.ObjectKeyFromObject(site)
	r.mu.Lock()
	defer r.mu.Unlock()
	s, ok := r.sites[key]
	if !ok || s.uid != site.UID {
		s = &siteState{uid: site.UID, window: rps.New(r.window), pods: map[string]*podState{},
			target: announcedFrom(site.Status.Autoscaling)}
		r.sites[key] = s
	}
	return s
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.sites, key)
}

// podKey keys a pod's samples: its UID, so a pod re-created under the same name starts a new series.
func podKey(p *corev1.Pod) string { return string(p.UID) }
