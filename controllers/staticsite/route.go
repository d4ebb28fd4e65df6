package staticsite

import (
	"context"
	"errors"
	"fmt"
	"maps"

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
)

// Routes from hostnames: spec.route with spec.hostnames makes either an Ingress (ingressClassName) or a Gateway
// API HTTPRoute (parentRefs), named like the site, to the Service's plain http port. Like every child it is owned
// by the site, applied only when the fields the operator owns differ, never adopted, and deleted when spec.route
// goes (or switches to the other kind).

// HTTPRouteGVK is the Gateway API kind the operator creates for spec.route.parentRefs.
var HTTPRouteGVK = gatewayv1.SchemeGroupVersion.WithKind("HTTPRoute")

// DesiredIngress is the site's Ingress: every hostname's "/" (prefix) to the Service's http port, with a TLS
// section for all of them naming spec.tls.secretName when spec.tls is set (the ingress controller terminates TLS
// with the same certificate the server holds). Nil unless spec.route.ingressClassName is set.
func DesiredIngress(site *v1alpha1.StaticSite) *networkingv1ac.IngressApplyConfiguration {
	route := site.Spec.Route
	if route == nil || route.IngressClassName == nil {
		return nil
	}
	spec := networkingv1ac.IngressSpec().WithIngressClassName(*route.IngressClassName)
	hosts := make([]string, 0, len(site.Spec.Hostnames))
	for _, h := range site.Spec.Hostnames {
		hosts = append(hosts, string(h))
		spec.WithRules(networkingv1ac.IngressRule().WithHost(string(h)).WithHTTP(networkingv1ac.HTTPIngressRuleValue().WithPaths(
			networkingv1ac.HTTPIngressPath().WithPath("/").WithPathType(networkingv1.PathTypePrefix).WithBackend(
				networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().WithName(site.Name).
					WithPort(networkingv1ac.ServiceBackendPort().WithName(v1alpha1.ServerPortName)))))))
	}
	if site.Spec.TLS != nil {
		spec.WithTLS(networkingv1ac.IngressTLS().WithHosts(hosts...).WithSecretName(site.Spec.TLS.SecretName))
	}
	ing := networkingv1ac.Ingress(site.Name, site.Namespace).
		WithLabels(objectLabels(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(spec)
	if len(route.Annotations) > 0 {
		ing.WithAnnotations(maps.Clone(route.Annotations))
	}
	return ing
}

// DesiredHTTPRoute is the site's HTTPRoute: spec.hostnames, attached to spec.route.parentRefs, every request to
// the Service's http port. Nil unless spec.route.parentRefs is set.
//
// The CRD's lists (parentRefs, rules, matches, backendRefs) are atomic: the operator owns each whole, with the
// defaults the API server fills in. So the defaults are written out here too (group and kind of a parent and of
// the backend, the backend's weight, the match of every path), or the owned fields would never equal the desired
// ones and every pass would apply again.
func DesiredHTTPRoute(site *v1alpha1.StaticSite) *gatewayv1ac.HTTPRouteApplyConfiguration {
	route := site.Spec.Route
	if route == nil || len(route.ParentRefs) == 0 {
		return nil
	}
	spec := gatewayv1ac.HTTPRouteSpec()
	for _, p := range route.ParentRefs {
		ref := gatewayv1ac.ParentReference().WithName(gatewayv1.ObjectName(p.Name)).
			WithGroup(gatewayv1.GroupName).WithKind("Gateway")
		if p.Group != nil {
			ref.WithGroup(gatewayv1.Group(*p.Group))
		}
		if p.Kind != nil {
			ref.WithKind(gatewayv1.Kind(*p.Kind))
		}
		if p.Namespace != nil {
			ref.WithNamespace(gatewayv1.Namespace(*p.Namespace))
		}
		if p.SectionName != nil {
			ref.WithSectionName(gatewayv1.SectionName(*p.SectionName))
		}
		spec.WithParentRefs(ref)
	}
	for _, h := range site.Spec.Hostnames {
		spec.WithHostnames(gatewayv1.Hostname(h))
	}
	spec.WithRules(gatewayv1ac.HTTPRouteRule().
		WithMatches(gatewayv1ac.HTTPRouteMatch().WithPath(gatewayv1ac.HTTPPathMatch().WithType(gatewayv1.PathMatchPathPrefix).WithValue("/"))).
		WithBackendRefs(gatewayv1ac.HTTPBackendRef().WithGroup("").WithKind("Service").WithName(gatewayv1.ObjectName(site.Name)).
			WithPort(servicePortOf(site)).WithWeight(1)))
	hr := gatewayv1ac.HTTPRoute(site.Name, site.Namespace).
		WithLabels(objectLabels(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(spec)
	if len(route.Annotations) > 0 {
		hr.WithAnnotations(maps.Clone(route.Annotations))
	}
	return hr
}

// PublicURLs are the addresses of spec.hostnames through the route: https:// when spec.tls is set (the Ingress
// terminates TLS with its Secret; for an HTTPRoute, the Gateway's listener is assumed to), a wildcard name as
// written. Nil without spec.route.
func PublicURLs(site *v1alpha1.StaticSite) []string {
	if site.Spec.Route == nil {
		return nil
	}
	scheme := "http"
	if site.Spec.TLS != nil {
		scheme = "https"
	}
	urls := make([]string, 0, len(site.Spec.Hostnames))
	for _, h := range site.Spec.Hostnames {
		urls = append(urls, scheme+"://"+string(h)+"/")
	}
	return urls
}

// +kubebuilder:rbac:groups=networking.k8s.io,resources=ingresses,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=gateway.networking.k8s.io,resources=httproutes,verbs=get;list;watch;create;patch;delete

// reconcileRoute applies the Ingress or HTTPRoute of spec.route and deletes the other kind (or both, without
// spec.route) when the site made it. The outcome is the RouteApplied condition; a problem there never stops the
// pass nor changes Ready (the site still serves in the cluster).
func (r *Reconciler) reconcileRoute(ctx context.Context, st *state) error {
	site := st.site
	ingress, httpRoute := DesiredIngress(site), DesiredHTTPRoute(site)
	if ingress == nil {
		if err := r.deleteOwned(ctx, r.Client, site, "Ingress", &networkingv1.Ingress{}, "spec.route names no ingressClassName"); err != nil {
			return err
		}
	}
	// The HTTPRoute is not in the manager's cache: look for one only when the last pass may have left one (it
	// reported a route that was not an Ingress), not on every pass of every site.
	if httpRoute == nil && r.mayHaveHTTPRoute(site) {
		if err := r.deleteOwned(ctx, r.directReader(), site, "HTTPRoute", &gatewayv1.HTTPRoute{}, "spec.route names no parentRefs"); err != nil {
			return err
		}
	}
	key := types.NamespacedName{Namespace: site.Namespace, Name: site.Name}
	applied := func(reason, kind string) {
		st.route = &metav1.Condition{Type: v1alpha1.ConditionRouteApplied, Status: metav1.ConditionTrue, Reason: reason,
			Message: fmt.Sprintf("%s %s routes %v to the Service's http port", kind, site.Name, site.Spec.Hostnames)}
		st.publicURLs = PublicURLs(site)
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
				if err := r.optional.forget(ctx, HTTPRouteGVK); err != nil {
					return err
				}
				st.route = &metav1.Condition{Type: v1alpha1.ConditionRouteApplied, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonHTTPRouteCRDMissing,
					Message: "the cluster does not serve gateway.networking.k8s.io/v1 HTTPRoutes: install the Gateway API CRDs (standard channel), or use spec.route.ingressClassName"}
				st.requeue(r.stalledRetry())
				return nil
			}
			return r.routeRefused(st, "HTTPRoute", err)
		}
		if err := r.optional.ensure(HTTPRouteGVK); err != nil {
			return err
		}
		r.recordApply(site, "HTTPRoute", res)
		applied(v1alpha1.ReasonHTTPRouteApplied, "HTTPRoute")
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
func (r *Reconciler) routeRefused(st *state, kind string, err error) error {
	var e *notOwnedError
	if !errors.As(err, &e) && !apierrors.IsInvalid(err) && !apierrors.IsForbidden(err) {
		return fmt.Errorf("apply %s: %w", kind, err)
	}
	st.route = &metav1.Condition{Type: v1alpha1.ConditionRouteApplied, Status: metav1.ConditionFalse, Reason: v1alpha1.ReasonRouteRejected, Message: err.Error()}
	st.requeue(r.stalledRetry())
	return nil
}

func extractIngress(o client.Object) (any, error) {
	return networkingv1ac.ExtractIngress(o.(*networkingv1.Ingress), FieldOwner)
}

func extractHTTPRoute(o client.Object) (any, error) {
	return gatewayv1ac.ExtractHTTPRoute(o.(*gatewayv1.HTTPRoute), FieldOwner)
}
