package staticsite

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/tools/record"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// Kubernetes 1.34 ships the ImageVolume feature gate off: the suite's API server drops the image volume source
// from the pod template and refuses the Deployment. The site must say so instead of failing silently.
func TestImageVolumeRefusedWithoutFeatureGate(t *testing.T) {
	ns := namespace(t)
	createSite(t, ns, "artifact", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{
		ImageVolume: &v1alpha1.ImageVolumeContent{Reference: "example/site-artifact:v1"}}})
	site := waitSite(t, ns, "artifact", "ImageVolumeUnsupported", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, "ImageVolumeUnsupported"); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, "ImageVolumeUnsupported")
	})
	if msg := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionContentAvailable).Message; !strings.Contains(msg, "ImageVolume feature gate") {
		t.Errorf("message %q should point at the feature gate", msg)
	}
	// No Deployment: it would have started servers with an empty /site.
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "artifact"}, &appsv1.Deployment{}); !apierrors.IsNotFound(err) {
		t.Errorf("a Deployment exists (err %v); none should be created when the volume would be dropped", err)
	}
}

// With the gate on (a second, real API server started with --feature-gates=ImageVolume=true) the Deployment
// carries the image volume and the content is available.
func TestImageVolumeWithFeatureGate(t *testing.T) {
	e := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join(testenv.RepoRoot(), "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
		Scheme:                env.Scheme,
	}
	e.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "ImageVolume=true")
	cfg, err := e.Start()
	if err != nil {
		t.Fatalf("second envtest: %v", err)
	}
	defer func() { _ = e.Stop() }()
	c, err := client.New(cfg, client.Options{Scheme: env.Scheme})
	testenv.Must(t, err)
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	testenv.Must(t, err)
	ctx := context.Background()

	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "artifact"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ImageVolume: &v1alpha1.ImageVolumeContent{
			Reference: "example/site-artifact:v1", PullPolicy: corev1.PullIfNotPresent}}}}
	testenv.Must(t, c.Create(ctx, site))
	r := &Reconciler{Client: c, Recorder: record.NewFakeRecorder(100), ServerImage: testServerImage, ServerVersion: disco.ServerVersion}
	_, err = r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(site)})
	testenv.Must(t, err)

	d := &appsv1.Deployment{}
	testenv.Must(t, c.Get(ctx, client.ObjectKeyFromObject(site), d))
	v := d.Spec.Template.Spec.Volumes
	if len(v) != 3 || v[0].Image == nil || v[0].Image.Reference != "example/site-artifact:v1" || v[0].Image.PullPolicy != corev1.PullIfNotPresent {
		t.Fatalf("volumes %+v", v)
	}
	m := d.Spec.Template.Spec.Containers[0].VolumeMounts
	if len(m) != 3 || m[0].MountPath != "/site" || !m[0].ReadOnly {
		t.Errorf("mounts %+v", m)
	}
	if d.Spec.Template.Spec.Containers[0].Image != testServerImage || d.Spec.Template.Annotations[sitechild.AnnotationContentHash] == "" {
		t.Errorf("image %s annotations %v", d.Spec.Template.Spec.Containers[0].Image, d.Spec.Template.Annotations)
	}
	testenv.Must(t, c.Get(ctx, client.ObjectKeyFromObject(site), site))
	if err := condition(site, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, "ImageVolumeSpecified"); err != nil {
		t.Error(err)
	}
	if site.Status.ContentRevision != "example/site-artifact:v1" || site.Status.ContentSource != "imageVolume" {
		t.Errorf("status %+v", site.Status)
	}
}
