package staticsite

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func pullSecrets(names ...string) []v1alpha1.LocalObjectReference {
	out := make([]v1alpha1.LocalObjectReference, len(names))
	for i, n := range names {
		out[i] = v1alpha1.LocalObjectReference{Name: n}
	}
	return out
}

func podPullSecrets(names ...string) []corev1.LocalObjectReference {
	out := make([]corev1.LocalObjectReference, len(names))
	for i, n := range names {
		out[i] = corev1.LocalObjectReference{Name: n}
	}
	return out
}

func TestPodIdentityInTheTemplate(t *testing.T) {
	img := v1alpha1.ContentSource{Image: "registry.example/private/docs:v1"}
	iv := v1alpha1.ContentSource{ImageVolume: &v1alpha1.ImageVolumeContent{Reference: "registry.example/private/docs-content:v1"}}
	for _, tc := range []struct {
		name        string
		content     v1alpha1.ContentSource
		id          v1alpha1.PodIdentity
		wantSecrets []corev1.LocalObjectReference
		wantSA      string
		wantToken   bool
	}{
		{"unset: default account, no token, no secrets", img, v1alpha1.PodIdentity{}, nil, "", false},
		{"baked image from a private registry", img,
			v1alpha1.PodIdentity{ImagePullSecrets: pullSecrets("regcred", "mirror"), ServiceAccountName: "docs"},
			podPullSecrets("regcred", "mirror"), "docs", false},
		// The kubelet pulls an image volume's reference with the pod's secrets: the same list covers it.
		{"image volume from a private registry", iv,
			v1alpha1.PodIdentity{ImagePullSecrets: pullSecrets("regcred")}, podPullSecrets("regcred"), "", false},
		{"token asked for", img, v1alpha1.PodIdentity{ServiceAccountName: "docs", AutomountServiceAccountToken: ptr.To(true)}, nil, "docs", true},
		{"token refused explicitly", img, v1alpha1.PodIdentity{AutomountServiceAccountToken: ptr.To(false)}, nil, "", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := newSite(tc.content)
			site.Spec.PodTemplate.PodIdentity = tc.id
			c := desired.Content{Source: v1alpha1.ContentSourceImage, RollHash: "h"}
			if tc.content.ImageVolume != nil {
				c = desired.Content{Source: v1alpha1.ContentSourceImageVolume, RollHash: "h"}
			}
			pod := deploymentFor(t, site, c).Spec.Template.Spec
			if !reflect.DeepEqual(pod.ImagePullSecrets, tc.wantSecrets) {
				t.Errorf("imagePullSecrets %v, want %v", pod.ImagePullSecrets, tc.wantSecrets)
			}
			if pod.ServiceAccountName != tc.wantSA || pod.DeprecatedServiceAccount != tc.wantSA {
				t.Errorf("serviceAccountName %q, serviceAccount %q, want %q (both owned, so removing the name removes both)",
					pod.ServiceAccountName, pod.DeprecatedServiceAccount, tc.wantSA)
			}
			if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken != tc.wantToken {
				t.Errorf("automountServiceAccountToken %v, want %v", pod.AutomountServiceAccountToken, tc.wantToken)
			}
			if tc.content.ImageVolume != nil && !hasImageVolume(pod.Volumes) {
				t.Errorf("image volume missing: %+v", pod.Volumes)
			}
		})
	}
}

// The apply configuration of a site without these fields has none of them (beyond the token it always refused),
// so upgrading the operator does not roll existing sites.
func TestPodIdentityUnsetAddsNothing(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "example/docs:v1"})
	c := desired.Content{Source: v1alpha1.ContentSourceImage, RollHash: "h"}
	spec := desired.Deployment(site, testServerImage, c, desired.MemoryFor(site, c)).Spec.Template.Spec
	if spec.ImagePullSecrets != nil || spec.ServiceAccountName != nil || spec.DeprecatedServiceAccount != nil || spec.AutomountServiceAccountToken == nil || *spec.AutomountServiceAccountToken {
		t.Errorf("pull secrets %v, account %v, token %v", spec.ImagePullSecrets, spec.ServiceAccountName, spec.AutomountServiceAccountToken)
	}
}

// envtest: the fields reach the Deployment; editing them rolls the pods (a template change) and nothing else.
func TestPodIdentityReachesTheDeployment(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "private", v1alpha1.StaticSiteSpec{
		Content: v1alpha1.ContentSource{Image: "registry.example/private/docs:v1"},
		PodTemplate: v1alpha1.PodTemplateOverrides{PodIdentity: v1alpha1.PodIdentity{
			ImagePullSecrets: pullSecrets("regcred"), ServiceAccountName: "docs-reader"}},
	})
	d := getDeployment(t, ns, "private")
	pod := d.Spec.Template.Spec
	if !reflect.DeepEqual(pod.ImagePullSecrets, podPullSecrets("regcred")) || pod.ServiceAccountName != "docs-reader" ||
		pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Fatalf("pod template: pull secrets %v, account %q, token %v", pod.ImagePullSecrets, pod.ServiceAccountName, pod.AutomountServiceAccountToken)
	}
	// A status write to the site (the controller's own) or another pass must not re-apply an unchanged template.
	gen := d.Generation
	completeRollout(t, d)
	waitSite(t, ns, "private", "ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	})
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
	if d.Generation != gen {
		t.Errorf("unchanged pod identity re-applied the Deployment (generation %d → %d)", gen, d.Generation)
	}

	updateSite(t, site, func(s *v1alpha1.StaticSite) {
		s.Spec.PodTemplate.ImagePullSecrets = pullSecrets("regcred-2026", "regcred")
		s.Spec.PodTemplate.AutomountServiceAccountToken = ptr.To(true)
	})
	testenv.Eventually(t, "pull secrets updated", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		p := d.Spec.Template.Spec
		if !reflect.DeepEqual(p.ImagePullSecrets, podPullSecrets("regcred-2026", "regcred")) || !ptr.Deref(p.AutomountServiceAccountToken, false) {
			return fmt.Errorf("pull secrets %v, token %v", p.ImagePullSecrets, p.AutomountServiceAccountToken)
		}
		return nil
	})
	if d.Generation == gen {
		t.Error("the pod template change did not bump the Deployment's generation (no roll)")
	}

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.PodTemplate.PodIdentity = v1alpha1.PodIdentity{} })
	testenv.Eventually(t, "pod identity removed", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		p := d.Spec.Template.Spec
		// Both the field and its deprecated copy go: otherwise the API server would read the old account back.
		if len(p.ImagePullSecrets) != 0 || p.ServiceAccountName != "" || p.DeprecatedServiceAccount != "" || ptr.Deref(p.AutomountServiceAccountToken, true) {
			return fmt.Errorf("pull secrets %v, account %q, token %v", p.ImagePullSecrets, p.ServiceAccountName, p.AutomountServiceAccountToken)
		}
		return nil
	})
}

func TestInvalidPodIdentityIsRefused(t *testing.T) {
	ns := namespace(t)
	for _, tc := range []struct {
		name string
		id   v1alpha1.PodIdentity
		want string
	}{
		{"bad pull secret name", v1alpha1.PodIdentity{ImagePullSecrets: pullSecrets("ok", "Reg_Cred")}, "spec.podTemplate.imagePullSecrets[1].name"},
		{"empty pull secret name", v1alpha1.PodIdentity{ImagePullSecrets: pullSecrets("")}, "spec.podTemplate.imagePullSecrets[0].name"},
		{"pull secret twice", v1alpha1.PodIdentity{ImagePullSecrets: pullSecrets("regcred", "regcred")}, "spec.podTemplate.imagePullSecrets[1]: Duplicate value"},
		{"bad service account", v1alpha1.PodIdentity{ServiceAccountName: "Docs Reader"}, "spec.podTemplate.serviceAccountName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: v1alpha1.StaticSiteSpec{
				Content: v1alpha1.ContentSource{Image: "example/site:v1"}, PodTemplate: v1alpha1.PodTemplateOverrides{PodIdentity: tc.id}}}
			err := k8s.Create(context.Background(), site)
			if err == nil {
				_ = k8s.Delete(context.Background(), site)
				t.Fatalf("accepted; want refusal mentioning %q", tc.want)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %q, want an Invalid error mentioning %q", err, tc.want)
			}
			t.Logf("refused: %v", err) // what a user sees (go test -v)
		})
	}
}
