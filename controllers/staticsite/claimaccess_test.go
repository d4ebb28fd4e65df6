package staticsite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func createClaim(t *testing.T, ns, name string, modes ...corev1.PersistentVolumeAccessMode) {
	t.Helper()
	testenv.Must(t, k8s.Create(context.Background(), &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: modes,
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}))
}

func claimSite(claim string, replicas int32) v1alpha1.StaticSiteSpec {
	return v1alpha1.StaticSiteSpec{Replicas: ptr.To(replicas), Content: v1alpha1.ContentSource{
		PersistentVolumeClaim: &v1alpha1.PersistentVolumeClaimContent{ClaimName: claim}}}
}

// More than one replica on a ReadWriteOnce claim would leave every pod but one in Multi-Attach: the site is
// refused (Stalled, ClaimAccessMode) and no Deployment is made.
func TestReadWriteOnceClaimRefusesReplicas(t *testing.T) {
	ns := namespace(t)
	createClaim(t, ns, "rwo", corev1.ReadWriteOnce)
	createSite(t, ns, "wide", claimSite("rwo", 2))
	site := waitSite(t, ns, "wide", "Stalled on the access mode", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, v1alpha1.ReasonClaimAccessMode); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonClaimAccessMode)
	})
	msg := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionStalled).Message
	for _, want := range []string{`"rwo"`, "ReadWriteOnce", "2 replicas", "ReadOnlyMany or ReadWriteMany", "replicas: 1"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Stalled message %q does not say %q", msg, want)
		}
	}
	waitEvent(t, ns, "wide", "Warning ClaimAccessMode Stalled")
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "wide"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Deployment was made for a refused site (err %v)", err)
	}
}

// A ReadWriteOncePod claim serving one replica is fine; scaling it up leaves the running Deployment at one replica
// (what serves keeps serving) and stalls the site until it is scaled back.
func TestReadWriteOncePodClaimIsNotScaledBeyondOne(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createClaim(t, ns, "rwop", corev1.ReadWriteOncePod)
	site := createSite(t, ns, "single", claimSite("rwop", 1))
	d := getDeployment(t, ns, "single")
	completeRollout(t, d)
	waitSite(t, ns, "single", "Ready with one replica", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})

	scaleTo(t, site, 3)
	waitSite(t, ns, "single", "Stalled on the access mode", func(s *v1alpha1.StaticSite) error {
		if s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("generation %d not observed yet", s.Generation)
		}
		return condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonClaimAccessMode)
	})
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
	if *d.Spec.Replicas != 1 {
		t.Errorf("the Deployment was scaled to %d replicas on a ReadWriteOncePod claim", *d.Spec.Replicas)
	}

	scaleTo(t, site, 1)
	waitSite(t, ns, "single", "Ready again", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionStalled, "", ""); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
}

// A claim that many nodes can mount scales freely.
func TestReadOnlyManyClaimScales(t *testing.T) {
	ns := namespace(t)
	createClaim(t, ns, "shared", corev1.ReadWriteOnce, corev1.ReadOnlyMany)
	createSite(t, ns, "many", claimSite("shared", 3))
	waitSite(t, ns, "many", "ClaimFound", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonClaimFound)
	})
	if d := getDeployment(t, ns, "many"); *d.Spec.Replicas != 3 {
		t.Errorf("replicas %d", *d.Spec.Replicas)
	}
}

func TestSingleAttach(t *testing.T) {
	claim := func(spec, bound []corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{Spec: corev1.PersistentVolumeClaimSpec{AccessModes: spec},
			Status: corev1.PersistentVolumeClaimStatus{AccessModes: bound}}
	}
	m := func(modes ...corev1.PersistentVolumeAccessMode) []corev1.PersistentVolumeAccessMode { return modes }
	for _, tc := range []struct {
		name   string
		claim  *corev1.PersistentVolumeClaim
		single bool
	}{
		{"ReadWriteOnce", claim(m(corev1.ReadWriteOnce), nil), true},
		{"ReadWriteOncePod", claim(m(corev1.ReadWriteOncePod), nil), true},
		{"ReadOnlyMany", claim(m(corev1.ReadOnlyMany), nil), false},
		{"ReadWriteMany", claim(m(corev1.ReadWriteMany), nil), false},
		{"ReadWriteOnce and ReadOnlyMany: many nodes may attach", claim(m(corev1.ReadWriteOnce, corev1.ReadOnlyMany), nil), false},
		{"no modes: left to the cluster", claim(nil, nil), false},
		{"the bound volume's modes win", claim(m(corev1.ReadWriteOnce), m(corev1.ReadWriteOnce, corev1.ReadWriteMany)), false},
		{"the bound volume's modes win (single)", claim(m(corev1.ReadWriteMany), m(corev1.ReadWriteOnce)), true},
	} {
		if got := desired.SingleAttach(tc.claim); got != tc.single {
			t.Errorf("%s: SingleAttach %v, want %v", tc.name, got, tc.single)
		}
		if got := desired.ClaimContent(tc.claim).SingleAttach; got != tc.single {
			t.Errorf("%s: ClaimContent().SingleAttach %v, want %v", tc.name, got, tc.single)
		}
	}
}

// The claim is watched (as metadata): a change of a Ready site's claim shows without any other trigger. (Without
// the watch this passes only when a reconcile still queued from the rollout happens to read the change: with a
// pause before the claim update it fails, which is how the watch was checked; the test itself never sleeps.)
func TestClaimChangesAreWatched(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createClaim(t, ns, "data", corev1.ReadOnlyMany)
	createSite(t, ns, "watched", claimSite("data", 1))
	completeRollout(t, getDeployment(t, ns, "watched"))
	waitSite(t, ns, "watched", "Ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
	claim := &corev1.PersistentVolumeClaim{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, claim))
	claim.Status.Phase = corev1.ClaimLost
	testenv.Must(t, k8s.Status().Update(ctx, claim))
	waitSite(t, ns, "watched", "ClaimLost", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, v1alpha1.ReasonClaimLost)
	})
}
