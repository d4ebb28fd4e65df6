package staticsite

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// waitPodAnnotation waits for a pod to carry annotation key = value.
func waitPodAnnotation(t *testing.T, ns, pod, key, value string) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("pod %s annotated %s=%s", pod, key, value), func() error {
		p := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: pod}, p); err != nil {
			return err
		}
		if got := p.Annotations[key]; got != value {
			return fmt.Errorf("%s=%q", key, got)
		}
		return nil
	})
}

// A ConfigMap site's pods are told each new content revision (podannounce.go): the kubelet then refreshes their
// projected volume at once, not within its sync period. The template does not change: nothing rolls.
func TestConfigMapContentChangeIsAnnouncedToPods(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pages"}, Data: map[string]string{"index.html": "v1"}}
	testenv.Must(t, k8s.Create(ctx, cm))
	createSite(t, ns, "told", v1alpha1.StaticSiteSpec{
		Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}})
	site := waitSite(t, ns, "told", "a content revision", func(s *v1alpha1.StaticSite) error {
		if s.Status.ContentRevision == "" {
			return fmt.Errorf("no content revision yet")
		}
		return nil
	})
	d := getDeployment(t, ns, "told")
	serverPod(t, d, "told-a", "10.0.4.1")
	waitPodAnnotation(t, ns, "told-a", AnnotationContentRevision, site.Status.ContentRevision)

	cm.Data["index.html"] = "v2"
	testenv.Must(t, k8s.Update(ctx, cm))
	site = waitSite(t, ns, "told", "a new content revision", func(s *v1alpha1.StaticSite) error {
		if s.Status.ContentRevision == site.Status.ContentRevision {
			return fmt.Errorf("revision still %s", s.Status.ContentRevision)
		}
		return nil
	})
	waitPodAnnotation(t, ns, "told-a", AnnotationContentRevision, site.Status.ContentRevision)
	if after := getDeployment(t, ns, "told"); after.Generation != d.Generation {
		t.Errorf("the Deployment's generation moved %d -> %d: a ConfigMap edit changed the template", d.Generation, after.Generation)
	}
}

// An image site's pods carry no content revision: the kubelet has nothing to refresh (podAnnouncements, pure).
func TestImagePodsAreNotToldAContentRevision(t *testing.T) {
	st := &observation{site: &v1alpha1.StaticSite{}, content: desired.Content{Source: v1alpha1.ContentSourceImage, Revision: "example/site:1"}}
	if got := podAnnouncements(st, &corev1.Pod{}); len(got) != 0 {
		t.Errorf("announcements %v, want none", got)
	}
	st.content = desired.Content{Source: v1alpha1.ContentSourceConfigMaps, Revision: "sha256:0123"}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{AnnotationContentRevision: "sha256:0123"}}}
	if got := podAnnouncements(st, p); len(got) != 0 {
		t.Errorf("a pod that carries the revision is told again: %v", got)
	}
	p.Annotations[AnnotationContentRevision] = "sha256:old"
	if got := podAnnouncements(st, p); got[AnnotationContentRevision] != "sha256:0123" || len(got) != 1 {
		t.Errorf("announcements %v, want the new content revision only", got)
	}
}
