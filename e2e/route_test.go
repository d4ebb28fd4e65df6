//go:build e2e

package e2e

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	gatewayv1 "sigs.k8s.io/gateway-api/apis/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// How long a route change may take to reach Traefik's routing table (it watches the Ingress or HTTPRoute, the
// Service and its EndpointSlices, then rebuilds its configuration).
const routePoll = 60 * time.Second

// testRoutesThroughTraefik: a StaticSite with spec.hostnames and spec.route is reachable through a real ingress
// controller (Traefik, Ingress and Gateway API), with the exact bytes of every file, by its hostname only; a
// hostname change moves the route (the new name serves, the old one answers 404), and so does switching the same
// site from an Ingress to an HTTPRoute on a Gateway. status.publicURLs follows every change. The site speaks h2c on
// its plain port (spec.server.h2c), and Traefik reaches its pods over h2c both ways: through the Ingress by the
// Service annotation the operator sets, through the HTTPRoute by the port's appProtocol (the pods' cleartext
// HTTP/2 counters rise with the requests).
func testRoutesThroughTraefik(t *testing.T) {
	if cfg.traefikImage == "" {
		// CI must run every scenario: a skipped one there would pass a green run without testing the routes.
		if os.Getenv("CI") == "true" {
			t.Fatal("routes through Traefik need its image, and CI=true does not allow skipping: run `make e2e` (E2E_ROUTES defaults to 1)")
		}
		t.Skip("SKIPPED: routes through Traefik need its image: run `make e2e` without E2E_ROUTES=0 (make/traefik.mk)")
	}
	requireOperator(t)
	installGatewayAPICRDs(t)
	ns := newNamespace(t, "route", false)
	tr := deployTraefik(t, ns)
	files := filesOf(t, cfg.siteDir)
	index := fileAt(t, files, "/index.html")

	// An Ingress of Traefik's class.
	site := newSite(ns, "routed", v1alpha1.ContentSource{Image: cfg.siteImage}, "100m")
	site.Spec.Hostnames = []v1alpha1.Hostname{"ingress-a.e2e.test"}
	site.Spec.Route = &v1alpha1.RouteSpec{IngressClassName: ptr.To(tr.ingressClass)}
	site.Spec.Server.H2C = true
	if err := k8s.Create(ctxFor(t, 30*time.Second), site); err != nil {
		t.Fatalf("create StaticSite: %v", err)
	}
	waitSiteReady(t, ns, site.Name, 3*time.Minute)
	h2c := cleartextHTTP2(t, ns, site.Name) // http2_test.go
	waitRouteApplied(t, ns, site.Name, v1alpha1.ReasonIngressApplied, "http://ingress-a.e2e.test/")
	waitServes(t, ns, tr, "ingress-a.e2e.test", index)
	checkBytes(t, ns, "all-ingress-a", tr.base, files, "-host", "ingress-a.e2e.test")
	waitRoutedOverH2C(t, ns, site.Name, h2c, "Traefik through the Ingress")
	waitNotFound(t, ns, tr, "nowhere.e2e.test")

	patchRoute(t, ns, site.Name, map[string]any{"hostnames": []string{"ingress-b.e2e.test"}})
	waitRouteMoved(t, ns, site.Name, tr, v1alpha1.ReasonIngressApplied, "ingress-a.e2e.test", "ingress-b.e2e.test", index)

	// The same site switched to an HTTPRoute on a Gateway of Traefik's class, under a name the Ingress never had:
	// only the HTTPRoute can route it.
	createGateway(t, ns, "web", tr.gatewayClass)
	patchRoute(t, ns, site.Name, map[string]any{
		"hostnames": []string{"gateway-c.e2e.test"},
		"route":     map[string]any{"ingressClassName": nil, "parentRefs": []map[string]any{{"name": "web"}}},
	})
	waitRouteMoved(t, ns, site.Name, tr, v1alpha1.ReasonHTTPRouteApplied, "ingress-b.e2e.test", "gateway-c.e2e.test", index)
	waitIngressGone(t, ns, site.Name)
	waitHTTPRouteAccepted(t, ns, site.Name)
	// From here only the HTTPRoute reaches the pods (the Ingress, and with it the Traefik annotation on the
	// Service, is gone): the streams counted from now on came through it, told h2c by the port's appProtocol.
	h2c = cleartextHTTP2(t, ns, site.Name)
	checkBytes(t, ns, "all-gateway-c", tr.base, files, "-host", "gateway-c.e2e.test")
	waitRoutedOverH2C(t, ns, site.Name, h2c, "Traefik through the HTTPRoute")

	patchRoute(t, ns, site.Name, map[string]any{"hostnames": []string{"gateway-d.e2e.test"}})
	waitRouteMoved(t, ns, site.Name, tr, v1alpha1.ReasonHTTPRouteApplied, "gateway-c.e2e.test", "gateway-d.e2e.test", index)

	if lines := traefikForbidden(t, ns); len(lines) > 0 {
		t.Errorf("Traefik was refused with its RBAC (%d log lines), first: %s", len(lines), lines[0])
	}
}

// fileAt returns the site file served at path.
func fileAt(t *testing.T, files []siteFile, path string) siteFile {
	t.Helper()
	i := slices.IndexFunc(files, func(f siteFile) bool { return f.path == path })
	if i < 0 {
		t.Fatalf("the site has no %s", path)
	}
	return files[i]
}

// patchRoute merge-patches the site's spec (lists are replaced whole, a null removes a field).
func patchRoute(t *testing.T, ns, name string, spec map[string]any) {
	t.Helper()
	patch, err := json.Marshal(map[string]any{"spec": spec})
	if err != nil {
		t.Fatal(err)
	}
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	if err := k8s.Patch(ctxFor(t, 30*time.Second), site, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatalf("patch StaticSite %s with %s: %v", name, patch, err)
	}
	t.Logf("StaticSite %s patched: %s", name, patch)
}

// waitRouteApplied waits until the site's status, for its current generation, says RouteApplied=True with reason
// and lists exactly the one public URL.
func waitRouteApplied(t *testing.T, ns, name, reason, publicURL string) {
	t.Helper()
	eventually(t, time.Minute, fmt.Sprintf("StaticSite %s routed (%s, %s)", name, reason, publicURL), func(ctx context.Context) (bool, string, error) {
		site := &v1alpha1.StaticSite{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, site); err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionRouteApplied)
		ok := site.Status.ObservedGeneration == site.Generation && c != nil && c.Status == metav1.ConditionTrue &&
			c.Reason == reason && slices.Equal(site.Status.PublicURLs, []string{publicURL})
		return ok, fmt.Sprintf("generation %d observed %d, RouteApplied=%s, publicURLs %v",
			site.Generation, site.Status.ObservedGeneration, condString(c), site.Status.PublicURLs), nil
	})
}

// waitRouteMoved waits until a hostname change reached Traefik: the site's status lists the new public URL only,
// the new name serves the page's exact bytes, the old one answers 404.
func waitRouteMoved(t *testing.T, ns, name string, tr traefikRoutes, reason, from, to string, page siteFile) {
	t.Helper()
	waitRouteApplied(t, ns, name, reason, "http://"+to+"/")
	waitServes(t, ns, tr, to, page)
	waitNotFound(t, ns, tr, from)
}

// waitServes polls the page through Traefik with Host: host until it answers 200 with the file's exact bytes.
func waitServes(t *testing.T, ns string, tr traefikRoutes, host string, page siteFile) {
	t.Helper()
	sum := sha256.Sum256(page.data)
	r := fetchThrough(t, ns, "serves-"+host, tr, host, page.path, "-want-sha256", hex.EncodeToString(sum[:]))
	t.Logf("Host %s through Traefik: %s %d, %d bytes, the file's exact bytes", host, page.path, r.Status, r.Size)
}

// waitNotFound polls "/" through Traefik with Host: host until it answers 404: no route has that name (any more).
func waitNotFound(t *testing.T, ns string, tr traefikRoutes, host string) {
	t.Helper()
	r := fetchThrough(t, ns, "not-found-"+host, tr, host, "/", "-want-status", "404")
	t.Logf("Host %s through Traefik: / %d", host, r.Status)
}

// fetchThrough runs one polling fetch (flags say until what) of path through Traefik's Service with Host: host,
// as Job job (a DNS label: host's dots become dashes), and fails the test unless the poll ended as wanted within
// routePoll.
func fetchThrough(t *testing.T, ns, job string, tr traefikRoutes, host, path string, flags ...string) fetchResult {
	t.Helper()
	args := append([]string{"-host", host, "-poll", routePoll.String()}, flags...)
	job = strings.ReplaceAll(job, ".", "-")
	ok, results := fetch(t, ns, job, routePoll+30*time.Second, append(args, urlFor(tr.base, path))...)
	if !ok || len(results) != 2 {
		t.Fatalf("Host %s, %s through Traefik: fetch %v (job ok=%v, results %+v)", host, path, flags, ok, results)
	}
	return results[1]
}

// createGateway creates a Gateway of class with one plain-HTTP listener on Traefik's web entry point, and waits
// until Traefik reports it Programmed.
func createGateway(t *testing.T, ns, name, class string) {
	t.Helper()
	gw := &gatewayv1.Gateway{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: gatewayv1.GatewaySpec{
			GatewayClassName: gatewayv1.ObjectName(class),
			Listeners:        []gatewayv1.Listener{{Name: "http", Port: traefikWebPort, Protocol: gatewayv1.HTTPProtocolType}},
		},
	}
	if err := k8s.Create(ctxFor(t, 30*time.Second), gw); err != nil {
		t.Fatalf("create Gateway: %v", err)
	}
	eventually(t, time.Minute, "Gateway "+name+" Programmed", func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(gw), gw); err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(gw.Status.Conditions, string(gatewayv1.GatewayConditionProgrammed))
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == gw.Generation, condString(c), nil
	})
}

// waitIngressGone waits until the operator deleted the site's Ingress (its route is an HTTPRoute now).
func waitIngressGone(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, time.Minute, "Ingress "+name+" deleted", func(ctx context.Context) (bool, string, error) {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &networkingv1.Ingress{})
		return apierrors.IsNotFound(err), fmt.Sprint(err), nil
	})
}

// waitHTTPRouteAccepted waits until Traefik reports the site's HTTPRoute Accepted by its Gateway, with every
// backend resolved, for the route's current generation.
func waitHTTPRouteAccepted(t *testing.T, ns, name string) {
	t.Helper()
	eventually(t, time.Minute, "HTTPRoute "+name+" accepted by Traefik", func(ctx context.Context) (bool, string, error) {
		hr := &gatewayv1.HTTPRoute{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hr); err != nil {
			return false, err.Error(), nil
		}
		for _, p := range hr.Status.Parents {
			if p.ControllerName != traefikGatewayController {
				continue
			}
			accepted := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionAccepted))
			resolved := meta.FindStatusCondition(p.Conditions, string(gatewayv1.RouteConditionResolvedRefs))
			ok := accepted != nil && accepted.Status == metav1.ConditionTrue && accepted.ObservedGeneration == hr.Generation &&
				resolved != nil && resolved.Status == metav1.ConditionTrue
			return ok, fmt.Sprintf("Accepted=%s ResolvedRefs=%s", condString(accepted), condString(resolved)), nil
		}
		return false, fmt.Sprintf("no status from %s (parents %d)", traefikGatewayController, len(hr.Status.Parents)), nil
	})
}
