package staticsite

import (
	"context"
	"fmt"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/hostclaim"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Issue 38 item 4: spec.hostnames reach an Ingress or HTTPRoute the operator makes with its own ClusterRole, so
// the tenancy policy says which hostnames a namespace may claim, and a hostname another site holds is not taken.
// Every hostname here holds the test's namespace, so that runs of -count=N never meet an earlier run's sites.

// routedSite is a site with an Ingress route for hostnames.
func routedSite(t *testing.T, ns, name string, hostnames ...string) *v1alpha1.StaticSite {
	t.Helper()
	hs := make([]v1alpha1.Hostname, len(hostnames))
	for i, h := range hostnames {
		hs[i] = v1alpha1.Hostname(h)
	}
	return createSite(t, ns, name, v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"},
		Hostnames: hs, Route: &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx")}})
}

// ingressHosts are the hosts of a site's Ingress rules (an error while it does not exist).
func ingressHosts(ns, name string) ([]string, error) {
	ing, err := getIngress(ns, name)
	if err != nil {
		return nil, err
	}
	var hosts []string
	for _, r := range ing.Spec.Rules {
		hosts = append(hosts, r.Host)
	}
	return hosts, nil
}

// waitIngressHosts waits until the site's Ingress routes exactly want.
func waitIngressHosts(t *testing.T, ns, name string, want ...string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("Ingress %s/%s routes %q", ns, name, want), func() error {
		hosts, err := ingressHosts(ns, name)
		if err != nil {
			return err
		}
		if !reflect.DeepEqual(hosts, want) {
			return fmt.Errorf("hosts %q", hosts)
		}
		return nil
	})
}

// holds checks status.hostnames (the operator's record of what the site holds) and RouteApplied.
func holds(reason string, want ...string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		if s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("generation %d not observed", s.Generation)
		}
		if !reflect.DeepEqual(s.Status.Hostnames, want) {
			return fmt.Errorf("status.hostnames %q, want %q", s.Status.Hostnames, want)
		}
		status := metav1.ConditionTrue
		if reason == v1alpha1.ReasonHostnameConflict {
			status = metav1.ConditionFalse
		}
		return condition(s, v1alpha1.ConditionRouteApplied, status, reason)
	}
}

// refusedNaming waits until the site is Stalled by the policy with msg in the message, and checks it got no
// Deployment and no Ingress.
func refusedNaming(t *testing.T, ns, name, msg string) {
	t.Helper()
	waitSite(t, ns, name, "PolicyViolation naming "+msg, func(s *v1alpha1.StaticSite) error {
		if err := conditionWith(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonPolicyViolation, msg)(s); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyViolation)
	})
	key := client.ObjectKey{Namespace: ns, Name: name}
	for _, obj := range []client.Object{&appsv1.Deployment{}, &networkingv1.Ingress{}} {
		if err := k8s.Get(context.Background(), key, obj); !apierrors.IsNotFound(err) {
			t.Errorf("%T %s exists (or %v): a refused site gets no child", obj, key, err)
		}
	}
}

// The suite's hostname policy (suitePolicy: "*.example.com", "example.com", "{namespace}.sites.test", wildcards
// under them): a hostname under no pattern is refused naming its field, and so is a wildcard over more than a
// pattern admits; "{namespace}" admits the site's own namespace and not another's.
func TestHostnamePolicy(t *testing.T) {
	ns, other := namespace(t), namespace(t)
	routedSite(t, ns, "outside", "ok."+ns+".example.com", "www."+ns+".outside.test")
	refusedNaming(t, ns, "outside", `spec.hostnames[1]: hostname "www.`+ns+`.outside.test" is not one namespace `+ns+` may claim`)

	routedSite(t, ns, "wild", "*."+ns+".sites.test")
	refusedNaming(t, ns, "wild", `spec.hostnames[0]: hostname "*.`+ns+`.sites.test" is not one namespace `+ns+` may claim`)

	own := ns + ".sites.test"
	routedSite(t, ns, "own", own)
	waitSite(t, ns, "own", "holds its namespace's name", holds(v1alpha1.ReasonIngressApplied, own))
	waitIngressHosts(t, ns, "own", own)
	routedSite(t, other, "theirs", own)
	refusedNaming(t, other, "theirs", `spec.hostnames[0]: hostname "`+own+`" is not one namespace `+other+` may claim`)
}

// Two sites of different namespaces claim one hostname: the first keeps it and its route; the second's route
// carries only its other hostname, RouteApplied says HostnameConflict naming the hostname and the first site, and
// an event says so. Deleting the first hands the hostname to the second without an edit (the hostname index's
// watch wakes it).
func TestHostnameConflictFirstClaimKeepsIt(t *testing.T) {
	ctx := context.Background()
	ns1, ns2 := namespace(t), namespace(t)
	shared, own := "shared."+ns1+".example.com", "own."+ns2+".example.com"
	first := routedSite(t, ns1, "first", shared)
	waitSite(t, ns1, "first", "first holds the hostname", holds(v1alpha1.ReasonIngressApplied, shared))

	routedSite(t, ns2, "second", shared, own)
	conflict := "hostname " + shared + " is held by StaticSite " + ns1 + "/first"
	waitSite(t, ns2, "second", "second holds only its own hostname", func(s *v1alpha1.StaticSite) error {
		if err := holds(v1alpha1.ReasonHostnameConflict, own)(s); err != nil {
			return err
		}
		if err := routeCondition(metav1.ConditionFalse, v1alpha1.ReasonHostnameConflict, conflict)(s); err != nil {
			return err
		}
		if want := []string{"http://" + own + "/"}; !reflect.DeepEqual(s.Status.PublicURLs, want) {
			return fmt.Errorf("publicURLs %q, want %q", s.Status.PublicURLs, want)
		}
		return nil
	})
	waitIngressHosts(t, ns2, "second", own)
	waitEvent(t, ns2, "second", "Warning HostnameConflict RouteApplied False: "+conflict)
	waitIngressHosts(t, ns1, "first", shared)
	waitSite(t, ns1, "first", "first still holds it", holds(v1alpha1.ReasonIngressApplied, shared))

	testenv.Must(t, k8s.Delete(ctx, first))
	waitSite(t, ns2, "second", "second gets the hostname", holds(v1alpha1.ReasonIngressApplied, shared, own))
	waitIngressHosts(t, ns2, "second", shared, own)
	waitEvent(t, ns2, "second", "Normal IngressApplied RouteApplied again")
}

// An older site that adds a hostname a newer site already serves does not take it: the newer keeps its route,
// the older's route leaves the hostname out and names the holder. Both sites share a namespace and the older one's
// name sorts first, so it would win every tie of creation time: only the record of who claimed first decides.
func TestOlderSiteDoesNotStealAHostname(t *testing.T) {
	ns := namespace(t)
	mine, taken := "mine."+ns+".example.com", "taken."+ns+".example.com"
	older := routedSite(t, ns, "a-older", mine)
	waitSite(t, ns, "a-older", "older holds its hostname", holds(v1alpha1.ReasonIngressApplied, mine))
	routedSite(t, ns, "b-newer", taken)
	waitSite(t, ns, "b-newer", "newer holds its hostname", holds(v1alpha1.ReasonIngressApplied, taken))

	updateSite(t, older, func(s *v1alpha1.StaticSite) {
		s.Spec.Hostnames = append(s.Spec.Hostnames, v1alpha1.Hostname(taken))
	})
	waitSite(t, ns, "a-older", "older refused the taken hostname", func(s *v1alpha1.StaticSite) error {
		if err := holds(v1alpha1.ReasonHostnameConflict, mine)(s); err != nil {
			return err
		}
		return routeCondition(metav1.ConditionFalse, v1alpha1.ReasonHostnameConflict, "hostname "+taken+" is held by StaticSite "+ns+"/b-newer")(s)
	})
	waitIngressHosts(t, ns, "a-older", mine)
	waitSite(t, ns, "b-newer", "newer keeps it", holds(v1alpha1.ReasonIngressApplied, taken))
	waitIngressHosts(t, ns, "b-newer", taken)

	// The newer site gives it up: the older gets it without an edit of its own.
	newer := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "b-newer"}, newer))
	updateSite(t, newer, func(s *v1alpha1.StaticSite) {
		s.Spec.Hostnames = []v1alpha1.Hostname{v1alpha1.Hostname("other." + ns + ".example.com")}
	})
	waitSite(t, ns, "a-older", "older gets the released hostname", holds(v1alpha1.ReasonIngressApplied, mine, taken))
	waitIngressHosts(t, ns, "a-older", mine, taken)
}

// Two sites claim one hostname at once (neither waits for the other's pass): exactly one gets it, the one created
// first (here also first by name, so a tie of creation seconds ends the same way), and the other names it.
func TestSimultaneousClaimsAgree(t *testing.T) {
	ns := namespace(t)
	h := "race." + ns + ".example.com"
	routedSite(t, ns, "a-one", h)
	routedSite(t, ns, "b-two", h)
	waitSite(t, ns, "a-one", "the first created holds it", holds(v1alpha1.ReasonIngressApplied, h))
	waitSite(t, ns, "b-two", "the second names it", func(s *v1alpha1.StaticSite) error {
		if err := holds(v1alpha1.ReasonHostnameConflict)(s); err != nil {
			return err
		}
		return routeCondition(metav1.ConditionFalse, v1alpha1.ReasonHostnameConflict, "hostname "+h+" is held by StaticSite "+ns+"/a-one")(s)
	})
	waitIngressHosts(t, ns, "a-one", h)
	if _, err := getIngress(ns, "b-two"); !apierrors.IsNotFound(err) {
		t.Errorf("Ingress of the site that lost the claim: %v", err)
	}
}

// A site whose every hostname is held elsewhere gets no route at all (and one it had goes), but keeps serving
// through its Service.
func TestNoRouteWhenEveryHostnameIsHeld(t *testing.T) {
	ns := namespace(t)
	h := "only." + ns + ".example.com"
	routedSite(t, ns, "a-holder", h)
	waitSite(t, ns, "a-holder", "holder", holds(v1alpha1.ReasonIngressApplied, h))
	routedSite(t, ns, "b-late", h)
	waitSite(t, ns, "b-late", "no hostname held", func(s *v1alpha1.StaticSite) error {
		if err := holds(v1alpha1.ReasonHostnameConflict)(s); err != nil {
			return err
		}
		if len(s.Status.PublicURLs) != 0 {
			return fmt.Errorf("publicURLs %q", s.Status.PublicURLs)
		}
		return routeCondition(metav1.ConditionFalse, v1alpha1.ReasonHostnameConflict, "no route: the site holds none of its hostnames")(s)
	})
	if _, err := getIngress(ns, "b-late"); !apierrors.IsNotFound(err) {
		t.Errorf("Ingress of a site that holds no hostname: %v", err)
	}
	rollOutAndWaitReady(t, ns, "b-late")
}

// The route carries the held hostnames as the spec spells them, in the spec's order; the conflict message names
// each hostname kept from the site and its holder.
func TestRoutedHostnamesAndConflictMessage(t *testing.T) {
	spec := []v1alpha1.Hostname{"b.example.com", "a.example.com", "c.example.com"}
	if got, want := routedHostnames(spec, []string{"c.example.com", "b.example.com"}), []v1alpha1.Hostname{"b.example.com", "c.example.com"}; !reflect.DeepEqual(got, want) {
		t.Errorf("routed %q, want %q", got, want)
	}
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"}, Spec: v1alpha1.StaticSiteSpec{Hostnames: spec,
		Route: &v1alpha1.RouteSpec{IngressClassName: ptr.To("nginx")}}}
	if ing := desired.Ingress(site, nil); ing != nil {
		t.Errorf("an Ingress without a hostname held: %+v", ing)
	}
	site.Spec.Route = &v1alpha1.RouteSpec{ParentRefs: []v1alpha1.ParentReference{{Name: "gw"}}}
	if hr := desired.HTTPRoute(site, nil); hr != nil {
		t.Errorf("an HTTPRoute without a hostname held: %+v", hr)
	}
	msg := conflictMessage([]hostclaim.Conflict{{Hostname: "a.example.com", Holder: "x/one"}, {Hostname: "b.example.com", Holder: "y/two", Pending: true}})
	if want := "hostname a.example.com is held by StaticSite x/one; hostname b.example.com is claimed first by StaticSite y/two"; msg != want {
		t.Errorf("message %q, want %q", msg, want)
	}
}

// The suite's policy on previews (suitePolicy: at most 20; their wildcard under the hostname patterns): a domain
// whose wildcard no pattern admits, and a max over the cap, are refused naming the field; the site gets no child.
func TestPreviewsPolicy(t *testing.T) {
	ns := namespace(t)
	site := func(name, domain string, max int32) {
		spec := gitSiteSpec("http://127.0.0.1:1/docs.git")
		spec.Previews = &v1alpha1.PreviewsSpec{Domain: domain, PullRequests: true, Max: ptr.To(max)}
		createGitSite(t, ns, name, spec)
	}
	site("outside", "preview.outside.test", 5)
	refusedNaming(t, ns, "outside", `spec.previews.domain: the previews' wildcard hostname "*.preview.outside.test" is not one namespace `+ns+` may claim`)
	site("many", "preview.example.com", 21)
	refusedNaming(t, ns, "many", "spec.previews.max: 21 previews is over the limit of 20")
}
