package staticsite

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// The steps of a site a pool serves (pool.go), and the one step the dedicated steps add for a site leaving a pool.

// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=delete
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=delete

// sliceHandOverPoll is how soon a site leaving a pool looks again for the cluster's EndpointSlice of its own pods
// (the operator does not watch the cluster's slices).
const sliceHandOverPoll = 2 * time.Second

// poolSteps are the steps of a site the pool serves, in their order.
func (r *Reconciler) poolSteps() []step {
	return []step{
		r.reconcileHostnames,   // which of spec.hostnames the site holds: the pool's index carries them
		r.reconcilePoolContent, // the ConfigMaps exist; a Git site's revision from the Board
		r.reconcilePoolService, // the EndpointSlice of the pool's pods, then the Service without a selector
		r.removeClusterSlices,  // the cluster's slices of the site's former pods, which Kubernetes leaves behind
		r.reconcileRoute,       // Ingress or HTTPRoute to the Service, as for any site
		r.removeOwnPods,        // the site's own children, once the Service no longer reaches them
	}
}

// reconcilePoolContent: a ConfigMap site's ConfigMaps are read as for a dedicated site (ContentAvailable; the pool
// controller mirrors them); a Git site's content is the pool fetcher's, from the Board.
func (r *Reconciler) reconcilePoolContent(ctx context.Context, st *observation) error {
	site, p := st.site, st.pool
	if g := site.Spec.Content.Git; g != nil {
		st.content = desired.Content{Source: v1alpha1.ContentSourceGit, Size: -1}
		c := poolGitContent(p)
		p.gitContent = &c
		if p.known && p.served.Commit != "" {
			st.content.Revision = gitcontent.RevisionString(&gitrevision.Revision{Ref: g.Ref, Commit: p.served.Commit})
		}
		return nil
	}
	if err := r.reconcileContent(ctx, st); err != nil {
		return err
	}
	// What the pool serves: the sha256 of the mirrors' data, as the fetcher reports it ("" while not reported).
	st.content.Revision = ""
	if p.known && len(p.served.Commit) >= 16 {
		st.content.Revision = "sha256:" + p.served.Commit[:16]
	}
	return nil
}

// poolGitContent is a pool Git site's ContentAvailable, from what the pool's fetcher reported.
func poolGitContent(p *poolPass) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionContentAvailable}
	s := p.served
	switch {
	case p.known && s.FetchError != "":
		c.Status, c.Reason = metav1.ConditionFalse, v1alpha1.ReasonGitFetchFailed
		c.Message = "the pool's fetcher: " + s.FetchError
		if s.Bundle != "" {
			c.Message += "; the pool serves the last good commit"
		}
	case p.known && s.Bundle != "":
		c.Status, c.Reason = metav1.ConditionTrue, v1alpha1.ReasonGitRevisionFetched
		c.Message = fmt.Sprintf("the fetcher of StaticSitePool %s published commit %s", p.name, short(s.Commit))
	default:
		c.Status, c.Reason = metav1.ConditionUnknown, v1alpha1.ReasonGitFetchPending
		c.Message = fmt.Sprintf("the fetcher of StaticSitePool %s has not published the site's content yet", p.name)
	}
	return c
}

func short(commit string) string {
	if len(commit) > 12 {
		return commit[:12]
	}
	return commit
}

// reconcilePoolService gives the Service the pool's pods: the EndpointSlice first, so that the Service, once its
// selector is gone, never has no endpoints.
func (r *Reconciler) reconcilePoolService(ctx context.Context, st *observation) error {
	if ok, err := r.applyPoolSlice(ctx, st); !ok || err != nil {
		return err
	}
	site := st.site
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "Service", &corev1.Service{}, desired.PoolService(site),
		types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, extractService)
	if err != nil {
		return childRefused(st, "Service", v1alpha1.ReasonServiceRejected, err)
	}
	r.recordApply(site, "Service", res)
	return nil
}

// applyPoolSlice applies the site's EndpointSlice of its pool's server pods (desired.PoolEndpointsOf: the ready
// ones, or while there is none those holding their drain); false when it was refused or is not the site's
// (recorded: Stalled), and the Service must wait. A pool that does not exist (a site leaving a deleted pool) leaves
// the slice as it is.
func (r *Reconciler) applyPoolSlice(ctx context.Context, st *observation) (bool, error) {
	site, p := st.site, st.pool
	if p.pool == nil {
		return true, nil
	}
	pods, err := r.poolPods(ctx, p.pool)
	if err != nil {
		return false, err
	}
	eps := desired.PoolEndpointsOf(pods)
	key := types.NamespacedName{Namespace: site.Namespace, Name: poolplacement.EndpointSliceName(site)}
	live := &discoveryv1.EndpointSlice{}
	if err := r.Get(ctx, key, live); err == nil && metav1.IsControlledBy(live, site) && live.AddressType != eps.AddressType {
		// An EndpointSlice's address type cannot change. The pool's pods changed IP family: the slice is replaced.
		// No pod to list has no family: the slice keeps its own (an IPv6 slice refuses IPv4, and the site would be
		// stalled until a pod is ready again).
		if len(eps.Pods) == 0 {
			eps.AddressType = live.AddressType
		} else if err := r.deleteOwnedNamed(ctx, r.Client, site, "EndpointSlice", key.Name, &discoveryv1.EndpointSlice{}, "the pool's pods use "+string(eps.AddressType)); err != nil {
			return false, err
		}
	}
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "EndpointSlice", &discoveryv1.EndpointSlice{},
		desired.PoolEndpointSlice(site, p.name, eps), key, extractEndpointSlice)
	if err != nil {
		return false, childRefused(st, "EndpointSlice", v1alpha1.ReasonServiceRejected, err)
	}
	if res == applyCreated {
		// Not every update: the slice follows the pool's pods, and an event per site per pool pod would flood.
		r.recordApplyOf(site, "EndpointSlice", key.Name, res)
	}
	return true, nil
}

func extractEndpointSlice(o client.Object) (any, error) {
	return discoveryv1ac.ExtractEndpointSlice(o.(*discoveryv1.EndpointSlice), sitechild.FieldOwner)
}

// removeOwnPods deletes the children a pool site does not have: its pods' Deployment, its Git fetcher, its
// PodDisruptionBudget, NetworkPolicy and PodMonitor (they select pods it no longer has), its site-value ConfigMap
// (the pool's index carries the value) and any capacity measurement. It runs after the Service went to the pool.
func (r *Reconciler) removeOwnPods(ctx context.Context, st *observation) error {
	site, p := st.site, st.pool
	if st.rejected != nil {
		return nil // the Service or its slice was refused: the site's own pods keep serving
	}
	why := "the site runs in StaticSitePool " + p.name
	for _, c := range []struct {
		kind, name string
		live       client.Object
	}{
		{"Deployment", site.Name, &appsv1.Deployment{}},
		{"PodDisruptionBudget", site.Name, &policyv1.PodDisruptionBudget{}},
		{"NetworkPolicy", site.Name, &networkingv1.NetworkPolicy{}},
		{"ConfigMap", sitevalue.ConfigMapName(site.Name), &corev1.ConfigMap{}},
	} {
		if err := r.deleteOwnedNamed(ctx, r.Client, site, c.kind, c.name, c.live, why); err != nil {
			return err
		}
	}
	if err := r.gitStep(st).Remove(ctx, site, why); err != nil {
		return err
	}
	if meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionPodMonitorApplied) != nil {
		live := &metav1.PartialObjectMetadata{}
		live.SetGroupVersionKind(desired.PodMonitorGVK)
		if err := r.deleteOwned(ctx, r.directReader(), site, "PodMonitor", live, why); err != nil {
			return err
		}
	}
	if err := r.capacityStep().Remove(ctx, site); err != nil {
		return err
	}
	r.prunePodSamples(types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, nil)
	return nil
}

// reconcilePoolSlice, a dedicated step right after the Service's, hands a site leaving a pool back to its own
// pods: while the Service has no selector (reconcileService keeps it so until they are ready) the slice keeps
// following the pool's pods; once the Service selects the site's pods again, the slice goes as soon as the
// cluster's EndpointSlice controller lists a ready one of them (at once for a site scaled to 0).
func (r *Reconciler) reconcilePoolSlice(ctx context.Context, st *observation) error {
	p := st.pool
	if p == nil || p.phase != phaseMovingOut || st.rejected != nil {
		return nil
	}
	site := st.site
	if !p.selectorBack {
		_, err := r.applyPoolSlice(ctx, st)
		return err
	}
	if !p.sliceExists {
		return nil
	}
	if desired.Replicas(site) > 0 {
		ready, err := r.ownEndpointsReady(ctx, site)
		if err != nil {
			return err
		}
		if !ready {
			st.requeue(sliceHandOverPoll)
			return nil
		}
	}
	if err := r.deleteOwnedNamed(ctx, r.Client, site, "EndpointSlice", poolplacement.EndpointSliceName(site), &discoveryv1.EndpointSlice{},
		"the Service selects the site's own ready pods"); err != nil {
		return err
	}
	p.sliceExists = false
	return nil
}

// ownEndpointsReady: a slice of the site's Service made by the cluster's EndpointSlice controller lists a ready
// endpoint. Only that controller's slices count: another's (a mirror of a stale Endpoints object, a tool's) says
// nothing about the site's own pods. They are not the operator's (not in the manager's cache): read directly,
// only while a site leaves a pool.
func (r *Reconciler) ownEndpointsReady(ctx context.Context, site *v1alpha1.StaticSite) (bool, error) {
	list := &discoveryv1.EndpointSliceList{}
	if err := r.directReader().List(ctx, list, client.InNamespace(site.Namespace), client.MatchingLabels{
		discoveryv1.LabelServiceName: site.Name, discoveryv1.LabelManagedBy: clusterSliceManagedBy,
	}); err != nil {
		return false, fmt.Errorf("list the Service's EndpointSlices: %w", err)
	}
	for _, s := range list.Items {
		for _, e := range s.Endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				return true, nil
			}
		}
	}
	return false, nil
}
