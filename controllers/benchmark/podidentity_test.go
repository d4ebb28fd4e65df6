package benchmark

import (
	"reflect"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

var privateK6 = v1alpha1.PodIdentity{
	ImagePullSecrets:   []v1alpha1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}},
	ServiceAccountName: "loadgen",
}

func TestJobPodIdentity(t *testing.T) {
	start := time.UnixMilli(1_800_000_000_000)
	for _, tc := range []struct {
		name      string
		id        v1alpha1.PodIdentity
		wantToken bool
	}{
		{"unset", v1alpha1.PodIdentity{}, false},
		{"private k6 image", privateK6, false},
		{"token asked for", v1alpha1.PodIdentity{ServiceAccountName: "loadgen", AutomountServiceAccountToken: ptr.To(true)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := testBenchmark()
			b.Spec.PodIdentity = tc.id
			pod := desiredJob(b, nil, "registry.example/private/k6:1", start, start, time.Minute).Spec.Template.Spec
			var want []corev1.LocalObjectReference
			for _, s := range tc.id.ImagePullSecrets {
				want = append(want, corev1.LocalObjectReference{Name: s.Name})
			}
			if !reflect.DeepEqual(pod.ImagePullSecrets, want) || pod.ServiceAccountName != tc.id.ServiceAccountName {
				t.Errorf("pull secrets %v (want %v), account %q (want %q)", pod.ImagePullSecrets, want, pod.ServiceAccountName, tc.id.ServiceAccountName)
			}
			if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken != tc.wantToken {
				t.Errorf("automountServiceAccountToken %v, want %v", pod.AutomountServiceAccountToken, tc.wantToken)
			}
		})
	}
}

// envtest: a Benchmark's k6 Job carries the pull secrets and the account, still without a token.
func TestJobCarriesPodIdentity(t *testing.T) {
	ns := namespace(t)
	b := urlBenchmark(ns, "private")
	b.Spec.Image = "registry.example/private/k6:1"
	b.Spec.PodIdentity = privateK6
	if err := k8s.Create(ctx, b); err != nil {
		t.Fatal(err)
	}
	pod := getJob(t, ns, "private").Spec.Template.Spec
	want := []corev1.LocalObjectReference{{Name: "regcred"}, {Name: "mirror"}}
	if !reflect.DeepEqual(pod.ImagePullSecrets, want) || pod.ServiceAccountName != "loadgen" ||
		pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken || pod.Containers[0].Image != b.Spec.Image {
		t.Errorf("pod: pull secrets %v, account %q, token %v, image %s", pod.ImagePullSecrets, pod.ServiceAccountName, pod.AutomountServiceAccountToken, pod.Containers[0].Image)
	}
}

func TestInvalidBenchmarkPodIdentityIsRefused(t *testing.T) {
	ns := namespace(t)
	for name, c := range map[string]struct {
		id   v1alpha1.PodIdentity
		want string
	}{
		"bad pull secret name": {v1alpha1.PodIdentity{ImagePullSecrets: []v1alpha1.LocalObjectReference{{Name: "Reg_Cred"}}}, "spec.imagePullSecrets[0].name"},
		"pull secret twice":    {v1alpha1.PodIdentity{ImagePullSecrets: []v1alpha1.LocalObjectReference{{Name: "a"}, {Name: "a"}}}, "spec.imagePullSecrets[1]: Duplicate value"},
		"bad service account":  {v1alpha1.PodIdentity{ServiceAccountName: "-loadgen"}, "spec.serviceAccountName"},
	} {
		b := urlBenchmark(ns, "invalid")
		b.Spec.PodIdentity = c.id
		err := k8s.Create(ctx, b)
		if err == nil {
			_ = k8s.Delete(ctx, b)
			t.Errorf("%s: accepted", name)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v (want %q)", name, err, c.want)
		}
	}
}
