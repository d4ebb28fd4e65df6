package staticsite

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

func deployment(gen, observed int64, replicas, updated, ready int32) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Generation: gen},
		Status: appsv1.DeploymentStatus{ObservedGeneration: observed, Replicas: replicas, UpdatedReplicas: updated, ReadyReplicas: ready}}
}

func TestRolloutOf(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Spec.Replicas = ptr.To[int32](2)
	stuck := deployment(1, 1, 2, 1, 1)
	stuck.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}}
	for _, tc := range []struct {
		name   string
		d      *appsv1.Deployment
		done   bool
		reason string
	}{
		{"absent", nil, false, "Creating"},
		{"spec not observed", deployment(2, 1, 2, 2, 2), false, "Progressing"},
		{"pods not updated", deployment(1, 1, 2, 1, 2), false, "RollingOut"},
		{"old pods left", deployment(1, 1, 3, 2, 2), false, "RollingOut"},
		{"not ready", deployment(1, 1, 2, 2, 1), false, "WaitingForReadyPods"},
		{"done", deployment(1, 1, 2, 2, 2), true, ""},
		{"deadline", stuck, false, "ProgressDeadlineExceeded"},
	} {
		ro := rolloutOf(site, tc.d, false)
		if ro.done != tc.done || ro.reason != tc.reason {
			t.Errorf("%s: %+v, want done=%v reason=%s", tc.name, ro, tc.done, tc.reason)
		}
	}
}

func TestSummarize(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(now), Recorder: record.NewFakeRecorder(100)}
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	site.Generation = 4
	pinned := metav1.Condition{Type: v1alpha1.ConditionPinned, Status: metav1.ConditionFalse, Reason: "FractionalCPU"}
	// Someone else's condition survives every rebuild.
	site.Status.Conditions = []metav1.Condition{{Type: "ScalingActive", Status: metav1.ConditionTrue, Reason: "ValidMetricFound", LastTransitionTime: metav1.Now()}}

	st := &state{site: site, content: ImageContent("image", "x", ""), memory: resource.MustParse("64Mi"), pinned: pinned,
		contentReason: "ImageSpecified", deployment: deployment(1, 1, 1, 1, 1)}
	r.summarize(st, nil)
	for typ, want := range map[string]metav1.ConditionStatus{v1alpha1.ConditionReady: "True", v1alpha1.ConditionContentAvailable: "True",
		v1alpha1.ConditionPinned: "False", "ScalingActive": "True", v1alpha1.ConditionReconciling: "", v1alpha1.ConditionStalled: ""} {
		if err := condition(site, typ, want, ""); err != nil {
			t.Error(err)
		}
	}
	ready := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionReady)
	if !ready.LastTransitionTime.Time.Equal(now) || ready.ObservedGeneration != 4 || site.Status.ObservedGeneration != 4 {
		t.Errorf("ready %+v observedGeneration %d", ready, site.Status.ObservedGeneration)
	}

	// A transient error: Reconciling says so, the rest is kept as it was.
	r.summarize(&state{site: site}, errors.New("etcd is slow"))
	if err := condition(site, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "RetryingAfterError"); err != nil {
		t.Error(err)
	}
	if err := condition(site, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available"); err != nil {
		t.Error(err)
	}

	// Missing content stalls the site and Ready follows Stalled.
	st.contentProblem = &problem{"ConfigMapNotFound", "missing"}
	r.summarize(st, nil)
	for typ, want := range map[string]metav1.ConditionStatus{v1alpha1.ConditionReady: "False", v1alpha1.ConditionStalled: "True",
		v1alpha1.ConditionContentAvailable: "False", v1alpha1.ConditionReconciling: ""} {
		if err := condition(site, typ, want, ""); err != nil {
			t.Error(err)
		}
	}

	// Scaled to zero with nothing to wait for is Ready.
	site.Spec.Replicas = ptr.To[int32](0)
	st.contentProblem = nil
	st.deployment = deployment(1, 1, 0, 0, 0)
	r.summarize(st, nil)
	if err := condition(site, v1alpha1.ConditionReady, metav1.ConditionTrue, "ScaledToZero"); err != nil {
		t.Error(err)
	}
}

// Ready is judged against the generation the pass's apply produced: a template change is not "done" because the
// old ReplicaSet's pods are ready; a change of replicas alone keeps Ready while no serving pod is lost.
func TestReadyAcrossTemplateChangesAndScaleUps(t *testing.T) {
	r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Recorder: record.NewFakeRecorder(100)}
	readySite := func(replicas int32) *v1alpha1.StaticSite {
		site := newSite(v1alpha1.ContentSource{Image: "x"})
		site.Spec.Replicas = ptr.To(replicas)
		st := &state{site: site, content: ImageContent("image", "x", ""), memory: resource.MustParse("64Mi"),
			pinned:     metav1.Condition{Type: v1alpha1.ConditionPinned, Status: metav1.ConditionFalse, Reason: "FractionalCPU"},
			deployment: deployment(1, 1, 2, 2, 2)}
		site.Spec.Replicas = ptr.To[int32](2)
		r.summarize(st, nil)
		if err := condition(site, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable); err != nil {
			t.Fatal(err)
		}
		site.Spec.Replicas = ptr.To(replicas)
		return site
	}
	pass := func(site *v1alpha1.StaticSite, d *appsv1.Deployment, templateChanged bool) {
		r.summarize(&state{site: site, content: ImageContent("image", "x", ""), memory: resource.MustParse("64Mi"),
			pinned:     metav1.Condition{Type: v1alpha1.ConditionPinned, Status: metav1.ConditionFalse, Reason: "FractionalCPU"},
			deployment: d, templateChanged: templateChanged}, nil)
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
// anything the controller watches.
func TestStalledSitesAreRetried(t *testing.T) {
	r := &Reconciler{Clock: clocktesting.NewFakePassiveClock(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), Recorder: record.NewFakeRecorder(100)}
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	st := &state{site: site, content: ImageContent("image", "x", ""), memory: resource.MustParse("64Mi"),
		pinned:   metav1.Condition{Type: v1alpha1.ConditionPinned, Status: metav1.ConditionFalse, Reason: "FractionalCPU"},
		rejected: &problem{v1alpha1.ReasonServiceRejected, "exceeded quota"}}
	r.summarize(st, nil)
	if st.requeueAfter != DefaultStalledRetry {
		t.Errorf("requeue after %v, want %v", st.requeueAfter, DefaultStalledRetry)
	}
}
