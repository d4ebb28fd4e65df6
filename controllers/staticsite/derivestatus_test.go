package staticsite

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/reconcile"
)

// want is a condition a row expects: its status and reason, or absent (status "").
type want struct {
	status metav1.ConditionStatus
	reason string
}

var absent = want{}

// deadlined is a Deployment whose rollout passed its progress deadline.
func deadlined() *appsv1.Deployment {
	d := deployment(2, 2, 2, 1, 1)
	d.Status.Conditions = []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
		Reason: deploymentTimedOutReason, Message: "ReplicaSet has timed out progressing"}}
	return d
}

// TestDeriveStatus is the table of deriveStatus, the one place Ready, Reconciling and Stalled are set: every reason
// of the three, each problem a step can record, the rollout's states, scale-ups, and the server-image queue. Each
// row starts from a site that was Ready with one (or two) pods, or from a new site, and checks the three conditions
// and that the abnormal-true ones (api/v1alpha1.StaticSiteAbnormalTrueConditions) are never written False.
func TestDeriveStatus(t *testing.T) {
	const queued = "keeps server image a while waiting to move to b: 0 site(s) ahead in the queue, 1 of at most 1 moving now"
	earlier := metav1.NewTime(testNow.Add(-time.Hour))
	type row struct {
		name      string
		new       bool // a site no pass has written yet (else: it was Ready, with `replicas` pods ready)
		replicas  int32
		observe   func(o *observation)
		before    []metav1.Condition // extra conditions of the status as read
		ready     want
		reconcile want
		stalled   want
		content   metav1.ConditionStatus // ContentAvailable, when the row says
	}
	problemRow := func(reason string, content bool) row {
		r := row{name: "problem " + reason, replicas: 1, ready: want{"False", reason}, reconcile: absent, stalled: want{"True", reason}}
		if content {
			r.observe = func(o *observation) { o.contentProblem = &problem{Reason: reason, Message: "m"} }
			r.content = "False"
		} else {
			r.observe = func(o *observation) { o.reject(&problem{Reason: reason, Message: "m"}) }
			r.content = "True"
		}
		return r
	}
	rows := []row{
		// Healthy.
		{name: "available", replicas: 1, ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: absent, stalled: absent, content: "True"},
		{name: "available, new site", new: true, replicas: 1, ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: absent, stalled: absent},
		{name: "scaled to zero", replicas: 0, observe: func(o *observation) { o.deployment = deployment(1, 1, 0, 0, 0) },
			ready: want{"True", v1alpha1.ReasonScaledToZero}, reconcile: absent, stalled: absent},

		// The policy and transient errors.
		{name: "policy violation", replicas: 1, observe: func(o *observation) {
			*o = observation{refused: &problem{Reason: v1alpha1.ReasonPolicyViolation, Message: "spec.server.image: not allowed"}}
		}, ready: want{"False", v1alpha1.ReasonPolicyViolation}, reconcile: absent, stalled: want{"True", v1alpha1.ReasonPolicyViolation}},
		{name: "policy violation while reconciling", replicas: 1, before: []metav1.Condition{{Type: v1alpha1.ConditionReconciling, Status: "True", Reason: v1alpha1.ReasonRollingOut}},
			observe: func(o *observation) {
				*o = observation{refused: &problem{Reason: v1alpha1.ReasonPolicyViolation, Message: "m"}}
			},
			ready: want{"False", v1alpha1.ReasonPolicyViolation}, reconcile: absent, stalled: want{"True", v1alpha1.ReasonPolicyViolation}},
		{name: "transient error keeps Ready", replicas: 1, observe: func(o *observation) { *o = observation{err: errors.New("etcd is slow")} },
			ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: want{"True", v1alpha1.ReasonRetryingAfterError}, stalled: absent},
		{name: "transient error keeps Stalled", replicas: 1, before: []metav1.Condition{{Type: v1alpha1.ConditionStalled, Status: "True", Reason: v1alpha1.ReasonNotOwned}},
			observe: func(o *observation) { *o = observation{err: errors.New("etcd is slow")} },
			ready:   want{"True", v1alpha1.ReasonAvailable}, reconcile: want{"True", v1alpha1.ReasonRetryingAfterError}, stalled: want{"True", v1alpha1.ReasonNotOwned}},

		// Content problems: ContentAvailable=False, Stalled, not Ready.
		problemRow(v1alpha1.ReasonConfigMapNotFound, true),
		problemRow(v1alpha1.ReasonImageVolumeUnsupported, true),
		problemRow(v1alpha1.ReasonClaimNotFound, true),
		problemRow(v1alpha1.ReasonClaimLost, true),
		problemRow(v1alpha1.ReasonClaimAccessMode, true),
		problemRow(v1alpha1.ReasonNoContentSource, true),
		problemRow(v1alpha1.ReasonImagePullFailed, true),
		problemRow(v1alpha1.ReasonContentLoadFailed, true),
		// Children the API server refused, or that are not the site's.
		problemRow(v1alpha1.ReasonDeploymentRejected, false),
		problemRow(v1alpha1.ReasonServiceRejected, false),
		problemRow(v1alpha1.ReasonPodDisruptionBudgetRejected, false),
		problemRow(v1alpha1.ReasonNotOwned, false),
		problemRow(v1alpha1.ReasonSecretInvalid, false),
		{name: "a content problem wins over a refused child", replicas: 1, observe: func(o *observation) {
			o.reject(&problem{Reason: v1alpha1.ReasonServiceRejected, Message: "quota"})
			o.contentProblem = &problem{Reason: v1alpha1.ReasonClaimLost, Message: "lost"}
		}, ready: want{"False", v1alpha1.ReasonClaimLost}, reconcile: absent, stalled: want{"True", v1alpha1.ReasonClaimLost}, content: "False"},
		{name: "the first refused child is reported", replicas: 1, observe: func(o *observation) {
			o.reject(&problem{Reason: v1alpha1.ReasonNotOwned, Message: "foreign Service"})
			o.reject(&problem{Reason: v1alpha1.ReasonPodDisruptionBudgetRejected, Message: "quota"})
		}, ready: want{"False", v1alpha1.ReasonNotOwned}, reconcile: absent, stalled: want{"True", v1alpha1.ReasonNotOwned}},
		{name: "a refused child wins over a rollout", replicas: 1, observe: func(o *observation) {
			o.deployment = deployment(2, 1, 1, 1, 1)
			o.reject(&problem{Reason: v1alpha1.ReasonServiceRejected, Message: "quota"})
		}, ready: want{"False", v1alpha1.ReasonServiceRejected}, reconcile: absent, stalled: want{"True", v1alpha1.ReasonServiceRejected}},
		{name: "problem clears Reconciling", replicas: 1, before: []metav1.Condition{{Type: v1alpha1.ConditionReconciling, Status: "True", Reason: v1alpha1.ReasonRollingOut}},
			observe: func(o *observation) {
				o.contentProblem = &problem{Reason: v1alpha1.ReasonConfigMapNotFound, Message: "m"}
			},
			ready: want{"False", v1alpha1.ReasonConfigMapNotFound}, reconcile: absent, stalled: want{"True", v1alpha1.ReasonConfigMapNotFound}},

		// The rollout.
		{name: "creating", new: true, replicas: 1, observe: func(o *observation) { o.deployment = nil },
			ready: want{"False", v1alpha1.ReasonCreating}, reconcile: want{"True", v1alpha1.ReasonCreating}, stalled: absent},
		{name: "creating after a Ready site lost its Deployment", replicas: 1, observe: func(o *observation) { o.deployment = nil },
			ready: want{"False", v1alpha1.ReasonCreating}, reconcile: want{"True", v1alpha1.ReasonCreating}, stalled: absent},
		{name: "new template not yet observed", replicas: 1, observe: func(o *observation) { o.deployment, o.templateChanged = deployment(2, 1, 1, 1, 1), true },
			ready: want{"False", v1alpha1.ReasonProgressing}, reconcile: want{"True", v1alpha1.ReasonProgressing}, stalled: absent},
		{name: "replicas changed, not yet observed", replicas: 2, observe: func(o *observation) { o.deployment = deployment(2, 1, 2, 2, 2) },
			ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: want{"True", v1alpha1.ReasonProgressing}, stalled: absent},
		{name: "pods not updated", replicas: 2, observe: func(o *observation) { o.deployment = deployment(2, 2, 2, 1, 2) },
			ready: want{"False", v1alpha1.ReasonRollingOut}, reconcile: want{"True", v1alpha1.ReasonRollingOut}, stalled: absent},
		{name: "old pods terminating", replicas: 2, observe: func(o *observation) { o.deployment = deployment(2, 2, 3, 2, 2) },
			ready: want{"False", v1alpha1.ReasonRollingOut}, reconcile: want{"True", v1alpha1.ReasonRollingOut}, stalled: absent},
		{name: "waiting for ready pods, new site", new: true, replicas: 2, observe: func(o *observation) { o.deployment = deployment(1, 1, 2, 2, 1) },
			ready: want{"False", v1alpha1.ReasonWaitingForReadyPods}, reconcile: want{"True", v1alpha1.ReasonWaitingForReadyPods}, stalled: absent},
		{name: "a serving pod lost", replicas: 2, observe: func(o *observation) { o.deployment = deployment(1, 1, 2, 2, 1) },
			ready: want{"False", v1alpha1.ReasonWaitingForReadyPods}, reconcile: want{"True", v1alpha1.ReasonWaitingForReadyPods}, stalled: absent},
		{name: "progress deadline exceeded", replicas: 2, observe: func(o *observation) { o.deployment = deadlined() },
			ready: want{"False", v1alpha1.ReasonProgressDeadlineExceeded}, reconcile: absent, stalled: want{"True", v1alpha1.ReasonProgressDeadlineExceeded}},

		// Scale-ups keep Ready while no serving pod is lost.
		{name: "scale-up with new pods starting", replicas: 3, observe: func(o *observation) { o.deployment = deployment(2, 2, 3, 3, 2) },
			ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: want{"True", v1alpha1.ReasonScalingUp}, stalled: absent},
		{name: "scale-up while a serving pod is lost", replicas: 3, observe: func(o *observation) { o.deployment = deployment(2, 2, 3, 3, 1) },
			ready: want{"False", v1alpha1.ReasonWaitingForReadyPods}, reconcile: want{"True", v1alpha1.ReasonWaitingForReadyPods}, stalled: absent},
		{name: "scale-up of a site that was not Ready", new: true, replicas: 3, observe: func(o *observation) { o.deployment = deployment(2, 2, 3, 3, 2) },
			ready: want{"False", v1alpha1.ReasonWaitingForReadyPods}, reconcile: want{"True", v1alpha1.ReasonWaitingForReadyPods}, stalled: absent},

		// The server-image queue: Reconciling once nothing else is in progress or stuck; Ready as it was.
		{name: "queued for a new server image", replicas: 1, observe: func(o *observation) { o.serverImageQueued = queued },
			ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: want{"True", v1alpha1.ReasonServerImageUpgradeQueued}, stalled: absent},
		{name: "queued, scaled to zero", replicas: 0, observe: func(o *observation) { o.serverImageQueued, o.deployment = queued, deployment(1, 1, 0, 0, 0) },
			ready: want{"True", v1alpha1.ReasonScaledToZero}, reconcile: want{"True", v1alpha1.ReasonServerImageUpgradeQueued}, stalled: absent},
		{name: "queued while rolling out: the rollout says more", replicas: 2, observe: func(o *observation) {
			o.serverImageQueued, o.deployment = queued, deployment(2, 2, 2, 1, 2)
		}, ready: want{"False", v1alpha1.ReasonRollingOut}, reconcile: want{"True", v1alpha1.ReasonRollingOut}, stalled: absent},
		{name: "queued while scaling up", replicas: 3, observe: func(o *observation) { o.serverImageQueued, o.deployment = queued, deployment(2, 2, 3, 3, 2) },
			ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: want{"True", v1alpha1.ReasonScalingUp}, stalled: absent},
		{name: "queued while stalled", replicas: 1, observe: func(o *observation) {
			o.serverImageQueued = queued
			o.reject(&problem{Reason: v1alpha1.ReasonDeploymentRejected, Message: "quota"})
		}, ready: want{"False", v1alpha1.ReasonDeploymentRejected}, reconcile: absent, stalled: want{"True", v1alpha1.ReasonDeploymentRejected}},
		{name: "queued on a transient error", replicas: 1, observe: func(o *observation) { *o = observation{err: errors.New("conflict"), serverImageQueued: queued} },
			ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: want{"True", v1alpha1.ReasonRetryingAfterError}, stalled: absent},
		{name: "no longer queued", replicas: 1, before: []metav1.Condition{{Type: v1alpha1.ConditionReconciling, Status: "True", Reason: v1alpha1.ReasonServerImageUpgradeQueued, LastTransitionTime: earlier}},
			ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: absent, stalled: absent},
		{name: "a stalled site recovers", replicas: 1, before: []metav1.Condition{{Type: v1alpha1.ConditionStalled, Status: "True", Reason: v1alpha1.ReasonNotOwned}},
			ready: want{"True", v1alpha1.ReasonAvailable}, reconcile: absent, stalled: absent},
	}
	abnormal := reconcile.NewPolarity(v1alpha1.StaticSiteAbnormalTrueConditions)
	for _, tc := range rows {
		t.Run(tc.name, func(t *testing.T) {
			site := newSite(v1alpha1.ContentSource{Image: "x"})
			site.Generation = 2
			site.Spec.Replicas = ptr.To(tc.replicas)
			if !tc.new {
				site.Status.ReadyReplicas = min(tc.replicas, 2) // a scale-up to 3 starts from 2 serving pods
				site.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: "True", Reason: v1alpha1.ReasonAvailable, LastTransitionTime: earlier}}
			}
			site.Status.Conditions = append(site.Status.Conditions, tc.before...)
			o := healthy()
			o.deployment = deployment(2, 2, tc.replicas, tc.replicas, tc.replicas)
			if tc.observe != nil {
				tc.observe(o)
			}
			derive(site, o)
			for _, c := range []struct {
				typ string
				w   want
			}{{v1alpha1.ConditionReady, tc.ready}, {v1alpha1.ConditionReconciling, tc.reconcile}, {v1alpha1.ConditionStalled, tc.stalled}} {
				if err := condition(site, c.typ, c.w.status, c.w.reason); err != nil {
					t.Error(err)
				} else if c.w.reason == "" && c.w.status != "" {
					t.Errorf("row %q names no reason for %s", tc.name, c.typ)
				}
			}
			if tc.content != "" {
				if err := condition(site, v1alpha1.ConditionContentAvailable, tc.content, ""); err != nil {
					t.Error(err)
				}
			}
			for _, c := range site.Status.Conditions {
				if abnormal.AbnormalTrue(c.Type) && c.Status != metav1.ConditionTrue {
					t.Errorf("abnormal-true condition %s written %s: it is removed when it no longer holds", c.Type, c.Status)
				}
			}
		})
	}
	if len(rows) < 40 {
		t.Errorf("%d rows: the table covers every reason of Ready, Reconciling and Stalled", len(rows))
	}
}

// The queue's Reconciling keeps the transition time it had while the site waits from pass to pass, and starts at
// the pass's clock reading when the wait begins.
func TestDeriveStatusQueueKeepsItsTransitionTime(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	o := healthy()
	o.serverImageQueued = "waiting"
	derive(site, o)
	if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionReconciling); c == nil || !c.LastTransitionTime.Time.Equal(testNow) {
		t.Fatalf("the wait begins now: %+v", c)
	}
	o = healthy()
	o.serverImageQueued, o.now = "still waiting", testNow.Add(time.Minute)
	derive(site, o)
	if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionReconciling); c == nil || !c.LastTransitionTime.Time.Equal(testNow) || c.Message != "still waiting" {
		t.Fatalf("the wait goes on: %+v", c)
	}
}

// A site value the pods are still catching up with keeps Reconciling's transition time from pass to pass: the
// operator passes every 2-3 s while pods catch up, and a time rewritten on each was a status write on each
// (bench-operator, operator-pools-2026-12-03.md).
func TestDeriveStatusPendingSiteValueKeepsItsTransitionTime(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	pending := func(now time.Time) *observation {
		o := healthy()
		o.siteValue = &siteValueState{readyPods: 2, servedBy: 1, pending: []string{"b"}}
		o.now = now
		return o
	}
	derive(site, pending(testNow))
	if err := condition(site, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonSiteValuePending); err != nil {
		t.Fatal(err)
	}
	derive(site, pending(testNow.Add(3*time.Second)))
	if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionReconciling); c == nil || !c.LastTransitionTime.Time.Equal(testNow) {
		t.Fatalf("the catching up goes on since the first pass: %+v", c)
	}
	o := healthy()
	o.now = testNow.Add(6 * time.Second)
	derive(site, o)
	if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionReconciling); c != nil {
		t.Fatalf("caught up: Reconciling removed, got %+v", c)
	}
}
