package staticsite

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Issue 24, item 1: a site that breaks the tenancy policy (here the suite's: a priority class other than
// allowedPriorityClass; the example is system-node-critical) is Stalled with reason PolicyViolation naming
// the field, and no child is created for it. Fixed, it runs; broken again, what runs stays as it was.
func TestSiteOverThePolicyGetsNoChildren(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	key := types.NamespacedName{Namespace: ns, Name: "greedy"}
	site := createSite(t, ns, key.Name, v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"},
		PodTemplate: v1alpha1.PodTemplateOverrides{PriorityClassName: "system-node-critical"}})
	refused := conditionWith(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonPolicyViolation,
		`spec.podTemplate.priorityClassName: priority class "system-node-critical" is not allowed`)
	waitSite(t, ns, key.Name, "Stalled by the policy", func(s *v1alpha1.StaticSite) error {
		if err := refused(s); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonPolicyViolation)
	})
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
		if err := k8s.Get(ctx, key, obj); !apierrors.IsNotFound(err) {
			t.Fatalf("%T exists (or %v): a refused site must get no child", obj, err)
		}
	}

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.PodTemplate.PriorityClassName = allowedPriorityClass })
	var d appsv1.Deployment
	testenv.Eventually(t, "Deployment with the allowed class", func() error {
		if err := k8s.Get(ctx, key, &d); err != nil {
			return err
		}
		if pc := d.Spec.Template.Spec.PriorityClassName; pc != allowedPriorityClass {
			return fmt.Errorf("priority class %q", pc)
		}
		return nil
	})
	waitSite(t, ns, key.Name, "no longer Stalled by the policy", func(s *v1alpha1.StaticSite) error {
		if s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("generation %d not observed", s.Generation)
		}
		return condition(s, v1alpha1.ConditionStalled, "", "")
	})

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.PodTemplate.PriorityClassName = "system-cluster-critical" })
	waitSite(t, ns, key.Name, "Stalled by the policy again", func(s *v1alpha1.StaticSite) error {
		if s.Status.ObservedGeneration != s.Generation {
			return fmt.Errorf("generation %d not observed", s.Generation)
		}
		return condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonPolicyViolation)
	})
	testenv.Must(t, k8s.Get(ctx, key, &d))
	if pc := d.Spec.Template.Spec.PriorityClassName; pc != allowedPriorityClass {
		t.Fatalf("the Deployment moved to priority class %q of a refused spec", pc)
	}
}

// The CRD's unconditional rules admit what sites legitimately set: tuning flags in extraArgs, a long but bounded
// drain delay, a budget that lets one pod go.
func TestTenancyRulesAdmitRealValues(t *testing.T) {
	ns := namespace(t)
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ok"}, Spec: v1alpha1.StaticSiteSpec{
		Content: v1alpha1.ContentSource{Image: "example/site:1"},
		Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--access-log", "--max-memory-file-size=16MiB", "--workers", "2"},
			DrainDelay: &metav1.Duration{Duration: 300e9}},
		Disruption: &v1alpha1.DisruptionSpec{MaxUnavailable: intstr.FromString("1%")},
	}}
	if err := k8s.Create(context.Background(), site); err != nil {
		t.Fatalf("a valid site was refused: %v", err)
	}
	_ = k8s.Delete(context.Background(), site)
}

// Issue 24, item 1: spec.tls.secretName names a Secret that is not a certificate (here an Opaque one that merely has
// the two keys): the pods never mount it (Stalled, reason SecretInvalid, the field named; no Deployment). A
// kubernetes.io/tls Secret is mounted with its two keys only (TestTLSInThePodTemplate checks the projection).
func TestTLSSecretOfAnotherTypeIsNotMounted(t *testing.T) {
	ns := namespace(t)
	ctx := context.Background()
	crt, key := testCert(t, clockTime.Add(-time.Hour), clockTime.Add(time.Hour), "docs.example.com")
	secret := tlsSecret(ns, "ci-credentials", crt, key)
	secret.Type = corev1.SecretTypeOpaque
	secret.Data["token"] = []byte("not the site's")
	testenv.Must(t, k8s.Create(ctx, secret))
	createSite(t, ns, "borrower", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"},
		TLS: &v1alpha1.TLSSpec{SecretName: secret.Name}})
	waitSite(t, ns, "borrower", "Stalled SecretInvalid", conditionWith(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonSecretInvalid,
		`spec.tls.secretName: Secret "ci-credentials" is of type "Opaque", not kubernetes.io/tls`))
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: ns, Name: "borrower"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Deployment exists (or %v): its pods would mount the Secret", err)
	}
}
