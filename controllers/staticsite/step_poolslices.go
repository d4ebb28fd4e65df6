package staticsite

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// clusterSliceManagedBy is the endpointslice.kubernetes.io/managed-by value of the EndpointSlices the cluster's
// EndpointSlice controller makes for a Service with a selector; mirroredSliceManagedBy that of the slices its
// EndpointSliceMirroring controller makes from an Endpoints object of a Service without one.
const (
	clusterSliceManagedBy  = "endpointslice-controller.k8s.io"
	mirroredSliceManagedBy = "endpointslicemirroring-controller.k8s.io"
)

// +kubebuilder:rbac:groups="",resources=endpoints,verbs=get;delete

// removeClusterSlices, a pool step right after the Service lost its selector, deletes the EndpointSlices the
// cluster's EndpointSlice controller made for the site's own pods while the Service selected them.
//
// Why the operator must: that controller ignores a Service without a selector, so it neither updates nor removes the
// slices it made before (kubernetes/kubernetes#118376, open). They keep listing the site's former pods as ready
// after those pods are gone, and kube-proxy keeps sending a share of the Service's new connections to their dead
// addresses, where a client waits out its connect timeout: a site demoted by automatic placement (or moved into a
// pool by hand) answered its first request after the move with nothing after 30 s in the e2e step. The pool's own
// slice (applied before the Service changed) then holds every endpoint.
//
// Those slices are not in the manager's cache (it holds the operator's objects only), so this reads them from the
// API server, and only in the passes that can find one: the pass that took the selector away, and any pass while
// the site's own Deployment or any of its own pods still exists. The pods matter: the cluster's controller may not
// have seen the Service lose its selector when this pass deletes its slices, and then it makes them again, with the
// pods' addresses, and never removes them (seen once in kind, 2026-12-03: the first request after a demotion timed
// out again). So while a pod of its own remains (terminating included: the manager's cache has the site's pods),
// the pass looks again every sliceHandOverPoll; once they are all gone, the cluster's controller has long handled
// the Service's change (it made the slices from those pods' updates).
//
// The same holds for the Service's Endpoints object: the cluster's Endpoints controller kept it while the Service
// selected the site's pods, and leaves it with their addresses once the selector is gone. The EndpointSliceMirroring
// controller then mirrors it, as it does an Endpoints object made by hand for a Service without a selector, into a
// slice of its own listing the former pods as ready (seen in a local CI run, 2026-12-03: the first request after a
// demotion timed out, kube-proxy having sent it to a mirrored slice's dead address beside the pool's slice). So the
// pass deletes that Endpoints object, and the mirrored slices with the cluster's.
func (r *Reconciler) removeClusterSlices(ctx context.Context, st *observation) error {
	site, p := st.site, st.pool
	if st.rejected != nil {
		return nil // the Service or the pool's slice was refused: the Service still selects the site's pods
	}
	if p.servicePooled {
		own := &appsv1.Deployment{}
		err := r.Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, own)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("read the Deployment: %w", err)
		}
		ownDeployment := err == nil && metav1.IsControlledBy(own, site)
		pods := &corev1.PodList{}
		if err := r.List(ctx, pods, client.InNamespace(site.Namespace), client.MatchingLabels(sitechild.SelectorLabels(site))); err != nil {
			return fmt.Errorf("list the site's pods: %w", err)
		}
		if !ownDeployment && len(pods.Items) == 0 {
			return nil // no pods of its own since an earlier pass: nothing left to find
		}
		if len(pods.Items) > 0 {
			st.requeue(sliceHandOverPoll) // look again until its last pod is gone
		}
	}
	if err := r.removeLeftEndpoints(ctx, site); err != nil {
		return err
	}
	for _, managedBy := range []string{clusterSliceManagedBy, mirroredSliceManagedBy} {
		list := &discoveryv1.EndpointSliceList{}
		if err := r.directReader().List(ctx, list, client.InNamespace(site.Namespace), client.MatchingLabels{
			discoveryv1.LabelServiceName: site.Name, discoveryv1.LabelManagedBy: managedBy,
		}); err != nil {
			return fmt.Errorf("list the Service's EndpointSlices: %w", err)
		}
		for i := range list.Items {
			s := &list.Items[i]
			if !ownedByService(s, site.Name) {
				continue
			}
			uid := s.UID
			if err := r.Delete(ctx, s, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
				return fmt.Errorf("delete EndpointSlice %s: %w", s.Name, err)
			}
			r.Recorder.Eventf(site, corev1.EventTypeNormal, eventDeleted,
				"Deleted EndpointSlice %s: the cluster's slice of the site's former pods (the Service no longer selects them, and Kubernetes leaves it behind)", s.Name)
		}
	}
	return nil
}

// removeLeftEndpoints deletes the Endpoints object of the site's Service, which only the cluster's Endpoints
// controller makes (for the Service while it had a selector); the pool's slice is what serves the Service now.
// Read as metadata: its addresses are not needed to know it must go.
func (r *Reconciler) removeLeftEndpoints(ctx context.Context, site *v1alpha1.StaticSite) error {
	ep := &metav1.PartialObjectMetadata{}
	ep.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Endpoints"))
	err := r.directReader().Get(ctx, types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, ep)
	if err != nil {
		return client.IgnoreNotFound(err)
	}
	uid := ep.UID
	if err := r.Delete(ctx, ep, client.Preconditions{UID: &uid}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete Endpoints %s: %w", site.Name, err)
	}
	r.Recorder.Eventf(site, corev1.EventTypeNormal, eventDeleted,
		"Deleted Endpoints %s: the cluster's list of the site's former pods, which it leaves behind and mirrors into a slice once the Service has no selector", site.Name)
	return nil
}

// ownedByService: the slice's controller is the Service named (the cluster's EndpointSlice controller sets it).
func ownedByService(s *discoveryv1.EndpointSlice, service string) bool {
	ref := metav1.GetControllerOf(s)
	return ref != nil && ref.Kind == "Service" && ref.APIVersion == "v1" && ref.Name == service
}
