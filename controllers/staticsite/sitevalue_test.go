package staticsite

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// siteValueOf reads the site's site value ConfigMap as it is now.
func siteValueOf(t *testing.T, ns, site string) *corev1.ConfigMap {
	t.Helper()
	cm := &corev1.ConfigMap{}
	testenv.Eventually(t, "ConfigMap "+sitevalue.ConfigMapName(site), func() error {
		return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: sitevalue.ConfigMapName(site)}, cm)
	})
	return cm
}

// waitSiteValue waits for the ConfigMap to hold the site's rendered value and returns its revision.
func waitSiteValue(t *testing.T, site *v1alpha1.StaticSite) string {
	t.Helper()
	want := sitevalue.Render(site)
	testenv.Eventually(t, "the rendered site value in its ConfigMap", func() error {
		cm := siteValueOf(t, site.Namespace, site.Name)
		if got := cm.Data[sitevalue.Key]; got != string(want.Bytes) {
			return fmt.Errorf("ConfigMap holds %s, want %s", got, want.Bytes)
		}
		return nil
	})
	return want.Revision
}

// waitAnnotated waits for the operator to tell a pod of a revision.
func waitAnnotated(t *testing.T, ns, pod, revision string) {
	t.Helper()
	testenv.Eventually(t, "pod "+pod+" annotated with "+revision, func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pod}, p); err != nil {
			return err
		}
		if got := p.Annotations[sitevalue.AnnotationRevision]; got != revision {
			return fmt.Errorf("annotation %q, want %q", got, revision)
		}
		return nil
	})
}

func siteValueServed(revision string, servedBy, ready int32) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		if v := s.Status.SiteValue; v == nil || v.Revision != revision || v.ServedBy != servedBy || v.ReadyPods != ready {
			return fmt.Errorf("status.siteValue %+v, want %s served by %d of %d", s.Status.SiteValue, revision, servedBy, ready)
		}
		return nil
	}
}

// Issue 39: a rule change reaches the running pods through the ConfigMap and the pod annotation, never through the
// pod template; status.siteValue and SiteValueApplied follow what the pods report; a refused value is said.
func TestSiteValueAppliesLiveWithoutARollout(t *testing.T) {
	ns := namespace(t)
	site := createSite(t, ns, "live", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/live:1"},
		Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/old", To: "/new"}}}})
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(site), site))
	r1 := waitSiteValue(t, site)
	cm := siteValueOf(t, ns, "live")
	if !metav1.IsControlledBy(cm, site) || cm.Labels[v1alpha1.LabelSite] != "live" {
		t.Errorf("ConfigMap owner %v, labels %v: want controlled by the site, with its labels", cm.OwnerReferences, cm.Labels)
	}
	d := getDeployment(t, ns, "live")
	scraper.set(ns, "live-a", podmetrics.Sample{CPUs: "1", Pinned: true, SiteValueRevision: r1})
	scraper.set(ns, "live-b", podmetrics.Sample{CPUs: "2", Pinned: true, SiteValueRevision: r1})
	serverPod(t, d, "live-a", "10.0.3.1")
	serverPod(t, d, "live-b", "10.0.3.2")
	waitAnnotated(t, ns, "live-a", r1)
	waitAnnotated(t, ns, "live-b", r1)
	rollOutAndWaitReady(t, ns, "live")
	waitSite(t, ns, "live", "site value served", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionSiteValueApplied, metav1.ConditionTrue, v1alpha1.ReasonSiteValueServed); err != nil {
			return err
		}
		return siteValueServed(r1, 2, 2)(s)
	})
	before := getDeployment(t, ns, "live")

	// A redirect, a header and a cache-control rule change: the ConfigMap changes, the template does not.
	updateSite(t, site, func(s *v1alpha1.StaticSite) {
		s.Spec.Server.Redirects[0].To = "/newer"
		s.Spec.Server.Headers = []v1alpha1.Header{{Name: "X-Frame-Options", Value: "DENY"}}
		s.Spec.Server.CacheControl = []v1alpha1.CacheControlRule{{Glob: "/assets/**", Value: "immutable"}}
	})
	r2 := waitSiteValue(t, site)
	if r2 == r1 {
		t.Fatalf("the rule change did not change the revision (%s)", r1)
	}
	waitAnnotated(t, ns, "live-a", r2)
	waitAnnotated(t, ns, "live-b", r2)
	// Pods catch up: Unknown/Pending and Reconciling, while Ready stays True (they serve, the previous rules).
	waitSite(t, ns, "live", "site value pending", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionSiteValueApplied, metav1.ConditionUnknown, v1alpha1.ReasonSiteValuePending); err != nil {
			return err
		}
		if err := condition(s, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonSiteValuePending); err != nil {
			return err
		}
		if err := condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable); err != nil {
			return err
		}
		return siteValueServed(r2, 0, 2)(s)
	})
	scraper.set(ns, "live-a", podmetrics.Sample{CPUs: "1", Pinned: true, SiteValueRevision: r2})
	waitSite(t, ns, "live", "one pod caught up", siteValueServed(r2, 1, 2))
	scraper.set(ns, "live-b", podmetrics.Sample{CPUs: "2", Pinned: true, SiteValueRevision: r2})
	waitSite(t, ns, "live", "both pods caught up", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionSiteValueApplied, metav1.ConditionTrue, v1alpha1.ReasonSiteValueServed); err != nil {
			return err
		}
		if err := condition(s, v1alpha1.ConditionReconciling, "", ""); err != nil {
			return err
		}
		return siteValueServed(r2, 2, 2)(s)
	})
	after := getDeployment(t, ns, "live")
	if after.Generation != before.Generation || !equality.Semantic.DeepEqual(after.Spec.Template, before.Spec.Template) {
		t.Fatalf("a rule change changed the Deployment (generation %d → %d): its pods would roll", before.Generation, after.Generation)
	}

	// A value a pod refuses (a 404 page the content lacks): it keeps serving r2 and says why; the site is Stalled
	// with the server's reason and a Warning is recorded.
	refusal := "site value: notFoundPage: /missing.html is not in the content"
	// As the real server says it: the load failed (hyperstatic_content_load_failed), one site value refused, the
	// reason on /load-error (internal/contract pins all three).
	scraper.set(ns, "live-a", podmetrics.Sample{CPUs: "1", Pinned: true, SiteValueRevision: r2, SiteValueLoadFailures: 1, LoadFailed: true, LoadError: refusal})
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Server.NotFoundPage = "/missing.html" })
	r3 := waitSiteValue(t, site)
	waitSite(t, ns, "live", "refused", func(s *v1alpha1.StaticSite) error {
		if err := conditionWith(v1alpha1.ConditionSiteValueApplied, metav1.ConditionFalse, v1alpha1.ReasonSiteValueRefused, refusal)(s); err != nil {
			return err
		}
		if err := condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, ""); err != nil {
			return err // the content loads: only the value was refused
		}
		return conditionWith(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonSiteValueRefused, "pod live-a serves "+r2)(s)
	})
	waitEvent(t, ns, "live", "Warning Refused SiteValueApplied False: site value "+r3+" refused")
	// Fixed: the pods serve the new value, the site is Ready again and the recovery is news.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Server.NotFoundPage = "/404.html" })
	r4 := waitSiteValue(t, site)
	// live-b first: while live-a still says it refused, the condition stays False, so it turns True from False.
	scraper.set(ns, "live-b", podmetrics.Sample{CPUs: "2", Pinned: true, SiteValueRevision: r4})
	scraper.set(ns, "live-a", podmetrics.Sample{CPUs: "1", Pinned: true, SiteValueRevision: r4, SiteValueLoadFailures: 1})
	waitSite(t, ns, "live", "served again", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionSiteValueApplied, metav1.ConditionTrue, v1alpha1.ReasonSiteValueServed); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
	waitEvent(t, ns, "live", "Normal Served SiteValueApplied again: all 2 ready pods serve site value "+r4)
	if final := getDeployment(t, ns, "live"); final.Generation != before.Generation {
		t.Fatalf("the rule changes changed the Deployment (generation %d → %d)", before.Generation, final.Generation)
	}
}

// A ConfigMap of the site value's name that is not the site's is left alone: no Deployment mounts it, the site
// says which object is in the way, and it heals once the object is gone.
func TestSiteValueConfigMapOfSomeoneElse(t *testing.T) {
	ns := namespace(t)
	foreign := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken.site-value"}, Data: map[string]string{"site.json": `{"version":1,"headers":[{"name":"X-Not-Yours","value":"1"}]}`}}
	testenv.Must(t, k8s.Create(context.Background(), foreign))
	createSite(t, ns, "taken", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/taken:1"}})
	waitSite(t, ns, "taken", "not owned", func(s *v1alpha1.StaticSite) error {
		if err := conditionWith(v1alpha1.ConditionSiteValueApplied, metav1.ConditionFalse, v1alpha1.ReasonSiteValueConfigMapNotOwned, "taken.site-value")(s); err != nil {
			return err
		}
		return conditionWith(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonNotOwned, "ConfigMap "+ns+"/taken.site-value")(s)
	})
	got := &corev1.ConfigMap{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(foreign), got))
	if !equality.Semantic.DeepEqual(got.Data, foreign.Data) || len(got.OwnerReferences) != 0 || got.Labels[v1alpha1.LabelSite] != "" {
		t.Fatalf("the operator touched a ConfigMap it does not own: %+v", got)
	}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "taken"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("a Deployment exists (%v): its pods would mount someone else's site value", err)
	}
	testenv.Must(t, k8s.Delete(context.Background(), foreign))
	getDeployment(t, ns, "taken")
	waitSite(t, ns, "taken", "own site value", func(s *v1alpha1.StaticSite) error {
		if c := siteValueOf(t, ns, "taken"); len(c.OwnerReferences) == 0 {
			return fmt.Errorf("the ConfigMap is not the site's yet")
		}
		return condition(s, v1alpha1.ConditionSiteValueApplied, metav1.ConditionUnknown, v1alpha1.ReasonNoReadyPods)
	})
}
