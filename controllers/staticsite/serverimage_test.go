package staticsite

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/benchmark"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/managercache"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func TestPlaceInQueue(t *testing.T) {
	const old, target = "server:1", "server:2"
	key := func(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }
	waiting := func(ns, name string) siteRollout {
		return siteRollout{site: key(ns, name), image: old, rolledOut: true, queues: true}
	}
	moving := func(ns, name string) siteRollout { return siteRollout{site: key(ns, name), image: target} }
	done := func(ns, name string) siteRollout {
		return siteRollout{site: key(ns, name), image: target, rolledOut: true, queues: true}
	}
	for _, tc := range []struct {
		name  string
		limit int
		site  types.NamespacedName
		world []siteRollout
		want  queuePlace
	}{
		{"first in line, nobody moving", 1, key("a", "x"), []siteRollout{waiting("a", "x"), waiting("a", "y"), waiting("b", "a")}, queuePlace{admit: true}},
		{"second in line waits", 1, key("a", "y"), []siteRollout{waiting("a", "x"), waiting("a", "y")}, queuePlace{ahead: 1}},
		{"namespace before name", 1, key("a", "z"), []siteRollout{waiting("a", "z"), waiting("b", "a")}, queuePlace{admit: true}},
		{"first in line waits for a moving site", 1, key("a", "x"), []siteRollout{moving("z", "z"), waiting("a", "x")}, queuePlace{moving: 1}},
		{"rolled-out sites hold no place", 1, key("b", "b"), []siteRollout{done("a", "a"), waiting("b", "b")}, queuePlace{admit: true}},
		{"a limit of 2 admits the second in line", 2, key("a", "y"), []siteRollout{waiting("a", "x"), waiting("a", "y"), waiting("a", "z")}, queuePlace{admit: true, ahead: 1}},
		{"a limit of 2, one moving", 2, key("a", "y"), []siteRollout{moving("a", "m"), waiting("a", "x"), waiting("a", "y")}, queuePlace{ahead: 1, moving: 1}},
		{"no limit", 0, key("a", "z"), []siteRollout{moving("a", "m"), waiting("a", "x"), waiting("a", "z")}, queuePlace{admit: true, ahead: 1, moving: 1}},
		{"sites that do not queue (own image, stalled) are skipped", 1, key("b", "b"),
			[]siteRollout{{site: key("a", "a"), image: old, rolledOut: true}, waiting("b", "b")}, queuePlace{admit: true}},
		{"a site missing from the world (stale cache) takes its place by name", 1, key("a", "y"), []siteRollout{waiting("a", "x")}, queuePlace{ahead: 1}},
		// The decider that has not seen x's move yet still sees x first in line: y does not take a second place.
		{"stale view of the previous admission", 1, key("a", "y"), []siteRollout{waiting("a", "x"), waiting("a", "y")}, queuePlace{ahead: 1}},
		{"fresh view of the previous admission", 1, key("a", "y"), []siteRollout{moving("a", "x"), waiting("a", "y")}, queuePlace{moving: 1}},
		// Issue 24, item 5: a moving site that is stuck (Stalled, or past its progress deadline) holds no place.
		{"a stuck moving site holds no place", 1, key("a", "y"), []siteRollout{{site: key("a", "x"), image: target, stuck: true}, waiting("a", "y")},
			queuePlace{admit: true, stuck: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := placeInQueue(target, tc.limit, tc.site, tc.world); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestRolloutWorld(t *testing.T) {
	site := func(name string, mutate func(*v1alpha1.StaticSite)) v1alpha1.StaticSite {
		s := v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}}}
		if mutate != nil {
			mutate(&s)
		}
		return s
	}
	deployment := func(s v1alpha1.StaticSite, image string, mutate func(*appsv1.Deployment)) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Generation: 2,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "StaticSite", Name: s.Name, UID: s.UID, Controller: ptr.To(true)}}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: sitechild.ContainerName, Image: image}}}}},
			Status: appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, ReadyReplicas: 2}}
		if mutate != nil {
			mutate(&d)
		}
		return d
	}
	plain := site("plain", nil)
	ownImage := site("own-image", func(s *v1alpha1.StaticSite) { s.Spec.Server.Image = "example/own:1" })
	baked := site("baked", func(s *v1alpha1.StaticSite) { s.Spec.Content = v1alpha1.ContentSource{Image: "example/site:1"} })
	stalled := site("stalled", func(s *v1alpha1.StaticSite) {
		s.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonDeploymentRejected}}
	})
	rolling := site("rolling", nil)
	unobserved := site("unobserved", nil)
	deleting := site("deleting", nil)
	foreign := site("foreign", nil)
	orphan := site("orphan", nil)

	sites := []v1alpha1.StaticSite{plain, ownImage, baked, stalled, rolling, unobserved, deleting, foreign}
	deployments := []appsv1.Deployment{
		deployment(plain, "server:1", nil),
		deployment(ownImage, "example/own:1", nil),
		deployment(baked, "example/site:1", nil),
		deployment(stalled, "server:1", nil),
		deployment(rolling, "server:2", func(d *appsv1.Deployment) { d.Status.ReadyReplicas = 1 }),
		deployment(unobserved, "server:2", func(d *appsv1.Deployment) { d.Generation = 3 }),
		deployment(deleting, "server:2", func(d *appsv1.Deployment) { d.DeletionTimestamp = &metav1.Time{Time: time.Now()} }),
		deployment(foreign, "server:2", func(d *appsv1.Deployment) { d.OwnerReferences = nil }),
		deployment(orphan, "server:2", nil), // its site is gone
	}
	got := rolloutWorld(sites, deployments)
	key := func(name string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: name} }
	want := []siteRollout{
		{site: key("plain"), image: "server:1", rolledOut: true, queues: true},
		{site: key("own-image"), image: "example/own:1", rolledOut: true},
		{site: key("baked"), image: "example/site:1", rolledOut: true},
		{site: key("stalled"), image: "server:1", rolledOut: true, stuck: true},
		{site: key("rolling"), image: "server:2", queues: true},
		{site: key("unobserved"), image: "server:2", queues: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("world:\n got %+v\nwant %+v", got, want)
	}
}

// startOperator starts a manager with the production cache whose StaticSite controller defaults to image and lets
// limit sites move to it at a time. Waiting sites check again every 100 ms, so the test's waits stay short. stop
// stops it (and waits until it has); the test's cleanup stops it too.
func startOperator(t *testing.T, env *testenv.Env, image string, limit int, options ...func(*Reconciler)) (stop func()) {
	t.Helper()
	mgr, err := env.NewManager(func(o *ctrl.Options) {
		o.Cache = managercache.ManagerOptions(sitechild.FieldOwner, benchmark.FieldOwner)
	})
	testenv.Must(t, err)
	r := &Reconciler{
		Client:                        mgr.GetClient(),
		Recorder:                      mgr.GetEventRecorderFor(sitechild.FieldOwner),
		Clock:                         clocktesting.NewFakePassiveClock(clockTime),
		Scraper:                       &fakeScraper{samples: map[string]podmetrics.Sample{}},
		ServerImage:                   image,
		ScrapeRetry:                   time.Second,
		StalledRetry:                  time.Second,
		ServerImageRolloutConcurrency: limit,
		ServerImageQueueRetry:         100 * time.Millisecond,
	}
	for _, o := range options {
		o(r)
	}
	testenv.Must(t, r.SetupWithManager(mgr))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// An operator upgrade (a new default server image) moves the sites that run it one at a time, in name order; a
// new site starts on the new image at once; with no limit all move together.
func TestServerImageRollsOutOneSiteAtATime(t *testing.T) {
	const imageA, imageB, imageC = "hyperstatic/server:1.0", "hyperstatic/server:1.1", "hyperstatic/server:1.2"
	// A private API server: the suite's manager would apply its own default image to these sites at once.
	env, err := testenv.Start()
	testenv.Must(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	c, ctx, ns := env.Client, context.Background(), "upgrade"
	testenv.Must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	testenv.Must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pages"}, Data: map[string]string{"index.html": "hi"}}))
	configMapSite := v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}}
	u := &upgrade{t: t, c: c, ns: ns}

	// The old operator: three sites start on image A at once (new sites never wait), plus one with its own image,
	// and a Git site "e", whose pods also run the operator's content-agent image in their puller sidecar.
	const agentA, agentB = "hyperstatic/content-agent:1.0", "hyperstatic/content-agent:1.1"
	stop := startOperator(t, env, imageA, 1, func(r *Reconciler) { r.ContentAgentImage = agentA })
	sites := []string{"a", "b", "c"}
	for _, name := range sites {
		testenv.Must(t, c.Create(ctx, &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: configMapSite}))
	}
	gitSpec := v1alpha1.StaticSiteSpec{Memory: ptr.To(resource.MustParse("64Mi")), // sized without waiting for a commit
		Content: v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "https://github.com/example/docs.git", Ref: "main"}}}
	testenv.Must(t, c.Create(ctx, &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e"}, Spec: gitSpec}))
	u.completeRollout("e")
	if img, agent := u.image("e"), u.pullerImage("e"); img != imageA || agent != agentA {
		t.Fatalf("Git site e starts on %s and %s, want %s and %s", img, agent, imageA, agentA)
	}
	ownSpec := *configMapSite.DeepCopy()
	ownSpec.Server.Image = "example/own:1"
	testenv.Must(t, c.Create(ctx, &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "own"}, Spec: ownSpec}))
	for _, name := range append(sites, "own") {
		u.completeRollout(name)
	}
	for _, name := range sites {
		if img := u.image(name); img != imageA {
			t.Fatalf("site %s starts on %s, want %s", name, img, imageA)
		}
		u.waitReady(name)
	}
	stop()

	// The upgraded operator defaults to image B and lets one site move at a time.
	stop = startOperator(t, env, imageB, 1, func(r *Reconciler) { r.ContentAgentImage = agentB })
	u.moving = map[string]bool{"a": true, "b": true, "c": true, "e": true}
	u.waitImage("a", imageB)
	u.waitEvent("a", "Normal ServerImageUpgrade Moving to server image "+imageB+" (from "+imageA+")")
	u.waitQueued("b", imageB, "0 site(s) ahead in the queue, 1 of at most 1 moving now")
	u.waitQueued("c", imageB, "1 site(s) ahead in the queue, 1 of at most 1 moving now")
	// The waiting Git site keeps its puller image with its server image: the new content-agent image alone would
	// roll its pods outside the queue.
	u.waitQueued("e", imageB, "2 site(s) ahead in the queue, 1 of at most 1 moving now")
	if img, agent := u.image("e"), u.pullerImage("e"); img != imageA || agent != agentA {
		t.Errorf("waiting Git site e runs %s and %s, want %s and %s", img, agent, imageA, agentA)
	}

	// A waiting site still takes every other change: scaled to 2 replicas, it keeps image A.
	testenv.Eventually(t, "scale c", func() error {
		site := u.site("c")
		site.Spec.Replicas = ptr.To[int32](2)
		return c.Update(ctx, site)
	})
	testenv.Eventually(t, "c scaled on image A", func() error {
		u.checkGate(imageB)
		if d := u.deployment("c"); *d.Spec.Replicas != 2 || serverImageOf(d) != imageA {
			return fmt.Errorf("Deployment c: %d replicas of %s", *d.Spec.Replicas, serverImageOf(d))
		}
		return nil
	})
	u.completeRollout("c")

	// A new site starts on the new image at once, queue or not; until it is rolled out it also holds a place.
	testenv.Must(t, c.Create(ctx, &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"}, Spec: configMapSite}))
	u.waitImage("d", imageB)
	u.completeRollout("d")

	// Each completed rollout lets the next site in line start.
	u.completeRollout("a")
	u.waitImage("b", imageB)
	u.waitQueued("c", imageB, "0 site(s) ahead in the queue, 1 of at most 1 moving now")
	u.completeRollout("b")
	u.waitImage("c", imageB)
	u.completeRollout("c")
	u.waitImage("e", imageB)
	if agent := u.pullerImage("e"); agent != agentB {
		t.Errorf("Git site e moved to %s with puller %s, want %s", imageB, agent, agentB)
	}
	u.completeRollout("e")
	for _, name := range sites {
		u.waitReady(name)
	}
	if img := u.image("own"); img != "example/own:1" {
		t.Errorf("a site with its own image was moved to %s", img)
	}
	if ev := u.events("own"); slices.ContainsFunc(ev, func(e string) bool { return strings.Contains(e, "ServerImageUpgrade") }) {
		t.Errorf("a site with its own image has upgrade events: %q", ev)
	}

	// Concurrency 0 lifts the gate: every site moves to image C at once, no rollout completed in between.
	stop()
	u.moving = nil
	startOperator(t, env, imageC, 0, func(r *Reconciler) { r.ContentAgentImage = agentB })
	for _, name := range append(sites, "d", "e") {
		u.waitImage(name, imageC)
	}
}

// Issue 24, item 5: a site whose move to the new image never completes (its Deployment passes its progress
// deadline) stops holding the only place: the next site in line moves, and its message while it waited is about
// the queue, not a hang. Without the fix, b waits forever behind a.
func TestAStuckSiteDoesNotFreezeTheUpgrade(t *testing.T) {
	const imageA, imageB = "hyperstatic/server:1.0", "hyperstatic/server:1.1"
	env, err := testenv.Start()
	testenv.Must(t, err)
	t.Cleanup(func() { _ = env.Stop() })
	c, ctx, ns := env.Client, context.Background(), "stuck"
	testenv.Must(t, c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))
	testenv.Must(t, c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pages"}, Data: map[string]string{"index.html": "hi"}}))
	spec := v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}}
	u := &upgrade{t: t, c: c, ns: ns}
	stop := startOperator(t, env, imageA, 1)
	for _, name := range []string{"a", "b"} {
		testenv.Must(t, c.Create(ctx, &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}))
		u.completeRollout(name)
		u.waitReady(name)
	}
	stop()

	startOperator(t, env, imageB, 1)
	u.waitImage("a", imageB)
	u.waitQueued("b", imageB, "0 site(s) ahead in the queue, 1 of at most 1 moving now")
	// a's new pods never become ready: the Deployment controller gives up at the progress deadline.
	d := u.deployment("a")
	testenv.Eventually(t, "a past its progress deadline", func() error {
		if err := c.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		// The old pod still serves; the surge pod of the new image never becomes ready.
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 1, ReadyReplicas: 1, AvailableReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: deploymentTimedOutReason, Message: `ReplicaSet "a-2" has timed out progressing.`}}}
		return c.Status().Update(ctx, d)
	})
	testenv.Eventually(t, "a Stalled", func() error {
		return condition(u.site("a"), v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonProgressDeadlineExceeded)
	})
	u.waitImage("b", imageB)
}

// upgrade plays the Deployment controller for the upgrade test and watches the invariant: at most one of the sites
// in moving carries the new image without being rolled out.
type upgrade struct {
	t      *testing.T
	c      client.Client
	ns     string
	moving map[string]bool // the sites the gate is checked on; nil: no check
}

func (u *upgrade) deployment(name string) *appsv1.Deployment {
	u.t.Helper()
	d := &appsv1.Deployment{}
	testenv.Eventually(u.t, "Deployment "+name, func() error { return u.c.Get(context.Background(), client.ObjectKey{Namespace: u.ns, Name: name}, d) })
	return d
}

func (u *upgrade) image(name string) string { return serverImageOf(u.deployment(name)) }

// pullerImage is the image of a Git site's puller sidecar.
func (u *upgrade) pullerImage(name string) string {
	if c := podstate.Container(u.deployment(name).Spec.Template.Spec.InitContainers, gitcontent.PullerContainerName); c != nil {
		return c.Image
	}
	return ""
}

// checkGate fails the test when more than one of the watched sites is moving to image.
func (u *upgrade) checkGate(image string) {
	u.t.Helper()
	if u.moving == nil {
		return
	}
	list := &appsv1.DeploymentList{}
	testenv.Must(u.t, u.c.List(context.Background(), list, client.InNamespace(u.ns)))
	var moving []string
	for i := range list.Items {
		d := &list.Items[i]
		if u.moving[d.Name] && serverImageOf(d) == image && !rolledOut(d) {
			moving = append(moving, d.Name)
		}
	}
	if len(moving) > 1 {
		u.t.Fatalf("%d sites move to %s at once, want at most 1: %v", len(moving), image, moving)
	}
}

func (u *upgrade) waitImage(name, image string) {
	u.t.Helper()
	testenv.Eventually(u.t, "site "+name+" on "+image, func() error {
		u.checkGate(image)
		if got := u.image(name); got != image {
			return fmt.Errorf("Deployment %s runs %s", name, got)
		}
		return nil
	})
	u.checkGate(image)
}

// completeRollout plays the Deployment controller and kubelet: every replica updated, ready and available.
func (u *upgrade) completeRollout(name string) {
	u.t.Helper()
	d := u.deployment(name)
	testenv.Eventually(u.t, "Deployment status update", func() error {
		if err := u.c.Get(context.Background(), client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n}
		return u.c.Status().Update(context.Background(), d)
	})
}

func (u *upgrade) site(name string) *v1alpha1.StaticSite {
	u.t.Helper()
	s := &v1alpha1.StaticSite{}
	testenv.Must(u.t, u.c.Get(context.Background(), client.ObjectKey{Namespace: u.ns, Name: name}, s))
	return s
}

func (u *upgrade) waitReady(name string) {
	u.t.Helper()
	testenv.Eventually(u.t, "site "+name+" Ready", func() error {
		s := u.site(name)
		if err := condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReconciling, "", "")
	})
}

// waitQueued waits until a site reports it waits for image, with the queue position in want, while it keeps its
// image and stays Ready.
func (u *upgrade) waitQueued(name, image, want string) {
	u.t.Helper()
	testenv.Eventually(u.t, "site "+name+" queued", func() error {
		u.checkGate(image)
		s := u.site(name)
		if err := condition(s, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonServerImageUpgradeQueued); err != nil {
			return err
		}
		if m := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionReconciling).Message; !strings.Contains(m, image) || !strings.Contains(m, want) {
			return fmt.Errorf("message %q, want %s and %q", m, image, want)
		}
		return nil
	})
	s := u.site(name)
	if err := condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable); err != nil {
		u.t.Errorf("a queued site stays Ready: %v", err)
	}
	if got := u.image(name); got == image {
		u.t.Errorf("queued site %s already runs %s", name, image)
	}
}

func (u *upgrade) events(name string) []string {
	u.t.Helper()
	list := &corev1.EventList{}
	testenv.Must(u.t, u.c.List(context.Background(), list, client.InNamespace(u.ns)))
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Name == name && e.InvolvedObject.Kind == "StaticSite" {
			out = append(out, e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	return out
}

func (u *upgrade) waitEvent(name, substr string) {
	u.t.Helper()
	testenv.Eventually(u.t, "event "+substr, func() error {
		if ev := u.events(name); !slices.ContainsFunc(ev, func(e string) bool { return strings.Contains(e, substr) }) {
			return fmt.Errorf("no event containing %q in %q", substr, ev)
		}
		return nil
	})
}

// The cache may not show the latest admission yet: a site the cache puts first in line is admitted only when the
// API server agrees that a place is free.
func TestAdmissionIsConfirmedWithTheAPIServer(t *testing.T) {
	const imageA, imageB = "hyperstatic/server:1.0", "hyperstatic/server:1.1"
	scheme := runtime.NewScheme()
	testenv.Must(t, clientgoscheme.AddToScheme(scheme))
	testenv.Must(t, v1alpha1.AddToScheme(scheme))
	site := func(name string) *v1alpha1.StaticSite {
		return &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name)},
			Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}}}
	}
	deployment := func(s *v1alpha1.StaticSite, image string, done bool) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: s.Namespace, Name: s.Name, Generation: 1, Labels: sitechild.ObjectLabels(s),
			OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "StaticSite", Name: s.Name, UID: s.UID, Controller: ptr.To(true)}}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](1), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: sitechild.ContainerName, Image: image}}}}}}
		if done {
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 1, UpdatedReplicas: 1, ReadyReplicas: 1}
		}
		return d
	}
	a, b, c := site("a"), site("b"), site("c")
	// The cache has not seen a's Deployment yet; the API server has it, just moved to image B.
	cached := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b, c, deployment(b, imageA, true), deployment(c, imageA, true)).Build()
	live := fake.NewClientBuilder().WithScheme(scheme).WithObjects(a, b, c, deployment(a, imageB, false), deployment(b, imageA, true), deployment(c, imageA, true)).Build()
	r := &Reconciler{Client: cached, APIReader: live, ServerImage: imageB, ServerImageRolloutConcurrency: 1}

	st := r.newObservation(b)
	choice, release, err := r.chooseServerImage(context.Background(), st)
	testenv.Must(t, err)
	release()
	if choice.image != imageA || !strings.Contains(st.serverImageQueued, "1 of at most 1 moving now") || st.requeueAfter != DefaultServerImageQueueRetry {
		t.Errorf("b: image %s, queued %q, requeue %v; want it to keep %s behind a", choice.image, st.serverImageQueued, st.requeueAfter, imageA)
	}

	// Once a is rolled out, b moves, and holds the gate until it has applied its Deployment.
	rolled := &appsv1.Deployment{}
	testenv.Must(t, live.Get(context.Background(), client.ObjectKeyFromObject(a), rolled))
	rolled.Status = deployment(a, imageB, true).Status
	testenv.Must(t, live.Status().Update(context.Background(), rolled))
	st = r.newObservation(b)
	choice, release, err = r.chooseServerImage(context.Background(), st)
	testenv.Must(t, err)
	if choice.image != imageB || choice.from != imageA || st.serverImageQueued != "" {
		t.Errorf("b: image %s from %s, queued %q; want it to move to %s", choice.image, choice.from, st.serverImageQueued, imageB)
	}
	if r.serverImageMu.TryLock() {
		t.Error("the gate is free before b applied its Deployment")
	}
	release()
	if !r.serverImageMu.TryLock() {
		t.Error("the gate stays locked after release")
	}
}
