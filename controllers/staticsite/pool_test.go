package staticsite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolstate"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Sites placed in a StaticSitePool (pool.go). The tests play the pool controller: they create the pool's server
// pods (labelled as it labels them) and publish what the pool serves into the suite's Board.

// testPool creates a StaticSitePool admitting namespaces, with a namespace of its own for its pods.
func testPool(t *testing.T, namespaces ...string) (pool *v1alpha1.StaticSitePool) {
	t.Helper()
	ctx := context.Background()
	ns := fmt.Sprintf("pool-%d-%d", time.Now().Unix()%100000, nsCounter.Add(1))
	testenv.Must(t, k8s.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	if err := k8s.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	pool = &v1alpha1.StaticSitePool{ObjectMeta: metav1.ObjectMeta{Name: ns}, Spec: v1alpha1.StaticSitePoolSpec{Namespace: ns, Namespaces: namespaces}}
	testenv.Must(t, k8s.Create(ctx, pool))
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pool) })
	return pool
}

// poolPod plays the pool controller and the kubelet: a server pod of the pool, ready or not, at ip.
func poolPod(t *testing.T, pool *v1alpha1.StaticSitePool, name, ip string, ready bool) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	labels := poolplacement.PodSelector(pool.Name)
	labels[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByValue
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pool.Spec.Namespace, Name: name, Labels: labels},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "server", Image: "hyperstatic/server:test"}}}}
	testenv.Must(t, k8s.Create(ctx, p))
	setPoolPodReady(t, p, ip, ready)
	return p
}

func setPoolPodReady(t *testing.T, p *corev1.Pod, ip string, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	testenv.Eventually(t, "pool pod "+p.Name+" status", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.PodIP = ip
		p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
		return k8s.Status().Update(context.Background(), p)
	})
}

// markPoolPodDraining plays the pool controller's scale-down: p marked draining, or the mark taken off.
func markPoolPodDraining(t *testing.T, p *corev1.Pod, draining bool) {
	t.Helper()
	testenv.Eventually(t, "pool pod "+p.Name+" mark", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		if p.Annotations == nil {
			p.Annotations = map[string]string{}
		}
		delete(p.Annotations, poolplacement.AnnotationDraining)
		if draining {
			p.Annotations[poolplacement.AnnotationDraining] = "2026-12-04T06:00:00Z"
		}
		return k8s.Update(context.Background(), p)
	})
}

// publish plays the pool controller's pass: what pool serves of each site.
func publish(pool *v1alpha1.StaticSitePool, sites map[string]poolstate.Served) {
	pools.Publish(pool.Name, sites)
}

func inPool(pool *v1alpha1.StaticSitePool) *v1alpha1.PlacementSpec {
	return &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: pool.Name}
}

// pagesSite is a ConfigMap site's spec, with its ConfigMap created.
func pagesSite(t *testing.T, ns string) v1alpha1.StaticSiteSpec {
	t.Helper()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pages"}, Data: map[string]string{"index.html": "<h1>pool</h1>"}}
	if err := k8s.Create(context.Background(), cm); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}}
}

// poolSliceOf is the site's pool EndpointSlice, or an error when it is not as the contract says.
func poolSliceOf(ns, site string) (*discoveryv1.EndpointSlice, error) {
	s := &discoveryv1.EndpointSlice{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: site + "-pool"}, s); err != nil {
		return nil, err
	}
	if s.Labels[discoveryv1.LabelServiceName] != site || s.AddressType != discoveryv1.AddressTypeIPv4 {
		return nil, fmt.Errorf("slice labels %v address type %s", s.Labels, s.AddressType)
	}
	if len(s.Ports) != 1 || ptr.Deref(s.Ports[0].Name, "") != v1alpha1.ServerPortName || ptr.Deref(s.Ports[0].Port, 0) != v1alpha1.ServerPort {
		return nil, fmt.Errorf("slice ports %+v", s.Ports)
	}
	return s, nil
}

// sliceAddresses is the site's pool EndpointSlice's addresses, or an error when it is not as the contract says.
func sliceAddresses(ns, site string) ([]string, error) {
	s, err := poolSliceOf(ns, site)
	if err != nil {
		return nil, err
	}
	var addrs []string
	for _, e := range s.Endpoints {
		addrs = append(addrs, e.Addresses...)
	}
	slices.Sort(addrs)
	return addrs, nil
}

func wantAddresses(ns, site string, want ...string) func() error {
	return func() error {
		got, err := sliceAddresses(ns, site)
		if err != nil {
			return err
		}
		if !slices.Equal(got, want) {
			return fmt.Errorf("slice addresses %v, want %v", got, want)
		}
		return nil
	}
}

// serviceSelects reports whether the site's Service has a selector (nil error) or not (wantSelector false).
func serviceSelects(ns, site string, wantSelector bool) func() error {
	return func() error {
		svc := &corev1.Service{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: site}, svc); err != nil {
			return err
		}
		if has := len(svc.Spec.Selector) > 0; has != wantSelector {
			return fmt.Errorf("Service selector %v, want a selector: %v", svc.Spec.Selector, wantSelector)
		}
		return nil
	}
}

func gone(ns, name string, obj client.Object) func() error {
	return func() error {
		err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
		switch {
		case apierrors.IsNotFound(err):
			return nil
		case err != nil:
			return fmt.Errorf("read %T %s: %w", obj, name, err)
		}
		return fmt.Errorf("%T %s still exists", obj, name)
	}
}

func placement(mode, pool string, servedBy, readyPods int32) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		p := s.Status.Placement
		if p == nil || p.Mode != mode || p.Pool != pool || p.ServedBy != servedBy || p.ReadyPods != readyPods || p.Since == nil {
			return fmt.Errorf("status.placement %+v, want %s %s %d/%d", p, mode, pool, servedBy, readyPods)
		}
		return nil
	}
}

// An admitted pool site has no pod of its own: no Deployment, no site-value ConfigMap, no Git fetcher; its Service
// has no selector and an EndpointSlice of the pool's ready pods, which follows them. Its status comes from the
// Board: Placed Unknown before the pool reports, True once every ready pool pod serves it, False with an error.
func TestPoolSiteHasNoPodOfItsOwn(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	pool := testPool(t, ns)
	poolPod(t, pool, "server-a", "10.1.0.1", true)
	poolPod(t, pool, "server-b", "10.1.0.2", true)
	late := poolPod(t, pool, "server-c", "10.1.0.3", false)

	spec := pagesSite(t, ns)
	spec.Placement = inPool(pool)
	// No route: the pool answers for the hostname by Host, so the site must hold it all the same (the pool's index
	// carries only the names a site holds).
	// One name per test namespace: a site of an earlier run (-count) holds its own.
	hostname := ns + ".example.com"
	spec.Hostnames = []v1alpha1.Hostname{v1alpha1.Hostname(hostname)}
	createSite(t, ns, "pooled", spec)
	testenv.Eventually(t, "the Service without a selector", serviceSelects(ns, "pooled", false))
	testenv.Eventually(t, "the EndpointSlice of the ready pool pods", wantAddresses(ns, "pooled", "10.1.0.1", "10.1.0.2"))
	waitSite(t, ns, "pooled", "waiting for the pool", all(
		conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionUnknown, v1alpha1.ReasonPoolNotReported, pool.Name),
		func(s *v1alpha1.StaticSite) error {
			return condition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonWaitingForPool)
		},
		placement(v1alpha1.PlacementPool, pool.Name, 0, 0)))
	for _, o := range []struct {
		name string
		obj  client.Object
	}{{"pooled", &appsv1.Deployment{}}, {sitevalue.ConfigMapName("pooled"), &corev1.ConfigMap{}}} {
		testenv.Must(t, gone(ns, o.name, o.obj)())
	}

	// The pool's pass reports the site served by both ready pods.
	commit := strings.Repeat("ab", 32)
	publish(pool, map[string]poolstate.Served{poolindex.ID(ns, "pooled"): {ServedBy: 2, ReadyPods: 2, Bundle: commit, Commit: commit}})
	site := waitSite(t, ns, "pooled", "Placed and Ready", all(
		conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionTrue, v1alpha1.ReasonServedByPool, "all 2 ready pods"),
		func(s *v1alpha1.StaticSite) error {
			return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
		},
		placement(v1alpha1.PlacementPool, pool.Name, 2, 2)))
	if !slices.Equal(site.Status.Hostnames, []string{hostname}) {
		t.Errorf("status.hostnames = %v, want the hostname held without a route", site.Status.Hostnames)
	}
	if site.Status.ReadyReplicas != 0 || site.Status.Replicas != 0 || site.Status.ContentRevision != "sha256:"+commit[:16] ||
		site.Status.ContentSource != v1alpha1.ContentSourceConfigMaps {
		t.Errorf("status: replicas %d/%d, content %s %s", site.Status.ReadyReplicas, site.Status.Replicas, site.Status.ContentSource, site.Status.ContentRevision)
	}
	if err := condition(site, v1alpha1.ConditionPinned, "", ""); err != nil {
		t.Error(err) // about pods the site does not have
	}
	waitEvent(t, ns, "pooled", "MovedToPool the site runs in StaticSitePool "+pool.Name)

	// A third pool pod becomes ready: the slice follows.
	setPoolPodReady(t, late, "10.1.0.3", true)
	testenv.Eventually(t, "the slice lists the new ready pod", wantAddresses(ns, "pooled", "10.1.0.1", "10.1.0.2", "10.1.0.3"))

	// The pool controller marks a pod it is about to remove (internal/poolplacement/drain.go): the slice drops it
	// while it is still ready, and lists it again once the mark comes off.
	markPoolPodDraining(t, late, true)
	testenv.Eventually(t, "the slice drops the draining pod", wantAddresses(ns, "pooled", "10.1.0.1", "10.1.0.2"))
	markPoolPodDraining(t, late, false)
	testenv.Eventually(t, "the slice lists the pod again", wantAddresses(ns, "pooled", "10.1.0.1", "10.1.0.2", "10.1.0.3"))

	// The fetcher fails and no pod serves the site: Placed False naming the error, Stalled.
	publish(pool, map[string]poolstate.Served{poolindex.ID(ns, "pooled"): {ServedBy: 0, ReadyPods: 3, FetchError: "mirror unreadable"}})
	waitSite(t, ns, "pooled", "Placed False with the fetch error", all(
		conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionFalse, v1alpha1.ReasonPoolFetchError, "mirror unreadable"),
		func(s *v1alpha1.StaticSite) error {
			return condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonPoolFetchError)
		}))

	// A public Git site in the pool: no fetcher of its own, its content from the pool's fetcher.
	createSite(t, ns, "pooled-git", v1alpha1.StaticSiteSpec{Placement: inPool(pool),
		Content: v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "http://127.0.0.1:1/site.git", Ref: "main"}}})
	testenv.Eventually(t, "the Git site's Service without a selector", serviceSelects(ns, "pooled-git", false))
	gitCommit := strings.Repeat("c0", 20)
	publish(pool, map[string]poolstate.Served{
		poolindex.ID(ns, "pooled"):     {ServedBy: 3, ReadyPods: 3, Bundle: commit, Commit: commit},
		poolindex.ID(ns, "pooled-git"): {ServedBy: 3, ReadyPods: 3, Bundle: commit, Commit: gitCommit},
	})
	waitSite(t, ns, "pooled-git", "the Git site Placed, its content the pool fetcher's", all(
		conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionTrue, v1alpha1.ReasonServedByPool, ""),
		conditionWith(v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonGitRevisionFetched, gitCommit[:12]),
		func(s *v1alpha1.StaticSite) error {
			if s.Status.ContentRevision != "main@sha1:"+gitCommit {
				return fmt.Errorf("contentRevision %q", s.Status.ContentRevision)
			}
			return nil
		}))
	gitSite := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "pooled-git"}, gitSite))
	for _, name := range []string{"pooled-git", gitcontent.FetcherName(gitSite)} {
		testenv.Must(t, gone(ns, name, &appsv1.Deployment{})())
	}
	testenv.Must(t, gone(ns, gitcontent.FetcherName(gitSite), &corev1.Service{})())
}

// A refused placement names the field, makes the site Stalled with a Warning, and changes nothing: a site that
// ran on its own pods keeps them and its Service's selector, a new site gets nothing.
func TestPoolRefusalsNameTheField(t *testing.T) {
	ns := namespace(t)
	elsewhere := testPool(t, "some-other-namespace")
	admitting := testPool(t, ns)
	poolPod(t, admitting, "server-a", "10.2.0.1", true)

	// A running site whose pool does not admit its namespace.
	createSite(t, ns, "running", pagesSite(t, ns))
	rollOutAndWaitReady(t, ns, "running")
	updateSite(t, &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "running"}}, func(s *v1alpha1.StaticSite) {
		s.Spec.Placement = inPool(elsewhere)
	})
	waitSite(t, ns, "running", "refused: namespace not admitted", all(
		conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionFalse, poolplacement.ReasonNamespaceNotAdmitted, "spec.placement.pool"),
		func(s *v1alpha1.StaticSite) error {
			return condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, poolplacement.ReasonNamespaceNotAdmitted)
		},
		placement(v1alpha1.PlacementDedicated, "", 0, 0)))
	waitEvent(t, ns, "running", "Warning NamespaceNotAdmitted Stalled: spec.placement.pool")
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "running"}, &appsv1.Deployment{}))
	testenv.Must(t, serviceSelects(ns, "running", true)())
	testenv.Must(t, gone(ns, "running-pool", &discoveryv1.EndpointSlice{})())

	// New sites with a feature a pool site cannot have: refused, nothing created.
	for name, tc := range map[string]struct {
		spec          v1alpha1.StaticSiteSpec
		reason, field string
	}{
		"with-tls": {func() v1alpha1.StaticSiteSpec {
			s := pagesSite(t, ns)
			s.TLS = &v1alpha1.TLSSpec{SecretName: "cert"}
			return s
		}(), poolplacement.ReasonFeatureNotPooled, "spec.tls"},
		"with-creds": {v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "http://127.0.0.1:1/private.git", Ref: "main",
			SecretRef: &v1alpha1.LocalObjectReference{Name: "git-creds"}}}}, poolplacement.ReasonGitCredentials, "spec.content.git.secretRef"},
	} {
		tc.spec.Placement = inPool(admitting)
		createSite(t, ns, name, tc.spec)
		waitSite(t, ns, name, name+" refused", all(
			conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionFalse, tc.reason, tc.field+": "),
			func(s *v1alpha1.StaticSite) error {
				return condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, tc.reason)
			}))
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
			testenv.Must(t, gone(ns, name, obj)())
		}
		testenv.Must(t, gone(ns, name+"-pool", &discoveryv1.EndpointSlice{})())
	}
}

// Dedicated → Pool keeps the site's own pods until the pool serves it, then hands the Service to the pool's pods
// and deletes them; Pool → Dedicated creates them again, gives the Service its selector back once they are ready,
// and drops the pool's EndpointSlice once the cluster's EndpointSlice controller lists one of them.
func TestMoveToPoolAndBack(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	pool := testPool(t, ns)
	poolPod(t, pool, "server-a", "10.3.0.1", true)
	spec := pagesSite(t, ns)
	spec.Replicas = ptr.To[int32](2) // and so a PodDisruptionBudget
	createSite(t, ns, "mover", spec)
	rollOutAndWaitReady(t, ns, "mover")
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mover"}, &policyv1.PodDisruptionBudget{}))
	// One of its pods (envtest has no garbage collector: it outlives the Deployment, as a terminating pod does).
	ownPod := serverPod(t, getDeployment(t, ns, "mover"), "mover-own-1", "10.0.0.9")
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mover"}}
	// What the cluster's EndpointSlice controller (not in envtest) made for the site's own pods, and what it leaves
	// behind once the Service has no selector (kubernetes/kubernetes#118376); and a slice of someone else's that
	// names the Service but is not the cluster controller's, which the operator must leave alone.
	svc := &corev1.Service{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mover"}, svc))
	stale := clusterSlice(ns, "mover-stale", "10.0.0.9", clusterSliceManagedBy)
	stale.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))}
	testenv.Must(t, k8s.Create(ctx, stale))
	foreign := clusterSlice(ns, "mover-foreign", "10.0.0.10", "someone-else")
	testenv.Must(t, k8s.Create(ctx, foreign))
	// What the cluster's Endpoints controller kept for the Service and leaves behind, and the slice its
	// EndpointSliceMirroring controller makes of it once the Service has no selector (seen in kind).
	left := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "mover"}, Subsets: []corev1.EndpointSubset{{ //nolint:staticcheck // the deprecated API is what the cluster leaves behind
		Addresses: []corev1.EndpointAddress{{IP: "10.0.0.9"}}, Ports: []corev1.EndpointPort{{Name: "http", Port: 8080}}}}}
	testenv.Must(t, k8s.Create(ctx, left))
	mirrored := clusterSlice(ns, "mover-mirrored", "10.0.0.9", mirroredSliceManagedBy)
	mirrored.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))}
	testenv.Must(t, k8s.Create(ctx, mirrored))

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Placement = inPool(pool) })
	waitSite(t, ns, "mover", "moving to the pool, still served by its own pods", all(
		conditionWith(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonMovingToPool, pool.Name),
		conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionUnknown, v1alpha1.ReasonPoolNotReported, "own pods serve it"),
		func(s *v1alpha1.StaticSite) error {
			return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
		},
		placement(v1alpha1.PlacementDedicated, "", 0, 0)))
	// The pool catching up is not enough either.
	publish(pool, map[string]poolstate.Served{poolindex.ID(ns, "mover"): {ServedBy: 0, ReadyPods: 1}})
	waitSite(t, ns, "mover", "the pool catching up", conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionUnknown, v1alpha1.ReasonPoolCatchingUp, "0 of 1"))
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mover"}, &appsv1.Deployment{}))
	testenv.Must(t, serviceSelects(ns, "mover", true)())
	testenv.Must(t, gone(ns, "mover-pool", &discoveryv1.EndpointSlice{})())
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mover-stale"}, &discoveryv1.EndpointSlice{}))

	// Served: the Service goes to the pool, the site's own children go.
	publish(pool, map[string]poolstate.Served{poolindex.ID(ns, "mover"): {ServedBy: 1, ReadyPods: 1}})
	testenv.Eventually(t, "the Deployment deleted once the pool serves the site", gone(ns, "mover", &appsv1.Deployment{}))
	testenv.Must(t, serviceSelects(ns, "mover", false)())
	// The cluster's slice of the former pods went before them (the same pass, an earlier step); the other stays.
	testenv.Must(t, gone(ns, "mover-stale", &discoveryv1.EndpointSlice{})())
	testenv.Must(t, gone(ns, "mover-mirrored", &discoveryv1.EndpointSlice{})())
	testenv.Must(t, gone(ns, "mover", &corev1.Endpoints{})()) //nolint:staticcheck // see above
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mover-foreign"}, &discoveryv1.EndpointSlice{}))
	waitEvent(t, ns, "mover", "Deleted Endpoints mover: the cluster's list of the site's former pods")
	waitEvent(t, ns, "mover", "Deleted EndpointSlice mover-stale: the cluster's slice of the site's former pods")
	testenv.Must(t, wantAddresses(ns, "mover", "10.3.0.1")())
	// The same pass deletes the rest after the Deployment.
	testenv.Eventually(t, "the site-value ConfigMap deleted", gone(ns, sitevalue.ConfigMapName("mover"), &corev1.ConfigMap{}))
	testenv.Eventually(t, "the PodDisruptionBudget deleted", gone(ns, "mover", &policyv1.PodDisruptionBudget{}))
	waitSite(t, ns, "mover", "in the pool", all(
		conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionTrue, v1alpha1.ReasonServedByPool, ""),
		placement(v1alpha1.PlacementPool, pool.Name, 1, 1),
		func(s *v1alpha1.StaticSite) error {
			return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
		}))
	waitEvent(t, ns, "mover", "Deleted Deployment mover: the site runs in StaticSitePool "+pool.Name)
	// The cluster's controller made its slice again (it had not seen the Service lose its selector when the
	// operator deleted the first): while a pod of the site's own remains, the operator finds and deletes it too.
	again := clusterSlice(ns, "mover-again", "10.0.0.9", clusterSliceManagedBy)
	again.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))}
	testenv.Must(t, k8s.Create(ctx, again))
	testenv.Eventually(t, "the cluster's slice made again after the move deleted", gone(ns, "mover-again", &discoveryv1.EndpointSlice{}))
	testenv.Must(t, k8s.Delete(ctx, ownPod))

	// Back to its own pods: created first, the pool keeps serving meanwhile.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Placement = nil })
	d := getDeployment(t, ns, "mover")
	waitSite(t, ns, "mover", "moving back, served by the pool", all(
		conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionUnknown, v1alpha1.ReasonMovingToDedicated, ""),
		conditionWith(v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonMovingToDedicated, ""),
		func(s *v1alpha1.StaticSite) error {
			return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
		},
		func(s *v1alpha1.StaticSite) error {
			if s.Status.Placement == nil || s.Status.Placement.Mode != v1alpha1.PlacementPool {
				return fmt.Errorf("status.placement %+v, want still Pool", s.Status.Placement)
			}
			return nil
		}))
	testenv.Must(t, serviceSelects(ns, "mover", false)())
	testenv.Must(t, wantAddresses(ns, "mover", "10.3.0.1")())

	// Its pods are ready: the Service selects them; the pool's slice stays until the cluster's slice lists one.
	completeRollout(t, d)
	testenv.Eventually(t, "the Service selects the site's pods again", serviceSelects(ns, "mover", true))
	testenv.Must(t, wantAddresses(ns, "mover", "10.3.0.1")())
	testenv.Must(t, k8s.Create(ctx, clusterSlice(ns, "mover-abcde", "10.0.0.5", clusterSliceManagedBy)))
	testenv.Eventually(t, "the pool's slice dropped", gone(ns, "mover-pool", &discoveryv1.EndpointSlice{}))
	waitSite(t, ns, "mover", "on its own pods", all(
		conditionWith(v1alpha1.ConditionPlaced, metav1.ConditionTrue, v1alpha1.ReasonDedicated, ""),
		placement(v1alpha1.PlacementDedicated, "", 0, 0),
		func(s *v1alpha1.StaticSite) error {
			return condition(s, v1alpha1.ConditionReconciling, "", "")
		}))
	waitEvent(t, ns, "mover", "MovedToDedicated")
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "mover"}, &policyv1.PodDisruptionBudget{}))
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: sitevalue.ConfigMapName("mover")}, &corev1.ConfigMap{}))
}

// clusterSlice is an EndpointSlice of the Service "mover" with one ready address, managed by managedBy.
func clusterSlice(ns, name, addr, managedBy string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
		discoveryv1.LabelServiceName: "mover", discoveryv1.LabelManagedBy: managedBy}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080)}}}
}

// Without the pool controller (no Board), a site asking for a pool is refused, not a nil dereference.
func TestPoolRefusedWithoutThePoolController(t *testing.T) {
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "web", Name: "docs"},
		Spec: v1alpha1.StaticSiteSpec{Placement: &v1alpha1.PlacementSpec{Mode: v1alpha1.PlacementPool, Pool: "shared"}}}
	o := &observation{site: site}
	if err := (&Reconciler{}).placeSite(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if o.refused == nil || o.refused.Reason != v1alpha1.ReasonPoolsNotRunning || o.placeRefusal == nil || o.placeRefusal.Field != "spec.placement.mode" {
		t.Fatalf("refused %+v, placement refusal %+v", o.refused, o.placeRefusal)
	}
	status := deriveStatus(site, o)
	if err := condition(&v1alpha1.StaticSite{Status: status}, v1alpha1.ConditionPlaced, metav1.ConditionFalse, v1alpha1.ReasonPoolsNotRunning); err != nil {
		t.Error(err)
	}
}
