// Package staticsite reconciles StaticSites into a Deployment, a Service and a PodDisruptionBudget, and reports
// their state in conditions. docs/staticsite.md says when each child is created or updated.
package staticsite

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// Reconciler reconciles a StaticSite.
type Reconciler struct {
	ctrl.Client
	// Recorder records events on StaticSites.
	Recorder record.EventRecorder
	// Clock stamps condition transitions; tests inject a fake one.
	Clock clock.PassiveClock
	// Scraper reads a ready pod's metrics, for the Pinned and ContentInMemory conditions and status.content.
	Scraper podmetrics.Scraper
	// ServerImage is the default server image (operator flag --server-image).
	ServerImage string
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
	samples   map[types.UID]cachedSample // a pod's CPU set never changes: scrape it once

	contentMu    sync.Mutex
	contentKnown map[types.NamespacedName]metav1.ConditionStatus // last known ContentInMemory (True/False), for its events
}

type cachedSample struct {
	site   types.NamespacedName
	sample podmetrics.Sample
}

// state is what one reconcile pass learns; summarize turns it into conditions.
type state struct {
	site       *v1alpha1.StaticSite
	content    Content
	memory     resource.Quantity
	deployment *appsv1.Deployment // as this pass's apply left it; nil when it did not exist
	// templateChanged: this pass's apply changed the pod template, so the Deployment's status (until the Deployment
	// controller observes the new generation) describes pods of the old template.
	templateChanged bool
	pods            []corev1.Pod // the site's pods that are not terminating

	contentProblem *problem // ContentAvailable=False reason and message
	contentReason  string   // ContentAvailable=True reason and message
	contentMessage string
	rejected       *problem // an owned object the API server refused (Stalled)
	skipDeployment bool     // content that cannot be mounted: leave the running Deployment alone
	pinned         metav1.Condition
	served         *v1alpha1.ServedContent // a ready pod's content reading; nil: none, see notMeasured
	notMeasured    string                  // why there is no reading (the ContentInMemory=Unknown message)
	requeueAfter   time.Duration

	// serverImageQueued: the site waits for its turn to move to a new default server image (the Reconciling message).
	serverImageQueued string

	// Exposure (nil: the spec field is unset, the condition goes): TLSReady, RouteApplied and PodMonitorApplied,
	// and the public URLs of the route once it exists.
	tls        *metav1.Condition
	route      *metav1.Condition
	podMonitor *metav1.Condition
	publicURLs []string
}

type problem struct{ reason, message string }

// DefaultStalledRetry is how often a Stalled site is tried again when StalledRetry is not set.
const DefaultStalledRetry = time.Minute

// conflictRetry is how soon a pass whose status write lost a race (with the autoscaler) runs again.
const conflictRetry = 200 * time.Millisecond

// reject records a child the API server refused or that is not the site's; the first one found is reported.
func (st *state) reject(p *problem) {
	if st.rejected == nil {
		st.rejected = p
	}
}

func (st *state) requeue(d time.Duration) {
	if st.requeueAfter == 0 || d < st.requeueAfter {
		st.requeueAfter = d
	}
}

// step is one sub-reconciler. Steps run in order; an error stops the pass and is retried with backoff. Problems a
// retry cannot fix are recorded in state instead, and end as conditions.
type step func(ctx context.Context, st *state) error

// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites,verbs=get;list;watch
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites/status,verbs=get;update
// +kubebuilder:rbac:groups=hyperstatic.dev,resources=staticsites/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Reconcile brings a site's children to the desired state and rebuilds the site's status from the world.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	site := &v1alpha1.StaticSite{}
	if err := r.Get(ctx, req.NamespacedName, site); err != nil {
		if apierrors.IsNotFound(err) {
			r.forgetSite(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !site.DeletionTimestamp.IsZero() {
		return reconcile.Result{}, nil // the garbage collector deletes the children through their owner references
	}
	before := site.DeepCopy()

	st := &state{site: site}
	var err error
	if vs := r.policy().CheckSite(site); len(vs) > 0 {
		r.refuseByPolicy(site, vs)
		st.requeue(r.stalledRetry()) // a policy loosened by an operator restart heals without an edit too
	} else {
		for _, s := range []step{r.reconcileContent, r.reconcileTLS, r.reconcileDeployment, r.reconcileService, r.reconcileDisruptionBudget,
			r.reconcileRoute, r.reconcilePodMonitor, r.reconcileNetworkPolicy, r.reconcilePods} {
			if err = s(ctx, st); err != nil {
				break
			}
		}
		r.summarize(st, err)
		r.reportServerImageQueue(st, before)
	}
	r.recordTransitions(before, site)

	if !equality.Semantic.DeepEqual(before.Status, site.Status) {
		// Update, not patch: the resourceVersion guards against overwriting the autoscaler's status fields.
		if uerr := r.Status().Update(ctx, site); uerr != nil {
			if apierrors.IsConflict(uerr) {
				logger.V(1).Info("status changed meanwhile; requeueing")
				return reconcile.Result{RequeueAfter: conflictRetry}, nil
			}
			return reconcile.Result{}, errors.Join(err, uerr)
		}
	}
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: st.requeueAfter}, nil
}

func (r *Reconciler) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

// +kubebuilder:rbac:groups="",resources=configmaps,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;list;watch

// reconcileContent finds out whether the content source exists, its revision and size. The ConfigMaps and the claim
// a site names are the user's: the manager's cache does not hold them (internal/managercache), so they are read
// directly, by name; their metadata-only watch (setup.go) triggers the pass.
func (r *Reconciler) reconcileContent(ctx context.Context, st *state) error {
	site := st.site
	c := site.Spec.Content
	switch SourceOf(site) {
	case v1alpha1.ContentSourceImage:
		st.content = ImageContent(v1alpha1.ContentSourceImage, c.Image, site.Spec.Server.ImagePullPolicy)
		st.contentReason, st.contentMessage = v1alpha1.ReasonImageSpecified, "the pods run image "+c.Image
	case v1alpha1.ContentSourceConfigMaps:
		var found []corev1.ConfigMap
		var missing []string
		for _, ref := range c.ConfigMaps {
			cm := corev1.ConfigMap{}
			if err := r.directReader().Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: ref.Name}, &cm); err != nil {
				if !apierrors.IsNotFound(err) {
					return err
				}
				missing = append(missing, ref.Name)
				continue
			}
			found = append(found, cm)
		}
		st.content = ConfigMapsContent(site, found)
		if len(missing) > 0 {
			st.contentProblem = &problem{v1alpha1.ReasonConfigMapNotFound, fmt.Sprintf("ConfigMap %q not found in namespace %s", missing, site.Namespace)}
		} else {
			st.contentReason = v1alpha1.ReasonConfigMapsFound
			st.contentMessage = fmt.Sprintf("%d ConfigMap(s), %d bytes, projected into %s", len(found), st.content.Size, v1alpha1.SiteRoot)
		}
	case v1alpha1.ContentSourceImageVolume:
		st.content = ImageContent(v1alpha1.ContentSourceImageVolume, c.ImageVolume.Reference, c.ImageVolume.PullPolicy)
		if ok, why := r.imageVolumeSupported(); !ok {
			st.contentProblem = &problem{v1alpha1.ReasonImageVolumeUnsupported, why}
			st.skipDeployment = true
		} else {
			st.contentReason, st.contentMessage = v1alpha1.ReasonImageVolumeSpecified, "image "+c.ImageVolume.Reference+" is mounted at "+v1alpha1.SiteRoot
		}
	case v1alpha1.ContentSourcePersistentVolumeClaim:
		claim := corev1.PersistentVolumeClaim{}
		err := r.directReader().Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: c.PersistentVolumeClaim.ClaimName}, &claim)
		switch {
		case apierrors.IsNotFound(err):
			st.content = Content{Source: v1alpha1.ContentSourcePersistentVolumeClaim, Size: -1}
			st.contentProblem = &problem{v1alpha1.ReasonClaimNotFound, fmt.Sprintf("PersistentVolumeClaim %q not found in namespace %s", c.PersistentVolumeClaim.ClaimName, site.Namespace)}
		case err != nil:
			return err
		case claim.Status.Phase == corev1.ClaimLost:
			st.content = ClaimContent(&claim)
			st.contentProblem = &problem{v1alpha1.ReasonClaimLost, fmt.Sprintf("PersistentVolumeClaim %q lost its volume", claim.Name)}
		default:
			st.content = ClaimContent(&claim)
			if p := claimAccessProblem(site, &claim); p != nil {
				st.contentProblem = p
				st.skipDeployment = true // the one pod that can mount the claim keeps serving
				break
			}
			st.contentReason = v1alpha1.ReasonClaimFound
			st.contentMessage = fmt.Sprintf("PersistentVolumeClaim %q (%s) is mounted read-only at %s", claim.Name, claim.Status.Phase, v1alpha1.SiteRoot)
		}
	default:
		st.contentProblem = &problem{v1alpha1.ReasonNoContentSource, "spec.content sets no source"}
		st.skipDeployment = true
	}
	st.memory = MemoryFor(site, st.content)
	return nil
}

// imageVolumeSupported: the "image" volume source exists from Kubernetes 1.31 (behind the ImageVolume feature
// gate until it is on by default); older API servers drop the field.
func (r *Reconciler) imageVolumeSupported() (bool, string) {
	if r.ServerVersion == nil {
		return true, ""
	}
	v, err := r.ServerVersion()
	if err != nil {
		return false, "cannot read the API server version: " + err.Error()
	}
	major, minor := parseVersion(v)
	if major < 1 || (major == 1 && minor < 31) {
		return false, fmt.Sprintf("the cluster runs Kubernetes %s.%s; the image volume source needs 1.31 or later with the ImageVolume feature gate", v.Major, v.Minor)
	}
	return true, ""
}

func parseVersion(v *version.Info) (major, minor int) {
	_, _ = fmt.Sscanf(v.Major, "%d", &major)
	_, _ = fmt.Sscanf(v.Minor, "%d", &minor) // "31+" on some providers: Sscanf stops at '+'
	return major, minor
}

// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;patch

// reconcileDeployment applies the Deployment that runs the server pods.
func (r *Reconciler) reconcileDeployment(ctx context.Context, st *state) error {
	if st.skipDeployment {
		return nil
	}
	site := st.site
	key := types.NamespacedName{Namespace: site.Namespace, Name: site.Name}
	if st.content.Source == v1alpha1.ContentSourceImageVolume {
		if ok, err := r.imageVolumeKept(ctx, st, key); err != nil || !ok {
			return err
		}
	}
	serverImage, release, err := r.chooseServerImage(ctx, st)
	if err != nil {
		return err
	}
	defer release() // after the apply: the next admission must see this one
	live := &appsv1.Deployment{}
	desired := DesiredDeployment(site, serverImage.image, st.content, st.memory)
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "Deployment", live, desired, key, extractDeployment)
	if err != nil {
		return r.deploymentRefused(st, err)
	}
	switch res {
	case applyUnchanged:
		st.deployment = live
	case applyUpdated:
		// live is the Deployment before the apply: its status describes the old template's pods. Read the applied
		// object so the rollout is judged against the new generation, not reported done by the old ReplicaSet.
		applied := &appsv1.Deployment{}
		if err := r.directReader().Get(ctx, key, applied); err != nil {
			return fmt.Errorf("read the applied Deployment: %w", err)
		}
		st.deployment = applied
		st.templateChanged = !equality.Semantic.DeepEqual(live.Spec.Template, applied.Spec.Template)
	}
	r.recordApply(site, "Deployment", res)
	r.recordServerImageMove(site, serverImage, res)
	return nil
}

func (r *Reconciler) stalledRetry() time.Duration {
	if r.StalledRetry > 0 {
		return r.StalledRetry
	}
	return DefaultStalledRetry
}

// directReader reads around the cache (see APIReader).
func (r *Reconciler) directReader() ctrl.Reader {
	if r.APIReader != nil {
		return r.APIReader
	}
	return r.Client
}

// notOwned records a child that exists under the site's name without being the site's: the site is Stalled until
// someone removes or renames it (periodic retries notice, see StalledRetry).
func notOwned(st *state, err error) bool {
	var e *notOwnedError
	if !errors.As(err, &e) {
		return false
	}
	st.reject(&problem{v1alpha1.ReasonNotOwned, e.Error()})
	return true
}

// childRefused turns an apply error of a child into Stalled when only a person can fix it (a foreign object of
// that name: NotOwned; a refusal by the API server: reason), else returns it to retry the pass.
func childRefused(st *state, kind, reason string, err error) error {
	if notOwned(st, err) {
		return nil
	}
	if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
		st.reject(&problem{reason, err.Error()})
		return nil
	}
	return fmt.Errorf("apply %s: %w", kind, err)
}

// deploymentRefused turns an apply error into a condition when only a person can fix it, else returns it.
func (r *Reconciler) deploymentRefused(st *state, err error) error {
	if notOwned(st, err) {
		return nil
	}
	if !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("apply Deployment: %w", err)
	}
	if st.content.Source == v1alpha1.ContentSourceImageVolume && apierrors.IsInvalid(err) {
		st.contentProblem = &problem{v1alpha1.ReasonImageVolumeUnsupported, "the API server refused the image volume (is the ImageVolume feature gate on?): " + err.Error()}
	} else {
		st.reject(&problem{v1alpha1.ReasonDeploymentRejected, err.Error()})
	}
	return nil
}

// imageVolumeKept makes sure the API server keeps an image volume before the Deployment is written. With the
// ImageVolume feature gate off (the default up to Kubernetes 1.34) the API server silently drops the volume and
// its mounts, which would start servers with an empty site. A server-side dry run shows what would be stored;
// it is only needed while the live Deployment does not already carry the image volume.
func (r *Reconciler) imageVolumeKept(ctx context.Context, st *state, key types.NamespacedName) (bool, error) {
	live := &appsv1.Deployment{}
	if err := r.Get(ctx, key, live); ctrl.IgnoreNotFound(err) != nil {
		return false, err
	}
	if hasImageVolume(live.Spec.Template.Spec.Volumes) {
		return true, nil
	}
	// A raw apply patch, so the answer decodes into a fresh typed object (decoding into the apply configuration
	// would keep the volumes the answer leaves out).
	body, err := json.Marshal(DesiredDeployment(st.site, r.ServerImage, st.content, st.memory))
	if err != nil {
		return false, err
	}
	probe := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name}}
	if err := r.Patch(ctx, probe, ctrl.RawPatch(types.ApplyPatchType, body), ctrl.FieldOwner(FieldOwner), ctrl.ForceOwnership, ctrl.DryRunAll); err != nil {
		return false, r.deploymentRefused(st, err)
	}
	if hasImageVolume(probe.Spec.Template.Spec.Volumes) {
		return true, nil
	}
	st.contentProblem = &problem{v1alpha1.ReasonImageVolumeUnsupported, "the API server drops image volumes: the ImageVolume feature gate is off " +
		"(it is off by default up to Kubernetes 1.34); the Deployment is left unchanged"}
	return false, nil
}

func hasImageVolume(vs []corev1.Volume) bool {
	for _, v := range vs {
		if v.Name == siteVolumeName && v.Image != nil {
			return true
		}
	}
	return false
}

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch

// reconcileService applies the Service in front of the pods.
func (r *Reconciler) reconcileService(ctx context.Context, st *state) error {
	site := st.site
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "Service", &corev1.Service{}, DesiredService(site),
		types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, extractService)
	if err != nil {
		return childRefused(st, "Service", v1alpha1.ReasonServiceRejected, err)
	}
	r.recordApply(site, "Service", res)
	return nil
}

// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch;delete

// reconcileDisruptionBudget applies the PodDisruptionBudget, or deletes the one it made when none is wanted.
func (r *Reconciler) reconcileDisruptionBudget(ctx context.Context, st *state) error {
	site := st.site
	key := types.NamespacedName{Namespace: site.Namespace, Name: site.Name}
	desired := DesiredPodDisruptionBudget(site)
	if desired == nil {
		live := &policyv1.PodDisruptionBudget{}
		if err := r.Get(ctx, key, live); err != nil {
			return ctrl.IgnoreNotFound(err)
		}
		if !metav1.IsControlledBy(live, site) {
			return nil // not ours: leave it
		}
		if err := r.Delete(ctx, live, ctrl.Preconditions{UID: &live.UID}); ctrl.IgnoreNotFound(err) != nil {
			return fmt.Errorf("delete PodDisruptionBudget: %w", err)
		}
		r.Recorder.Eventf(site, corev1.EventTypeNormal, eventDeleted, "Deleted PodDisruptionBudget %s: %d replica(s) need no budget", site.Name, replicasOf(site))
		return nil
	}
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "PodDisruptionBudget", &policyv1.PodDisruptionBudget{}, desired, key, extractPodDisruptionBudget)
	if err != nil {
		return childRefused(st, "PodDisruptionBudget", v1alpha1.ReasonPodDisruptionBudgetRejected, err)
	}
	r.recordApply(site, "PodDisruptionBudget", res)
	return nil
}

func (r *Reconciler) recordApply(site *v1alpha1.StaticSite, kind string, res applyResult) {
	switch res {
	case applyCreated:
		r.Recorder.Eventf(site, corev1.EventTypeNormal, eventCreated, "Created %s %s", kind, site.Name)
	case applyUpdated:
		r.Recorder.Eventf(site, corev1.EventTypeNormal, eventUpdated, "Updated %s %s to the desired state", kind, site.Name)
	}
}
