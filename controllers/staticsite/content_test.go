package staticsite

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func TestConfigMapSiteLifecycle(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pages"},
		Data: map[string]string{"index.html": "<h1>hello</h1>"}, BinaryData: map[string][]byte{"favicon.ico": {0, 1, 2}}}
	testenv.Must(t, k8s.Create(ctx, cm))
	createSite(t, ns, "docs", v1alpha1.StaticSiteSpec{
		Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}, {Name: "assets", PathPrefix: "static"}}},
		CPU:     ptr.To(resource.MustParse("250m")),
	})

	// The second ConfigMap is missing: content is unavailable and the site is stalled, but the objects exist.
	site := waitSite(t, ns, "docs", "ContentAvailable=False", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, "ConfigMapNotFound"); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, "ConfigMapNotFound")
	})
	if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionContentAvailable); !strings.Contains(c.Message, "assets") ||
		!c.LastTransitionTime.Time.Equal(clockTime) {
		t.Errorf("ContentAvailable message should name the ConfigMap and use the injected clock: %+v", c)
	}
	waitEvent(t, ns, "docs", "Warning ConfigMapNotFound Stalled")

	// Creating it makes the content available (the controller watches referenced ConfigMaps).
	testenv.Must(t, k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "assets"}, Data: map[string]string{"site.css": "body{}"}}))
	site = waitSite(t, ns, "docs", "ContentAvailable=True", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, "ConfigMapsFound"); err != nil {
			return err
		}
		if err := condition(s, v1alpha1.ConditionStalled, "", ""); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "")
	})
	if err := condition(site, v1alpha1.ConditionReady, metav1.ConditionFalse, ""); err != nil {
		t.Error(err)
	}
	if site.Status.ContentSource != "configMaps" || !strings.HasPrefix(site.Status.ContentRevision, "sha256:") ||
		site.Status.Memory.String() != "64Mi" || site.Status.URL != "http://docs."+ns+".svc.cluster.local" {
		t.Errorf("status: %+v", site.Status)
	}

	d := getDeployment(t, ns, "docs")
	testenv.Eventually(t, "Deployment with both projections", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		srcs := d.Spec.Template.Spec.Volumes[0].Projected.Sources
		if len(srcs) != 2 || len(srcs[1].ConfigMap.Items) != 1 || srcs[1].ConfigMap.Items[0].Path != "static/site.css" {
			return fmt.Errorf("projection %+v", srcs)
		}
		return nil
	})
	c := d.Spec.Template.Spec.Containers[0]
	if c.Image != testServerImage || c.VolumeMounts[0].MountPath != "/site" || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("container %+v", c)
	}

	// The Deployment rolls out: Ready, no Reconciling, replicas in status.
	completeRollout(t, d)
	site = waitSite(t, ns, "docs", "Ready", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available"); err != nil {
			return err
		}
		if s.Status.ReadyReplicas != 1 || s.Status.Replicas != 1 {
			return fmt.Errorf("replicas %d/%d", s.Status.ReadyReplicas, s.Status.Replicas)
		}
		return condition(s, v1alpha1.ConditionReconciling, "", "")
	})
	if err := condition(site, v1alpha1.ConditionPinned, metav1.ConditionFalse, "FractionalCPU"); err != nil {
		t.Error(err)
	}
	if site.Status.ObservedGeneration != site.Generation {
		t.Errorf("observedGeneration %d, generation %d", site.Status.ObservedGeneration, site.Generation)
	}
	waitEvent(t, ns, "docs", "Normal Available Ready:")
	waitEvent(t, ns, "docs", "Normal Created Created Deployment docs")

	// A ConfigMap edit changes the revision but not the pod template: the server reloads live, no roll.
	rev := site.Status.ContentRevision
	tmplGen := d.Generation
	cm.Data["index.html"] = "<h1>hello again</h1>"
	testenv.Must(t, k8s.Update(ctx, cm))
	waitSite(t, ns, "docs", "new revision", func(s *v1alpha1.StaticSite) error {
		if s.Status.ContentRevision == rev {
			return fmt.Errorf("revision still %s", rev)
		}
		return nil
	})
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
	if d.Generation != tmplGen {
		t.Errorf("a ConfigMap value edit changed the Deployment (generation %d → %d)", tmplGen, d.Generation)
	}
	waitEvent(t, ns, "docs", "ContentChanged")
}

func TestImageSiteRollsOnContentChange(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "shop", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/shop:v1"}})
	d := getDeployment(t, ns, "shop")
	pod := d.Spec.Template.Spec
	if pod.Containers[0].Image != "example/shop:v1" || len(pod.Volumes) != 2 || pod.Volumes[0].Name != desired.CompressCacheVolumeName ||
		pod.Volumes[1].Name != desired.SiteValueVolumeName {
		t.Fatalf("baked image pod: %+v", pod)
	}
	hash := d.Spec.Template.Annotations[sitechild.AnnotationContentHash]
	if hash == "" {
		t.Fatal("no content hash on the pod template")
	}
	// Defaults from the CRD schema reached the pod: cpu 1, memory 256Mi (size unknown), replicas 1.
	res := pod.Containers[0].Resources
	if res.Limits.Cpu().String() != "1" || res.Limits.Memory().String() != "256Mi" || *d.Spec.Replicas != 1 {
		t.Errorf("defaults: %+v replicas %d", res, *d.Spec.Replicas)
	}

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Content.Image = "example/shop:v2" })
	testenv.Eventually(t, "new image rolled", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		if d.Spec.Template.Spec.Containers[0].Image != "example/shop:v2" || d.Spec.Template.Annotations[sitechild.AnnotationContentHash] == hash {
			return fmt.Errorf("template still %s %s", d.Spec.Template.Spec.Containers[0].Image, d.Spec.Template.Annotations[sitechild.AnnotationContentHash])
		}
		return nil
	})
	waitSite(t, ns, "shop", "rolling out", func(s *v1alpha1.StaticSite) error {
		if s.Status.ContentRevision != "example/shop:v2" {
			return fmt.Errorf("revision %s", s.Status.ContentRevision)
		}
		return condition(s, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "")
	})
}

func TestPersistentVolumeClaimSite(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createSite(t, ns, "archive", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{
		PersistentVolumeClaim: &v1alpha1.PersistentVolumeClaimContent{ClaimName: "archive-data", SubPath: "www"}}})
	waitSite(t, ns, "archive", "ClaimNotFound", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, "ClaimNotFound")
	})
	testenv.Must(t, k8s.Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "archive-data"},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadOnlyMany},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
	}))
	waitSite(t, ns, "archive", "ClaimFound", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, "ClaimFound")
	})
	d := getDeployment(t, ns, "archive")
	v := d.Spec.Template.Spec.Volumes
	m := d.Spec.Template.Spec.Containers[0].VolumeMounts
	if len(v) != 3 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "archive-data" || !v[0].PersistentVolumeClaim.ReadOnly ||
		len(m) != 3 || !m[0].ReadOnly || m[0].SubPath != "www" || m[0].MountPath != "/site" {
		t.Errorf("claim volume %+v mounts %+v", v, m)
	}
	if _, ok := d.Spec.Template.Annotations[sitechild.AnnotationContentHash]; ok {
		t.Error("a claim's content does not roll pods")
	}
}

func TestImageVolumeOnOldCluster(t *testing.T) {
	ns := namespace(t)
	site := createSite(t, ns, "old", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{
		ImageVolume: &v1alpha1.ImageVolumeContent{Reference: "example/site-artifact:v1"}}})
	// A reconciler that believes the API server is 1.30, driven directly (the manager's reconciler also acts on
	// this site, but the direct one's status write is checked right after it, and both leave old sites alone).
	r := &Reconciler{Client: k8s, Recorder: record.NewFakeRecorder(10), ServerImage: testServerImage, ServerVersion: func() (*version.Info, error) {
		return &version.Info{Major: "1", Minor: "30"}, nil
	}}
	st := &observation{site: site}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(site), site))
	testenv.Must(t, r.reconcileContent(context.Background(), st))
	if st.contentProblem == nil || st.contentProblem.Reason != "ImageVolumeUnsupported" || !strings.Contains(st.contentProblem.Message, "1.30") || !st.skipDeployment {
		t.Errorf("content on 1.30: %+v skip=%v", st.contentProblem, st.skipDeployment)
	}
}
