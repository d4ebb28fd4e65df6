package desired

import (
	"maps"
	"slices"

	networkingv1 "k8s.io/api/networking/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"
	gatewayv1ac "sigs.k8s.io/gateway-api/applyconfiguration/apis/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// Routes from hostnames: spec.route with spec.hostnames makes either an Ingress (ingressClassName) or a Gateway
// API HTTPRoute (parentRefs), named like the site, to the Service's plain http port. Like every child it is owned
// by the site, applied only when the fields the operator owns differ, never adopted, and deleted when spec.route
// goes (or switches to the other kind).

// HTTPRouteGVK is the Gateway API kind the operator creates for spec.route.parentRefs.
var HTTPRouteGVK = gatewayv1.SchemeGroupVersion.WithKind("HTTPRoute")

// Ingress is the site's Ingress: every host of hostnames (RouteHosts: the spec.hostnames the site holds, see
// step_hostnames.go, and the previews' wildcard when held) "/" (prefix) to the Service's http port, with a TLS section for all of them naming the
// site's TLS Secret (TLSSecretName) when spec.tls is set (the ingress controller terminates TLS with the same
// certificate the server holds). Nil unless spec.route.ingressClassName is set and the site holds a hostname.
func Ingress(site *v1alpha1.StaticSite, hostnames []v1alpha1.Hostname) *networkingv1ac.IngressApplyConfiguration {
	route := site.Spec.Route
	if route == nil || route.IngressClassName == nil || len(hostnames) == 0 {
		return nil
	}
	spec := networkingv1ac.IngressSpec().WithIngressClassName(*route.IngressClassName)
	hosts := make([]string, 0, len(hostnames))
	for _, h := range hostnames {
		if !isPreviewsWildcard(site, h) {
			hosts = append(hosts, string(h)) // the TLS section: the site's certificate names its hostnames only
		}
		paths := networkingv1ac.HTTPIngressRuleValue().WithPaths(
			networkingv1ac.HTTPIngressPath().WithPath("/").WithPathType(networkingv1.PathTypePrefix).WithBackend(
				networkingv1ac.IngressBackend().WithService(networkingv1ac.IngressServiceBackend().WithName(site.Name).
					WithPort(networkingv1ac.ServiceBackendPort().WithName(v1alpha1.ServerPortName)))))
		if p := ssoIngressPath(site); p != nil { // sso.go: the login agent's prefix
			paths.WithPaths(p)
		}
		spec.WithRules(networkingv1ac.IngressRule().WithHost(string(h)).WithHTTP(paths))
	}
	if site.Spec.TLS != nil {
		spec.WithTLS(networkingv1ac.IngressTLS().WithHosts(hosts...).WithSecretName(TLSSecretName(site)))
	}
	ing := networkingv1ac.Ingress(site.Name, site.Namespace).
		WithLabels(sitechild.ObjectLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithSpec(spec)
	if len(route.Annotations) > 0 {
		ing.WithAnnotations(maps.Clone(route.Annotations))
	}
	return ing
}

// HTTPRoute is the site's HTTPRoute: hostnames (RouteHosts), attached to
// spec.route.parentRefs, every request to the Service's http port. Nil unless spec.route.parentRefs is set and the
// site holds a hostname.
//
// The CRD's lists (parentRefs, rules, matches, backendRefs) are atomic: the operator owns each whole, with the
// defaults the API server fills in. So the defaults are written out here too (group and kind of a parent and of
// the backend, the backend's weight, the match of every path), or the owned fields would never equal the desired
// ones and every pass would apply again.
func HTTPRoute(site *v1alpha1.StaticSite, hostnames []v1alpha1.Hostname) *gatewayv1ac.HTTPRouteApplyConfiguration {
	route := site.Spec.Route
	if route == nil || len(route.ParentRefs) == 0 || len(hostnames) == 0 {
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
	for _, h := range hostnames {
		spec.WithHostnames(gatewayv1.Hostname(h))
	}
	spec.WithRules(gatewayv1ac.HTTPRouteRule().
		WithMatches(gatewayv1ac.HTTPRouteMatch().WithPath(gatewayv1ac.HTTPPathMatch().WithType(gatewayv1.PathMatchPathPrefix).WithValue("/"))).
		WithBackendRefs(gatewayv1ac.HTTPBackendRef().WithGroup("").WithKind("Service").WithName(gatewayv1.ObjectName(site.Name)).
			WithPort(ServicePort(site)).WithWeight(1)))
	if r := ssoHTTPRouteRule(site); r != nil { // sso.go: the login agent's prefix
		spec.WithRules(r)
	}
	hr := gatewayv1ac.HTTPRoute(site.Name, site.Namespace).
		WithLabels(sitechild.ObjectLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithSpec(spec)
	if len(route.Annotations) > 0 {
		hr.WithAnnotations(maps.Clone(route.Annotations))
	}
	return hr
}

// RouteHosts are the hosts a route carries: the spec.hostnames the site holds, then, with spec.previews and when
// the site holds it (a claim like a hostname's, internal/hostclaim: two sites cannot both route one previews
// domain), one wildcard "*.<domain>" covering every preview's host (<name>--<site>.<domain>, one label under the
// domain; the pods choose the preview by Host). The tenancy policy allows the wildcard as it would a wildcard
// hostname (internal/tenancy/previews.go). Only through the route's plain HTTP: the Ingress's TLS section and the
// site's certificate name the hostnames alone, so a preview's URL is http:// (status.previews).
func RouteHosts(site *v1alpha1.StaticSite, hostnames []v1alpha1.Hostname, previewsHeld bool) []v1alpha1.Hostname {
	if site.Spec.Previews == nil || !previewsHeld {
		return hostnames
	}
	return append(slices.Clone(hostnames), PreviewsWildcard(site))
}

// PreviewsWildcard is the route host of a site's previews.
func PreviewsWildcard(site *v1alpha1.StaticSite) v1alpha1.Hostname {
	return v1alpha1.Hostname("*." + site.Spec.Previews.Domain)
}

func isPreviewsWildcard(site *v1alpha1.StaticSite, h v1alpha1.Hostname) bool {
	return site.Spec.Previews != nil && h == PreviewsWildcard(site)
}

// PublicURLs are the addresses of hostnames (the routed ones) through the route: https:// when spec.tls is set
// (the Ingress terminates TLS with its Secret; for an HTTPRoute, the Gateway's listener is assumed to), a wildcard
// name as written. Nil without spec.route.
func PublicURLs(site *v1alpha1.StaticSite, hostnames []v1alpha1.Hostname) []string {
	if site.Spec.Route == nil || len(hostnames) == 0 {
		return nil
	}
	scheme := "http"
	if site.Spec.TLS != nil {
		scheme = "https"
	}
	urls := make([]string, 0, len(hostnames))
	for _, h := range hostnames {
		urls = append(urls, scheme+"://"+string(h)+"/")
	}
	return urls
}
