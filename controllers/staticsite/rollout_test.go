package staticsite

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A pod template change must never be reported Ready on the strength of the old ReplicaSet's pods: every status
// the controller writes for the new generation, up to the completed rollout, says Ready=False. A watch sees every
// status write, so a single wrong one (the pass that applies the change, judged by the pre-apply Deployment) fails.
func TestTemplateChangeIsNotReadyUntilRolledOut(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createSite(t, ns, "gen", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/gen:v1"}})
	d := getDeployment(t, ns, "gen")
	completeRollout(t, d)
	site := waitSite(t, ns, "gen", "Ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	testenv.Must(t, err)
	w, err := wc.Watch(ctx, &v1alpha1.StaticSiteList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": "gen"},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: site.ResourceVersion}})
	testenv.Must(t, err)
	defer w.Stop()

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Content.Image = "example/gen:v2" })
	newGen := getSiteGeneration(t, ns, "gen")
	// Wait (through the watch) for the controller's first status of the new generation, and check each one.
	deadline := time.After(testenv.EventuallyTimeout)
	for seen := false; !seen; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			s, isSite := ev.Object.(*v1alpha1.StaticSite)
			if !isSite || s.Status.ObservedGeneration < newGen {
				continue
			}
			seen = true
			if meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionReady) {
				t.Errorf("generation %d reported Ready before its rollout: %s", newGen, describe(s))
			}
		case <-deadline:
			t.Fatalf("no status for generation %d", newGen)
		}
	}
	completeRollout(t, d)
	waitSite(t, ns, "gen", "Ready after the rollout", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
}

func getSiteGeneration(t *testing.T, ns, name string) int64 {
	t.Helper()
	s := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s))
	return s.Generation
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "scaled", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/s:v1"}})
	d := getDeployment(t, ns, "scaled")
	completeRollout(t, d)
	waitSite(t, ns, "scaled", "Ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	})

	scale := &autoscalingv1.Scale{}
	testenv.Must(t, k8s.SubResource("scale").Get(ctx, site, scale))
	if scale.Spec.Replicas != 1 || scale.Status.Replicas != 1 || scale.Status.Selector != "app.kubernetes.io/name=hyperstatic-server,hyperstatic.dev/site=scaled" {
		t.Errorf("scale %+v", scale)
	}
	// What `kubectl scale hss scaled --replicas 3` does.
	scaleTo(t, site, 3)
	testenv.Eventually(t, "Deployment scaled", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
	// More than one replica: a budget appears; the site is reconciling until the new pods are ready, but a scale-up
	// is not an outage: the pod that served before still serves, so Ready stays True and no "No longer ready".
	testenv.Eventually(t, "PDB", func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "scaled"}, &policyv1.PodDisruptionBudget{})
	})
	waitSite(t, ns, "scaled", "scaling up", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "Progressing"); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available")
	})
	completeRollout(t, d)
	for _, e := range events(t, ns, "scaled") {
		if strings.Contains(e, "No longer ready") {
			t.Errorf("a scale-up reported the site unready: %s", e)
		}
	}
	waitSite(t, ns, "scaled", "Ready at 3", func(s *v1alpha1.StaticSite) error {
		if s.Status.Replicas != 3 {
			return fmt.Errorf("status.replicas %d", s.Status.Replicas)
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available")
	})
	// Back to one: the budget goes away.
	scaleTo(t, site, 1)
	testenv.Eventually(t, "PDB deleted", func() error {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "scaled"}, &policyv1.PodDisruptionBudget{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("PDB still there: %w", err)
	})
	waitEvent(t, ns, "scaled", "Deleted PodDisruptionBudget")
}

func TestRolloutStalls(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createSite(t, ns, "stuck", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/stuck:v1"}})
	d := getDeployment(t, ns, "stuck")
	testenv.Eventually(t, "Deployment status", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "stuck-1" has timed out progressing.`}}}
		return k8s.Status().Update(ctx, d)
	})
	waitSite(t, ns, "stuck", "Stalled", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, "ProgressDeadlineExceeded"); err != nil {
			return err
		}
		if err := condition(s, v1alpha1.ConditionReconciling, "", ""); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, "ProgressDeadlineExceeded")
	})
	waitEvent(t, ns, "stuck", "Warning ProgressDeadlineExceeded")
}

func TestKeepsTheAutoscalersStatus(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "shared", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/shared:v1"}})
	waitSite(t, ns, "shared", "first status", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, "")
	})
	// The autoscaler writes its own condition.
	testenv.Eventually(t, "autoscaler status write", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(site), site))
		meta.SetStatusCondition(&site.Status.Conditions, metav1.Condition{Type: "AbleToScale", Status: metav1.ConditionTrue, Reason: "ReadyForNewScale", Message: "test"})
		return k8s.Status().Update(ctx, site)
	})
	// The site controller then rewrites its own status (a rollout completes) and must keep that condition.
	completeRollout(t, getDeployment(t, ns, "shared"))
	site = waitSite(t, ns, "shared", "Ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	})
	if err := condition(site, "AbleToScale", metav1.ConditionTrue, "ReadyForNewScale"); err != nil {
		t.Error(err)
	}
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
		ro := rolloutOf(tc.d, desired.Replicas(site), false)
		if ro.done != tc.done || ro.reason != tc.reason {
			t.Errorf("%s: %+v, want done=%v reason=%s", tc.name, ro, tc.done, tc.reason)
		}
	}
}

// The server-image queue's "rolled out" is the one rollout judgment with no pod beyond the wanted count: over every
// small Deployment status it agrees with the queue's own former rule (the Deployment controller observed the latest
// spec and replicas, updated and ready all equal spec.replicas).
func TestRolledOutIsTheExactDoneRollout(t *testing.T) {
	for want := int32(0); want <= 3; want++ {
		for gen := int64(1); gen <= 2; gen++ {
			for _, s := range statusesUpTo(4) {
				d := deployment(gen, 1, s[0], s[1], s[2])
				d.Spec.Replicas = ptr.To(want)
				former := d.Status.ObservedGeneration == d.Generation && s[1] == want && s[0] == want && s[2] == want
				if got := rolledOut(d); got != former {
					t.Errorf("want %d, generation %d, status %+v: rolledOut %v, the former rule %v", want, gen, d.Status, got, former)
				}
			}
		}
	}
}

// statusesUpTo lists every (replicas, updated, ready) with each count at most n, updated and ready at most replicas.
func statusesUpTo(n int32) [][3]int32 {
	var out [][3]int32
	for r := int32(0); r <= n; r++ {
		for u := int32(0); u <= r; u++ {
			for ready := int32(0); ready <= r; ready++ {
				out = append(out, [3]int32{r, u, ready})
			}
		}
	}
	return out
}
