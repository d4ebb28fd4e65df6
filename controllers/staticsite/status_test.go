package staticsite

import (
	"errors"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

func deployment(gen, observed int64, replicas, updated, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: ready}}
}

// testNow is the clock reading of the passes the status tests derive.
var testNow = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// derive runs deriveStatus as a pass does (the clock read once) and stores the result in the site.
func derive(site *v1alpha1.StaticSite, o *observation) {
	o.site = site
	if o.now.IsZero() {
		o.now = testNow
	}
	site.Status = deriveStatus(site, o)
}

// healthy is an observation of a site whose one pod serves: every step found what it wanted.
func healthy() *observation {
	return &observation{content: desired.ImageContent("image", "x", ""), memory: resource.MustParse("64Mi"), contentReason: "ImageSpecified",
		pinned:     metav1.Condition{Type: v1alpha1.ConditionPinned, Status: metav1.ConditionFalse, Reason: "FractionalCPU"},
		deployment: deployment(1, 1, 1, 1, 1)}
}

func TestDeriveStatusKeepsWhatItDoesNotOwn(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Generation = 4
	// Someone else's condition survives every rebuild.
	site.Status.Conditions = []metav1.Condition{{Type: "ScalingActive", Status: metav1.ConditionTrue, Reason: "ValidMetricFound", LastTransitionTime: metav1.Now()}}
	site.Status.Autoscaling = &v1alpha1.AutoscalingStatus{DesiredReplicas: 3}

	derive(site, healthy())
	for typ, want := range map[string]metav1.ConditionStatus{v1alpha1.ConditionReady: "True", v1alpha1.ConditionContentAvailable: "True",
		v1alpha1.ConditionPinned: "False", "ScalingActive": "True", v1alpha1.ConditionReconciling: "", v1alpha1.ConditionStalled: ""} {
		if err := condition(site, typ, want, ""); err != nil {
			t.Error(err)
		}
	}
	ready := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionReady)
	if !ready.LastTransitionTime.Time.Equal(testNow) || ready.ObservedGeneration != 4 || site.Status.ObservedGeneration != 4 {
		t.Errorf("ready %+v observedGeneration %d", ready, site.Status.ObservedGeneration)
	}
	if site.Status.Autoscaling == nil || site.Status.Autoscaling.DesiredReplicas != 3 {
		t.Errorf("status.autoscaling is the autoscaler's: %+v", site.Status.Autoscaling)
	}

	// A transient error: Reconciling says so, the rest is kept as it was.
	derive(site, &observation{err: errors.New("etcd is slow")})
	if err := condition(site, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "RetryingAfterError"); err != nil {
		t.Error(err)
	}
	if err := condition(site, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available"); err != nil {
		t.Error(err)
	}
}

// deriveStatus is pure: the site it reads is left as it was, and the same input gives the same status.
func TestDeriveStatusIsPure(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Available"}}
	o := healthy()
	o.site, o.now, o.contentProblem = site, testNow, &problem{Reason: "ConfigMapNotFound", Message: "missing"}
	before := site.DeepCopy()
	first, second := deriveStatus(site, o), deriveStatus(site, o)
	if !equality.Semantic.DeepEqual(site, before) {
		t.Errorf("deriveStatus changed the site it read:\n%+v\n%+v", before.Status, site.Status)
	}
	if !equality.Semantic.DeepEqual(first, second) {
		t.Errorf("two derivations differ:\n%+v\n%+v", first, second)
	}
}

// Ready is judged against the generation the pass's apply produced: a template change is not "done" because the
// old ReplicaSet's pods are ready; a change of replicas alone keeps Ready while no serving pod is lost.
func TestReadyAcrossTemplateChangesAndScaleUps(t *testing.T) {
	readySite := func(replicas int32) *v1alpha1.StaticSite {
		site := newSite(v1alpha1.ContentSource{Image: "x"})
		site.Spec.Replicas = ptr.To(replicas)
		o := healthy()
		o.deployment = deployment(1, 1, 2, 2, 2)
		site.Spec.Replicas = ptr.To[int32](2)
		derive(site, o)
		if err := condition(site, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable); err != nil {
			t.Fatal(err)
		}
		site.Spec.Replicas = ptr.To(replicas)
		return site
	}
	pass := func(site *v1alpha1.StaticSite, d *appsv1.Deployment, templateChanged bool) {
		o := healthy()
		o.deployment, o.templateChanged = d, templateChanged
		derive(site, o)
	}
	for _, tc := range []struct {
		name            string
		replicas        int32
		d               *appsv1.Deployment
		templateChanged bool
		ready           metav1.ConditionStatus
		reconciling     string // "" for absent
	}{
		{"template changed, not yet observed: the old pods' readiness does not count", 2, deployment(2, 1, 2, 2, 2), true, "False", "Progressing"},
		{"replicas changed, not yet observed", 3, deployment(2, 1, 2, 2, 2), false, "True", "Progressing"},
		{"scale-up with new pods starting", 3, deployment(2, 2, 3, 3, 2), false, "True", "ScalingUp"},
		{"a serving pod lost", 2, deployment(1, 1, 2, 2, 1), false, "False", "WaitingForReadyPods"},
		{"scale-up while a serving pod is lost", 3, deployment(2, 2, 3, 3, 1), false, "False", "WaitingForReadyPods"},
		{"rolling out a new template", 2, deployment(2, 2, 3, 1, 3), false, "False", "RollingOut"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := readySite(tc.replicas)
			pass(site, tc.d, tc.templateChanged)
			if err := condition(site, v1alpha1.ConditionReady, tc.ready, ""); err != nil {
				t.Error(err)
			}
			want := metav1.ConditionTrue
			if tc.reconciling == "" {
				want = ""
			}
			if err := condition(site, v1alpha1.ConditionReconciling, want, tc.reconciling); err != nil {
				t.Error(err)
			}
		})
	}

	// A site that was never Ready does not become Ready while pods are still starting.
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Spec.Replicas = ptr.To[int32](2)
	pass(site, deployment(1, 1, 2, 2, 1), false)
	if err := condition(site, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonWaitingForReadyPods); err != nil {
		t.Error(err)
	}
}

// A Stalled site is retried on a timer: what stalls it (quota, webhook, a foreign object) may be fixed outside
// anything the controller watches. The timer is StalledRetry (plus the site's share of a tenth) while few are
// Stalled; when so many are that their retries would pass StalledRetriesPerSecond together, each waits longer, and a
// site no longer Stalled frees its share.
func TestStalledSitesAreRetried(t *testing.T) {
	r := &Reconciler{}
	stalled := func(name string) *observation {
		site := newSite(v1alpha1.ContentSource{Image: "x"})
		site.Name = name
		o := healthy()
		o.site, o.tun = site, r.tunables()
		o.rejected = &problem{Reason: v1alpha1.ReasonServiceRejected, Message: "exceeded quota"}
		derive(site, o)
		r.retryStalled(o, site.Status)
		return o
	}
	if o := stalled("a"); o.requeueAfter < DefaultStalledRetry || o.requeueAfter >= DefaultStalledRetry*11/10 {
		t.Errorf("requeue after %v, want %v and at most a tenth more", o.requeueAfter, DefaultStalledRetry)
	}
	for i := range 1000 {
		stalled(fmt.Sprintf("s-%d", i))
	}
	// 1,001 Stalled at 5 retries a second: each every 200 s at least.
	if o := stalled("a"); o.requeueAfter < 200*time.Second {
		t.Errorf("1,001 Stalled sites: requeue after %v, want at least 200 s", o.requeueAfter)
	}

	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Name = "a"
	o := healthy()
	o.site, o.tun = site, r.tunables()
	derive(site, o)
	r.retryStalled(o, site.Status)
	if o.requeueAfter != 0 {
		t.Errorf("a site that is not Stalled: requeue after %v", o.requeueAfter)
	}
	if n := r.stalled.Len(); n != 1000 {
		t.Errorf("%d sites counted Stalled after one healed, want 1,000", n)
	}
}
