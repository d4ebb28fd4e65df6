package staticsite

import (
	"context"
	"errors"
	"fmt"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;patch;delete

// reconcileRoute applies the Ingress or HTTPRoute of spec.route for the hostnames the site holds (the hostname
// step ran first) and deletes the other kind (or both, without spec.route or without a hostname held) when the site
// made it. The outcome is the RouteApplied condition; a problem there never stops the pass nor changes Ready (the
// site still serves in the cluster). A hostname another site holds is left out: RouteApplied=False, reason
// HostnameConflict, naming it and the holder, whether or not a route remains for the others.
func (r *Reconciler) reconcileRoute(ctx context.Context, st *observation) error {
	site := st.site
	var routed, hosts []v1alpha1.Hostname
	var conflicts string
	if h := st.hostnames; h != nil {
		routed = h.routed
		hosts = desired.RouteHosts(site, h.routed, h.previewsHeld)
		// A site that claims its hostnames for its certificate only has no route to report them on
		// (CertificateReady does).
		if len(h.conflicts) > 0 && answersForHostnames(site) {
			conflicts = conflictMessage(h.conflicts)
		}
	}
	ingress, httpRoute := desired.Ingress(site, hosts), desired.HTTPRoute(site, hosts)
	noRoute := func(field string) string {
		if site.Spec.Route != nil && len(hosts) == 0 {
			return "the site holds none of its hostnames"
		}
		return "spec.route names no " + field
	}
	if ingress == nil {
		if err := r.deleteOwned(ctx, r.Client, site, "Ingress", &networkingv1.Ingress{}, noRoute("ingressClassName")); err != nil {
			return err
		}
	}
	// The HTTPRoute is not in the manager's cache: look for one only when the last pass may have left one (it
	// reported a route that was not an Ingress), not on every pass of every site.
	if httpRoute == nil && r.mayHaveHTTPRoute(site) {
		if err := r.deleteOwned(ctx, r.directReader(), site, "HTTPRoute", &gatewayv1.HTTPRoute{}, noRoute("parentRefs")); err != nil {
			return err
		}
	}
	key := types.NamespacedName{Namespace: site.Namespace, Name: site.Name}
	applied := func(reason, kind string) {
		msg := fmt.Sprintf("%s %s routes %v to the Service's http port", kind, site.Name, hosts)
		st.route = &metav1.Condition{Type: v1alpha1.ConditionRouteApplied, Status: metav1.ConditionTrue, Reason: reason, Message: msg}
		if conflicts != "" {
			st.route = &metav1.Condition{Type: v1alpha1.ConditionRouteApplied, Status: metav1.ConditionFalse,
				Reason: v1alpha1.ReasonHostnameConflict, Message: conflicts + "; " + msg}
		}
		st.publicURLs = desired.PublicURLs(site, routed)
	}
	switch {
	case ingress != nil:
		res, err := applyChild(ctx, r.Client, r.directReader(), site, "Ingress", &networkingv1.Ingress{}, ingress, key, extractIngress)
		if err != nil {
			return r.routeRefused(st, "Ingress", err)
		}
		r.recordApply(site, "Ingress", res)
		applied(v1alpha1.ReasonIngressApplied, "Ingress")
	case httpRoute != nil:
		// Read around the cache: an informer would hold every HTTPRoute of the cluster.
		c := readThrough{Client: r.Client, reader: r.directReader()}
		res, err := applyChild(ctx, c, r.directReader(), site, "HTTPRoute", &gatewayv1.HTTPRoute{}, httpRoute, key, extractHTTPRoute)
		if err != nil {
			if kindNotServed(err) {
				if err := r.optional.forget(ctx, desired.HTTPRouteGVK); err != nil {
					return err
				}
				st.route = &metav1.Condition{Type: v1alpha1.ConditionRouteApplied, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonHTTPRouteCRDMissing,
					Message: "the cluster does not serve gateway.networking.k8s.io/v1 HTTPRoutes: install the Gateway API CRDs (standard channel), or use spec.route.ingressClassName"}
				st.requeue(st.tun.stalledRetry)
				return nil
			}
			return r.routeRefused(st, "HTTPRoute", err)
		}
		if err := r.optional.ensure(desired.HTTPRouteGVK); err != nil {
			return err
		}
		r.recordApply(site, "HTTPRoute", res)
		applied(v1alpha1.ReasonHTTPRouteApplied, "HTTPRoute")
	case conflicts != "":
		st.route = &metav1.Condition{Type: v1alpha1.ConditionRouteApplied, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonHostnameConflict,
			Message: conflicts + "; no route: the site holds none of its hostnames"}
	}
	return nil
}

// mayHaveHTTPRoute: the last complete pass reported a route that was not known to be an Ingress.
func (r *Reconciler) mayHaveHTTPRoute(site *v1alpha1.StaticSite) bool {
	c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionRouteApplied)
	return c != nil && c.Reason != v1alpha1.ReasonIngressApplied
}

// routeRefused turns an apply error a person must fix (a foreign object of that name, a refusal by the API
// server) into RouteApplied=False, retried periodically; other errors stop the pass.
func (r *Reconciler) routeRefused(st *observation, kind string, err error) error {
	var e *notOwnedError
	if !errors.As(err, &e) && !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("apply %s: %w", kind, err)
	}
	st.route = &metav1.Condition{Type: v1alpha1.ConditionRouteApplied, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRouteRejected, Message: err.Error()}
	st.requeue(st.tun.stalledRetry)
	return nil
}

func extractIngress(o client.Object) (any, error) {
	return networkingv1ac.ExtractIngress(o.(*networkingv1.Ingress), sitechild.FieldOwner)
}

func extractHTTPRoute(o client.Object) (any, error) {
	return gatewayv1ac.ExtractHTTPRoute(o.(*gatewayv1.HTTPRoute), sitechild.FieldOwner)
}
