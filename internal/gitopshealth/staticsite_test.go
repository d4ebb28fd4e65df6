package gitopshealth

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	kstatus "sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// A StaticSite through its life, as the operator and the playing Deployment controller move it: every state
// read back from the API server and judged by the Argo CD health check and by kstatus.
func TestStaticSiteStates(t *testing.T) {
	ns := namespace(t)
	op := startOperator(t, ns)
	pages(t, ns, "pages")
	createSite(t, ns, "web", 2)

	// Created: the Deployment exists, its controller has not acted yet.
	u := waitSite(t, ns, "web", "rolling out", func(s *v1alpha1.StaticSite) error {
		if err := conditionIs(s.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, ""); err != nil {
			return err
		}
		return conditionIs(s.Status.Conditions, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "")
	})
	expect(t, u, "Progressing", said(conditionsOf(t, u), v1alpha1.ConditionReconciling), kstatus.InProgressStatus)

	rollOut(t, ns, "web", 2)
	u = waitSite(t, ns, "web", "ready", ready(v1alpha1.ReasonAvailable))
	expect(t, u, "Healthy", said(conditionsOf(t, u), v1alpha1.ConditionReady), kstatus.CurrentStatus)

	// A scale-up: the two pods serve on (Ready stays True), the third starts. Not there yet: Progressing.
	setReplicas(t, ns, "web", 3)
	u = waitSite(t, ns, "web", "scaling up", func(s *v1alpha1.StaticSite) error {
		if err := observed(s); err != nil {
			return err
		}
		if err := conditionIs(s.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable); err != nil {
			return err
		}
		return conditionIs(s.Status.Conditions, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "")
	})
	expect(t, u, "Progressing", said(conditionsOf(t, u), v1alpha1.ConditionReconciling), kstatus.InProgressStatus)
	rollOut(t, ns, "web", 3)
	u = waitSite(t, ns, "web", "ready at 3", ready(v1alpha1.ReasonAvailable))
	expect(t, u, "Healthy", said(conditionsOf(t, u), v1alpha1.ConditionReady), kstatus.CurrentStatus)

	// Scaled to zero on purpose: nothing serves and nothing is wrong.
	setReplicas(t, ns, "web", 0)
	rollOut(t, ns, "web", 0)
	u = waitSite(t, ns, "web", "scaled to zero", ready(v1alpha1.ReasonScaledToZero))
	expect(t, u, "Suspended", said(conditionsOf(t, u), v1alpha1.ConditionReady), kstatus.CurrentStatus)

	// The operator is down: a new spec is not observed, and a new site has no status at all.
	op.stop(t)
	setReplicas(t, ns, "web", 1)
	u, err := read(ns, "web", "StaticSite")
	testenv.Must(t, err)
	gen := u.GetGeneration()
	if og, _, _ := unstructured.NestedInt64(u.Object, "status", "observedGeneration"); og >= gen {
		t.Fatalf("observedGeneration %d, generation %d: the stopped operator observed the change", og, gen)
	}
	expect(t, u, "Progressing", fmt.Sprintf("Waiting for the operator to observe generation %d", gen), kstatus.InProgressStatus)
	createSite(t, ns, "unseen", 1)
	u, err = read(ns, "unseen", "StaticSite")
	testenv.Must(t, err)
	if _, found, _ := unstructured.NestedMap(u.Object, "status"); found {
		t.Fatalf("a site the stopped operator never saw has a status: %v", u.Object["status"])
	}
	// kstatus cannot tell an object whose controller has not written yet from one without a status: it computes
	// Current (see the package comment). The Lua check knows better.
	expect(t, u, "Progressing", "Waiting for the operator to observe generation 1", kstatus.CurrentStatus)

	// Back up, the operator catches up with both.
	startOperator(t, ns)
	for _, name := range []string{"web", "unseen"} {
		u = waitSite(t, ns, name, "observed, rolling out", func(s *v1alpha1.StaticSite) error {
			if err := observed(s); err != nil {
				return err
			}
			return conditionIs(s.Status.Conditions, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "")
		})
		expect(t, u, "Progressing", said(conditionsOf(t, u), v1alpha1.ConditionReconciling), kstatus.InProgressStatus)
		rollOut(t, ns, name, 1)
		u = waitSite(t, ns, name, "ready", ready(v1alpha1.ReasonAvailable))
		expect(t, u, "Healthy", said(conditionsOf(t, u), v1alpha1.ConditionReady), kstatus.CurrentStatus)
	}
}

// Every kind of Stalled the operator reports is Degraded in Argo CD and Failed for Flux, with the operator's reason
// and message; fixed, the site moves on.
func TestStalledSitesAreDegraded(t *testing.T) {
	ns := namespace(t)
	startOperator(t, ns)
	ctx := context.Background()
	pages(t, ns, "pages")

	// A field the tenancy policy refuses (the chart's default allows no priority class).
	refused := site(ns, "refused", 1)
	refused.Spec.PodTemplate.PriorityClassName = "system-node-critical"
	testenv.Must(t, k8s.Create(ctx, refused))
	// Content that does not exist.
	nocontent := site(ns, "nocontent", 1)
	nocontent.Spec.Content.ConfigMaps = []v1alpha1.ConfigMapContent{{Name: "absent"}}
	testenv.Must(t, k8s.Create(ctx, nocontent))
	// A Service of the site's name that someone else owns.
	testenv.Must(t, k8s.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "theirs", Port: 7000}}}}))
	createSite(t, ns, "taken", 1)
	// A rollout the Deployment controller gave up on.
	createSite(t, ns, "deadline", 1)
	deploymentStatus(t, ns, "deadline", func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "deadline-1" has timed out progressing.`}}}
	})

	for name, reason := range map[string]string{"refused": v1alpha1.ReasonPolicyViolation, "nocontent": v1alpha1.ReasonConfigMapNotFound,
		"taken": v1alpha1.ReasonNotOwned, "deadline": v1alpha1.ReasonProgressDeadlineExceeded} {
		u := waitSite(t, ns, name, "stalled", func(s *v1alpha1.StaticSite) error {
			if err := observed(s); err != nil {
				return err
			}
			return conditionIs(s.Status.Conditions, v1alpha1.ConditionStalled, metav1.ConditionTrue, reason)
		})
		conds := conditionsOf(t, u)
		s := expect(t, u, "Degraded", said(conds, v1alpha1.ConditionStalled), kstatus.FailedStatus)
		if want := said(conds, v1alpha1.ConditionStalled); reason+": "+s.flux.Message != want {
			t.Errorf("%s: kstatus message %q, want the Stalled message %q", name, s.flux.Message, want)
		}
	}

	// The content appears: no longer stalled, the site rolls out.
	pages(t, ns, "absent")
	u := waitSite(t, ns, "nocontent", "rolling out", func(s *v1alpha1.StaticSite) error {
		return conditionIs(s.Status.Conditions, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "")
	})
	expect(t, u, "Progressing", said(conditionsOf(t, u), v1alpha1.ConditionReconciling), kstatus.InProgressStatus)
}

func site(ns, name string, replicas int32) *v1alpha1.StaticSite {
	return &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.StaticSiteSpec{
		Content:  v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}},
		Replicas: ptr.To(replicas),
	}}
}

func createSite(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	testenv.Must(t, k8s.Create(context.Background(), site(ns, name, replicas)))
}

// pages creates a content ConfigMap.
func pages(t *testing.T, ns, name string) {
	t.Helper()
	testenv.Must(t, k8s.Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Data: map[string]string{"index.html": "<h1>hello</h1>"}}))
}

// setReplicas changes spec.replicas as a user would, retrying when a status write came first.
func setReplicas(t *testing.T, ns, name string, n int32) {
	t.Helper()
	testenv.Eventually(t, "set replicas", func() error {
		s := &v1alpha1.StaticSite{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s); err != nil {
			return err
		}
		s.Spec.Replicas = ptr.To(n)
		return k8s.Update(context.Background(), s)
	})
}

func waitSite(t *testing.T, ns, name, what string, check func(*v1alpha1.StaticSite) error) *unstructured.Unstructured {
	t.Helper()
	return waitFor[v1alpha1.StaticSite](t, ns, name, "StaticSite", what, check)
}

// observed: the operator has judged the current spec.
func observed(s *v1alpha1.StaticSite) error {
	if s.Status.ObservedGeneration != s.Generation {
		return fmt.Errorf("observedGeneration %d, generation %d", s.Status.ObservedGeneration, s.Generation)
	}
	return nil
}

// ready: the current spec is observed, Ready is True with reason, and the site is not reconciling.
func ready(reason string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		if err := observed(s); err != nil {
			return err
		}
		if err := conditionIs(s.Status.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, reason); err != nil {
			return err
		}
		if c := s.Status.Conditions; conditionIs(c, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "") == nil {
			return fmt.Errorf("still reconciling: %s", describe(c))
		}
		return nil
	}
}

// rollOut plays the Deployment controller and the kubelet once the operator has asked for replicas pods: every
// one updated, ready and available.
func rollOut(t *testing.T, ns, name string, replicas int32) {
	t.Helper()
	deploymentStatus(t, ns, name, func(d *appsv1.Deployment) {
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: replicas, UpdatedReplicas: replicas,
			ReadyReplicas: replicas, AvailableReplicas: replicas,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}
	}, replicas)
}

// deploymentStatus writes the site's Deployment's status, once the operator has created it (with want replicas,
// when given).
func deploymentStatus(t *testing.T, ns, name string, write func(*appsv1.Deployment), want ...int32) {
	t.Helper()
	testenv.Eventually(t, "Deployment "+name+" status", func() error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return err
		}
		if len(want) > 0 && (d.Spec.Replicas == nil || *d.Spec.Replicas != want[0]) {
			return fmt.Errorf("the operator has not set %d replicas yet (spec.replicas %v)", want[0], d.Spec.Replicas)
		}
		write(d)
		return k8s.Status().Update(context.Background(), d)
	})
}
