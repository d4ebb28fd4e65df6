package gitcontent

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
)

// recordingPinner records the pins sent (pure unit logic: which pod, which token, which commit).
type recordingPinner struct{ sent []string }

func (r *recordingPinner) Pin(_ context.Context, p *corev1.Pod, _ int, token []byte, commit string) (gitrevision.Revision, error) {
	r.sent = append(r.sent, p.Name+"@"+p.Status.PodIP+" "+string(token)+" "+commit)
	return gitrevision.Revision{Pin: commit}, nil
}

func fetcherPod(uid, ip string, running bool) *corev1.Pod {
	st := corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	if running {
		st = corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}
	}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "docs-git-0", UID: types.UID(uid)},
		Status: corev1.PodStatus{PodIP: ip, ContainerStatuses: []corev1.ContainerStatus{{Name: FetchContainerName, State: st}}}}
}

// The fast path sends the pin only to the very pod the pass read: the token must never reach a pod that took
// over its name or its address, nor one not running its fetcher; without a target it leaves the pin to the pass.
func TestPinNowSendsOnlyToThePodThePassRead(t *testing.T) {
	const commit = "0123456789abcdef0123456789abcdef01234567"
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "t", Name: "docs",
		Annotations: map[string]string{v1alpha1.AnnotationPin: commit}}}
	site.Spec.Content.Git = &v1alpha1.GitContent{}
	read := fetcherPod("uid-1", "10.0.0.7", true)
	key := types.NamespacedName{Namespace: "t", Name: "docs"}
	for _, c := range []struct {
		name   string
		cached *corev1.Pod
		want   error
	}{
		{"the same pod", fetcherPod("uid-1", "10.0.0.7", true), nil},
		{"another pod under the name", fetcherPod("uid-2", "10.0.0.7", true), ErrNoPinTarget},
		{"the pod at another address", fetcherPod("uid-1", "10.0.0.8", true), ErrNoPinTarget},
		{"the fetcher not running", fetcherPod("uid-1", "10.0.0.7", false), ErrNoPinTarget},
		{"the pod gone", nil, ErrNoPinTarget},
	} {
		t.Run(c.name, func(t *testing.T) {
			scheme := runtime.NewScheme()
			_ = corev1.AddToScheme(scheme)
			b := fake.NewClientBuilder().WithScheme(scheme)
			if c.cached != nil {
				b = b.WithObjects(c.cached)
			}
			targets, pinner := &PinTargets{}, &recordingPinner{}
			targets.remember(key, read, []byte("tok"))
			err := targets.PinNow(context.Background(), b.Build(), pinner, site)
			if !errors.Is(err, c.want) {
				t.Fatalf("PinNow: %v, want %v", err, c.want)
			}
			if c.want == nil && (len(pinner.sent) != 1 || pinner.sent[0] != "docs-git-0@10.0.0.7 tok "+commit) {
				t.Errorf("sent %q", pinner.sent)
			}
			if c.want != nil {
				if len(pinner.sent) != 0 {
					t.Errorf("sent %q to a pod that is not the one read", pinner.sent)
				}
				if targets.Len() != 0 {
					t.Error("the stale target is kept")
				}
			}
		})
	}
	t.Run("nothing remembered", func(t *testing.T) {
		scheme := runtime.NewScheme()
		_ = corev1.AddToScheme(scheme)
		pinner := &recordingPinner{}
		if err := (&PinTargets{}).PinNow(context.Background(), fake.NewClientBuilder().WithScheme(scheme).Build(), pinner, site); !errors.Is(err, ErrNoPinTarget) || len(pinner.sent) != 0 {
			t.Errorf("PinNow with nothing remembered: %v, sent %q", err, pinner.sent)
		}
	})
}
