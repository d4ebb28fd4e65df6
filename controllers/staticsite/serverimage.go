package staticsite

// Moving sites to a new default server image a few at a time.
//
// The default server image (--server-image) follows the operator's version, so an operator upgrade changes the pod
// template of every site that runs it. Applied at once, every one of those Deployments surges a pod at the same
// time, and on nodes with the static CPU manager the exclusive CPUs the surge pods need run out. The gate below lets
// at most ServerImageRolloutConcurrency sites roll to a new default image at a time; a site waiting for its turn
// keeps its current image in the desired Deployment (every other change still applies) and reports
// Reconciling=True, ServerImageUpgradeQueued.
//
// The gate decides from the world on every pass, never from counters kept in memory, so an operator restart keeps
// the queue where it was:
//   - a site is moving while its Deployment's server container carries the new default image and the Deployment's
//     rollout is not complete (a new site counts too until it is rolled out: it also needs fresh CPUs);
//   - a site is waiting while it runs on the default image (no spec.server.image, no spec.content.image) and its
//     Deployment carries another image;
//   - waiting sites move in namespace/name order, skipping the ones that are Stalled (they could not roll anyway and
//     must not hold the others back).
//
// A moving site that does not complete its rollout (the new image does not start, no CPU left) holds its slot
// for a bounded time only: once its Deployment passes its progress deadline (progressDeadlineSeconds, 600 s), or
// the site is Stalled for any other reason, it is stuck and no longer counts as moving, so one broken site cannot
// freeze every other site's upgrade; the waiting sites' message counts the stuck ones it skipped. A stuck site
// stays on the new image (rolling it back is a person's call) and reports Stalled with the Deployment's reason.
// Setting the concurrency to 0 lifts the gate.

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

const (
	// DefaultServerImageRolloutConcurrency is the operator's default for --server-image-rollout-concurrency.
	DefaultServerImageRolloutConcurrency = 1
	// eventServerImageUpgrade is recorded when a site's Deployment starts moving to the new default server image.
	eventServerImageUpgrade = "ServerImageUpgrade"
)

// serverImageChoice is the server image a pass puts into the desired Deployment.
type serverImageChoice struct {
	image string // the image for desired.Deployment
	from  string // the image the site moves away from in this pass; "" when it does not move
}

// queuePlace is where one waiting site stands in the queue for the new default image.
type queuePlace struct {
	admit  bool // the site may move now
	ahead  int  // waiting sites before it in the queue
	moving int  // sites rolling to the new image now
	stuck  int  // sites on the new image that are stuck (see above): they hold no place
}

// siteRollout is one site with a Deployment, as the gate sees it.
type siteRollout struct {
	site      types.NamespacedName
	image     string // the server container's image in the Deployment's template
	rolledOut bool   // the Deployment's rollout is complete
	queues    bool   // the site runs the default image and is not Stalled: it waits in line when image differs
	stuck     bool   // the site is Stalled or its Deployment passed its progress deadline: it holds no place
}

// placeInQueue is the gate's decision for site, which runs an image other than target: how many sites of world
// (every site with a Deployment) are moving to target, how many waiting ones come before it, and whether it may
// move with limit sites moving at a time (limit <= 0: no limit). Admitting only the first free places of one fixed
// order keeps two deciders agreeing even when one of them has not seen the other's last move yet: the site that
// moved is then still first in line in its view, and takes the place it took in reality.
func placeInQueue(target string, limit int, site types.NamespacedName, world []siteRollout) queuePlace {
	var p queuePlace
	for _, s := range world {
		switch {
		case s.image == target && !s.rolledOut && s.stuck:
			p.stuck++
		case s.image == target && !s.rolledOut:
			p.moving++
		case s.image != target && s.queues && s.site != site && before(s.site, site):
			p.ahead++
		}
	}
	p.admit = limit <= 0 || p.ahead < limit-p.moving
	return p
}

// before orders sites by namespace, then name.
func before(a, b types.NamespacedName) bool {
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	return a.Name < b.Name
}

// rolloutWorld joins the sites with their Deployments. A Deployment being deleted, or whose site is gone or does
// not control it, is not a site's and takes no place.
func rolloutWorld(sites []v1alpha1.StaticSite, deployments []appsv1.Deployment) []siteRollout {
	byKey := make(map[types.NamespacedName]*v1alpha1.StaticSite, len(sites))
	for i := range sites {
		byKey[types.NamespacedName{Namespace: sites[i].Namespace, Name: sites[i].Name}] = &sites[i]
	}
	world := make([]siteRollout, 0, len(deployments))
	for i := range deployments {
		d := &deployments[i]
		key := types.NamespacedName{Namespace: d.Namespace, Name: d.Name}
		site := byKey[key]
		if site == nil || !d.DeletionTimestamp.IsZero() || !metav1.IsControlledBy(d, site) {
			continue
		}
		stalled := meta.IsStatusConditionTrue(site.Status.Conditions, v1alpha1.ConditionStalled)
		ro := deploymentRollout(d)
		world = append(world, siteRollout{site: key, image: serverImageOf(d), rolledOut: ro.done && ro.exact,
			queues: usesDefaultServerImage(site) && !stalled, stuck: stalled || ro.stalled})
	}
	return world
}

// usesDefaultServerImage: the site's pods run the operator's default server image. Sites with spec.server.image or
// spec.content.image run their own image, which an operator upgrade does not change.
func usesDefaultServerImage(site *v1alpha1.StaticSite) bool {
	return site.Spec.Server.Image == "" && desired.SourceOf(site) != v1alpha1.ContentSourceImage
}

// serverImageOf is the image of a Deployment's server container, "" when it has none.
func serverImageOf(d *appsv1.Deployment) string {
	for _, c := range d.Spec.Template.Spec.Containers {
		if c.Name == sitechild.ContainerName {
			return c.Image
		}
	}
	return ""
}

// chooseServerImage picks the server image of the desired Deployment. A site that would move to a new default
// image moves only when the gate admits it; else it keeps its current image, and st says it is queued.
//
// Admissions are serialized: the decision is taken under serverImageMu, confirmed against the API server (the cache
// may not show the previous admission's write yet), and the mutex stays locked until the caller has applied the
// Deployment and calls release. Each admission therefore sees every earlier one, whatever MaxConcurrentReconciles
// is, and no more than the limit ever move. Waiting sites, the common case, decide from the cache alone.
func (r *Reconciler) chooseServerImage(ctx context.Context, st *observation) (choice serverImageChoice, release func(), err error) {
	release = func() {}
	site, target := st.site, r.ServerImage
	choice.image = target
	if !usesDefaultServerImage(site) {
		return choice, release, nil // the site's own image wins in serverContainer
	}
	live := &appsv1.Deployment{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, live); err != nil {
		if apierrors.IsNotFound(err) {
			return choice, release, nil // a new site starts on the current image at once
		}
		return choice, release, err
	}
	current := serverImageOf(live)
	if current == "" || current == target || !metav1.IsControlledBy(live, site) {
		return choice, release, nil // nothing to move (a Deployment that is not the site's is refused when applied)
	}
	choice.from = current
	limit := r.ServerImageRolloutConcurrency
	if limit <= 0 {
		return choice, release, nil
	}

	r.serverImageMu.Lock()
	unlock := r.serverImageMu.Unlock
	place, err := r.queuePlaceOf(ctx, r.Client, site, limit)
	if err == nil && place.admit {
		place, err = r.queuePlaceOf(ctx, r.directReader(), site, limit)
	}
	if err != nil || !place.admit {
		unlock()
		if err != nil {
			return choice, release, fmt.Errorf("decide the server image roll-out: %w", err)
		}
		st.serverImageQueued = fmt.Sprintf("keeps server image %s while waiting to move to %s: %d site(s) ahead in the queue, %d of at most %d moving now",
			current, target, place.ahead, place.moving, limit)
		if place.stuck > 0 {
			st.serverImageQueued += fmt.Sprintf(" (%d stuck site(s) on the new image skipped: Stalled or past their rollout's progress deadline)", place.stuck)
		}
		st.requeue(st.tun.serverImageQueueRetry)
		return serverImageChoice{image: current}, release, nil
	}
	return choice, unlock, nil
}

// queuePlaceOf lists the operator's Deployments through deployments (the cache, or the API server) and the sites
// from the cache, and places site in the queue. Every waiting site does this each ServerImageQueueRetry: the cache
// hands out its own objects instead of copies (UnsafeDisableDeepCopy), which the gate only reads.
func (r *Reconciler) queuePlaceOf(ctx context.Context, deployments ctrl.Reader, site *v1alpha1.StaticSite, limit int) (queuePlace, error) {
	ds := &appsv1.DeploymentList{}
	if err := deployments.List(ctx, ds, ctrl.MatchingLabels{sitechild.LabelName: sitechild.ServerAppName, v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue},
		ctrl.UnsafeDisableDeepCopy); err != nil {
		return queuePlace{}, err
	}
	sites := &v1alpha1.StaticSiteList{}
	if err := r.List(ctx, sites, ctrl.UnsafeDisableDeepCopy); err != nil {
		return queuePlace{}, err
	}
	key := types.NamespacedName{Namespace: site.Namespace, Name: site.Name}
	return placeInQueue(r.ServerImage, limit, key, rolloutWorld(sites.Items, ds.Items)), nil
}

// recordServerImageMove records the event of a site whose Deployment just started moving to the new image.
func (r *Reconciler) recordServerImageMove(site *v1alpha1.StaticSite, choice serverImageChoice, res applyResult) {
	if choice.from != "" && res == applyUpdated {
		r.Recorder.Eventf(site, corev1.EventTypeNormal, eventServerImageUpgrade, "Moving to server image %s (from %s)", choice.image, choice.from)
	}
}
