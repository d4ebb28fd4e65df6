package staticsite

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apimachinery/pkg/version"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

func createSite(t *testing.T, ns, name string, spec v1alpha1.StaticSiteSpec) *v1alpha1.StaticSite {
	t.Helper()
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: spec}
	testenv.Must(t, k8s.Create(context.Background(), site))
	return site
}

// updateSite changes a site's spec as a user would, retrying when the controller's status write came first.
func updateSite(t *testing.T, site *v1alpha1.StaticSite, mutate func(*v1alpha1.StaticSite)) {
	t.Helper()
	testenv.Eventually(t, "update site", func() error {
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(site), site); err != nil {
			return err
		}
		mutate(site)
		return k8s.Update(context.Background(), site)
	})
}

// scaleTo writes the scale subresource, retrying on conflicts.
func scaleTo(t *testing.T, site *v1alpha1.StaticSite, n int32) {
	t.Helper()
	testenv.Eventually(t, "scale", func() error {
		scale := &autoscalingv1.Scale{}
		if err := k8s.SubResource("scale").Get(context.Background(), site, scale); err != nil {
			return err
		}
		scale.Spec.Replicas = n
		return k8s.SubResource("scale").Update(context.Background(), site, client.WithSubResourceBody(scale))
	})
}

func getDeployment(t *testing.T, ns, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	testenv.Eventually(t, "Deployment "+name, func() error { return k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, d) })
	return d
}

// completeRollout plays the Deployment controller and kubelet: every replica updated, ready and available.
func completeRollout(t *testing.T, d *appsv1.Deployment) {
	t.Helper()
	ctx := context.Background()
	testenv.Eventually(t, "Deployment status update", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		n := *d.Spec.Replicas
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: n, UpdatedReplicas: n, ReadyReplicas: n, AvailableReplicas: n,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}
		return k8s.Status().Update(ctx, d)
	})
}

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
	if pod.Containers[0].Image != "example/shop:v1" || len(pod.Volumes) != 1 || pod.Volumes[0].Name != compressCacheVolumeName {
		t.Fatalf("baked image pod: %+v", pod)
	}
	hash := d.Spec.Template.Annotations[AnnotationContentHash]
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
		if d.Spec.Template.Spec.Containers[0].Image != "example/shop:v2" || d.Spec.Template.Annotations[AnnotationContentHash] == hash {
			return fmt.Errorf("template still %s %s", d.Spec.Template.Spec.Containers[0].Image, d.Spec.Template.Annotations[AnnotationContentHash])
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

// A pod template change must never be reported Ready on the strength of the old ReplicaSet's pods: every status
// the controller writes for the new generation, up to the completed rollout, says Ready=False. A watch sees every
// status write, so a single wrong one (the pass that applies the change, judged by the pre-apply Deployment) fails.
func TestTemplateChangeIsNotReadyUntilRolledOut(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createSite(t, ns, "gen", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/gen:v1"}})
	d := getDeployment(t, ns, "gen")
	completeRollout(t, d)
	site := waitSite(t, ns, "gen", "Ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})

	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	testenv.Must(t, err)
	w, err := wc.Watch(ctx, &v1alpha1.StaticSiteList{}, client.InNamespace(ns), client.MatchingFields{"metadata.name": "gen"},
		&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: site.ResourceVersion}})
	testenv.Must(t, err)
	defer w.Stop()

	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Content.Image = "example/gen:v2" })
	newGen := getSiteGeneration(t, ns, "gen")
	// Wait (through the watch) for the controller's first status of the new generation, and check each one.
	deadline := time.After(testenv.EventuallyTimeout)
	for seen := false; !seen; {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			s, isSite := ev.Object.(*v1alpha1.StaticSite)
			if !isSite || s.Status.ObservedGeneration < newGen {
				continue
			}
			seen = true
			if meta.IsStatusConditionTrue(s.Status.Conditions, v1alpha1.ConditionReady) {
				t.Errorf("generation %d reported Ready before its rollout: %s", newGen, describe(s))
			}
		case <-deadline:
			t.Fatalf("no status for generation %d", newGen)
		}
	}
	completeRollout(t, d)
	waitSite(t, ns, "gen", "Ready after the rollout", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
}

func getSiteGeneration(t *testing.T, ns, name string) int64 {
	t.Helper()
	s := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, s))
	return s.Generation
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
	if len(v) != 2 || v[0].PersistentVolumeClaim == nil || v[0].PersistentVolumeClaim.ClaimName != "archive-data" || !v[0].PersistentVolumeClaim.ReadOnly ||
		len(m) != 2 || !m[0].ReadOnly || m[0].SubPath != "www" || m[0].MountPath != "/site" {
		t.Errorf("claim volume %+v mounts %+v", v, m)
	}
	if _, ok := d.Spec.Template.Annotations[AnnotationContentHash]; ok {
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

// expectRefused creates a site with spec and expects the API server to refuse it as Invalid, naming want.
func expectRefused(t *testing.T, ns string, spec v1alpha1.StaticSiteSpec, want string) {
	t.Helper()
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bad"}, Spec: spec}
	err := k8s.Create(context.Background(), site)
	if err == nil {
		_ = k8s.Delete(context.Background(), site)
		t.Fatalf("accepted; want refusal mentioning %q", want)
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
		t.Errorf("error %q, want an Invalid error mentioning %q", err, want)
	}
}

// rollOutAndWaitReady plays a completed rollout of the site's Deployment and waits for Ready=True Available.
func rollOutAndWaitReady(t *testing.T, ns, name string) *v1alpha1.StaticSite {
	t.Helper()
	completeRollout(t, getDeployment(t, ns, name))
	return waitSite(t, ns, name, "Ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
}

func TestInvalidSitesAreRefused(t *testing.T) {
	ns := namespace(t)
	img := v1alpha1.ContentSource{Image: "example/site:v1"}
	for _, tc := range []struct {
		name string
		spec v1alpha1.StaticSiteSpec
		want string
	}{
		{"no content", v1alpha1.StaticSiteSpec{}, "spec.content must set exactly one of image, configMaps, imageVolume, persistentVolumeClaim"},
		{"two sources", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "a", ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "b"}}}}, "spec.content must set exactly one"},
		{"zero cpu", v1alpha1.StaticSiteSpec{Content: img, CPU: ptr.To(resource.MustParse("0"))}, "spec.cpu must be greater than 0"},
		{"tiny memory", v1alpha1.StaticSiteSpec{Content: img, Memory: ptr.To(resource.MustParse("8Mi"))}, "spec.memory must be at least 16Mi"},
		{"negative replicas", v1alpha1.StaticSiteSpec{Content: img, Replicas: ptr.To[int32](-1)}, "spec.replicas"},
		{"port too high", v1alpha1.StaticSiteSpec{Content: img, Service: v1alpha1.ServiceSpec{Port: 70000}}, "spec.service.port"},
		{"admin port", v1alpha1.StaticSiteSpec{Content: img, Service: v1alpha1.ServiceSpec{Port: 9090}}, "spec.service.port must not be 9090"},
		{"service type", v1alpha1.StaticSiteSpec{Content: img, Service: v1alpha1.ServiceSpec{Type: "ExternalName"}}, "spec.service.type"},
		{"escaping prefix", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "a", PathPrefix: "x/../../etc"}}}}, "pathPrefix must be a relative path"},
		{"bad ConfigMap name", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "Not_A_Name"}}}}, "spec.content.configMaps[0].name"},
		{"relative 404 page", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{NotFoundPage: "404.html"}}, "spec.server.notFoundPage must be an absolute site path"},
		{"header injection", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Name: "X-A", Value: "a\r\nSet-Cookie: x"}}}}, "spec.server.headers[0].value"},
		{"control character in header", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Name: "X-A", Value: "a\x01b"}}}}, "spec.server.headers[0].value"},
		{"cache-control line break", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CacheControl: []v1alpha1.CacheControlRule{{Glob: "*.css", Value: "public\nX: y"}}}}, "spec.server.cacheControl[0].value"},
		{"cache-control glob with =", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CacheControl: []v1alpha1.CacheControlRule{{Glob: "a=b", Value: "public"}}}}, "spec.server.cacheControl[].glob must not contain '='"},
		{"blank cache-control glob", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CacheControl: []v1alpha1.CacheControlRule{{Glob: "  ", Value: "public"}}}}, "spec.server.cacheControl[].glob must not be blank"},
		{"negative connection age", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{MaxConnectionAge: &metav1.Duration{Duration: -5 * time.Second}}}, "spec.server.maxConnectionAge must not be negative"},
		{"bad header name", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Name: "Bad Header", Value: "v"}}}}, "spec.server.headers[0].name"},
		{"server-owned header", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Name: "X-A", Value: "v"}, {Name: "content-LENGTH", Value: "3"}}}}, "spec.server.headers[1].name"},
		{"server-owned header ETag", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Glob: "*.js", Name: "ETag", Value: "x"}}}}, "must not be a header the server sets itself"},
		{"header glob with ':'", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Headers: []v1alpha1.Header{{Glob: "/a:b/**", Name: "X-A", Value: "v"}}}}, "spec.server.headers[].glob must not contain '=' or ':'"},
		{"cors origin with a path", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/fonts/**", AllowOrigins: []string{"https://a.example/fonts"}}}}}, "spec.server.cors[].allowOrigins must hold origins like https://example.com[:port]"},
		{"cors origin without a scheme", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/fonts/**", AllowOrigins: []string{"a.example"}}}}}, "spec.server.cors[].allowOrigins must hold origins"},
		{"cors * with others", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/fonts/**", AllowOrigins: []string{"*", "https://a.example"}}}}}, `spec.server.cors[].allowOrigins: "*" must be the only entry`},
		{"cors without origins", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/fonts/**"}}}}, "spec.server.cors[0].allowOrigins"},
		{"cors glob with =", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "a=b", AllowOrigins: []string{"*"}}}}}, "spec.server.cors[].glob must not contain '='"},
		{"cors bad method", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/a", AllowOrigins: []string{"*"}, AllowMethods: []string{"GET,PUT"}}}}}, "spec.server.cors[0].allowMethods[0]"},
		{"cors max age too long", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{CORS: []v1alpha1.CORSRule{{Glob: "/a", AllowOrigins: []string{"*"}, MaxAge: ptr.To[int32](86401)}}}}, "spec.server.cors[0].maxAge"},
		{"bad budget", v1alpha1.StaticSiteSpec{Content: img, Disruption: &v1alpha1.DisruptionSpec{MaxUnavailable: intstr.FromString("half")}}, "spec.disruption.maxUnavailable must be"},
		{"redirect status", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "/b", Status: 303}}}}, "spec.server.redirects[0].status: Unsupported value: 303"},
		{"relative redirect from", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "old", To: "/b"}}}}, "spec.server.redirects[0].from"},
		{"splat mid-path", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a/*/b", To: "/b"}}}}, "spec.server.redirects[0].from"},
		{"redirect from with ..", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a/../b", To: "/b"}}}}, "spec.server.redirects[].from must not hold '.' or '..' segments"},
		{"nine placeholders", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/:a/x/:b/:c/:d/:e/:f/:g/:h/:i", To: "/b"}}}}, "spec.server.redirects[].from must have at most 8 placeholders"},
		{"redirect to with a space", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "/b c"}}}}, "spec.server.redirects[0].to"},
		{"redirect to another host's path", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "//evil.example/"}}}}, "spec.server.redirects[0].to"},
		{"rewrite to a URL", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a", To: "https://example.com/", Status: 200}}}}, "spec.server.redirects[].to of a 200 rewrite must be a site path"},
		{"rewrite out of the site", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: []v1alpha1.Redirect{{From: "/a/*", To: "/../etc/passwd", Status: 200}}}}, "spec.server.redirects[].to of a 200 rewrite must be a site path"},
		{"too many redirects", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{Redirects: manyRedirects(v1alpha1.MaxRedirects + 1)}}, "spec.server.redirects: Too many"},
		{"error page status", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ErrorPages: []v1alpha1.ErrorPage{{Status: 500, Path: "/500.html"}}}}, "spec.server.errorPages[0].status: Unsupported value: 500"},
		{"relative error page", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ErrorPages: []v1alpha1.ErrorPage{{Status: 404, Path: "404.html"}}}}, "spec.server.errorPages[0].path"},
		{"error page prefix", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ErrorPages: []v1alpha1.ErrorPage{{Status: 404, Path: "/404.html", PathPrefix: "docs/"}}}}, "spec.server.errorPages[0].pathPrefix"},
		{"budget of 0 blocks drains", v1alpha1.StaticSiteSpec{Content: img, Disruption: &v1alpha1.DisruptionSpec{MaxUnavailable: intstr.FromInt32(0)}}, "spec.disruption.maxUnavailable must be a positive integer"},
		{"budget of 0% blocks drains", v1alpha1.StaticSiteSpec{Content: img, Disruption: &v1alpha1.DisruptionSpec{MaxUnavailable: intstr.FromString("00%")}}, "spec.disruption.maxUnavailable must be a positive integer"},
		{"endless drain delay", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{DrainDelay: &metav1.Duration{Duration: 6 * time.Minute}}}, "spec.server.drainDelay must be between 0s and 5m"},
		{"negative drain delay", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{DrainDelay: &metav1.Duration{Duration: -time.Second}}}, "spec.server.drainDelay must be between 0s and 5m"},
		{"extraArgs moves the root", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--root", "/var/run/secrets/kubernetes.io/serviceaccount"}}}, "spec.server.extraArgs must not set --root"},
		{"extraArgs moves the root with =", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--access-log", "--root=/etc"}}}, "spec.server.extraArgs must not set --root"},
		{"extraArgs moves a listener", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--admin-listen=0.0.0.0:80"}}}, "spec.server.extraArgs must not set"},
		{"extraArgs reads another key", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--tls-key", "/etc/x"}}}, "spec.server.extraArgs must not set"},
		{"extraArgs moves the termination log", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--termination-log=/site/x"}}}, "spec.server.extraArgs must not set"},
		{"extraArgs moves the cache", v1alpha1.StaticSiteSpec{Content: img, Server: v1alpha1.ServerSpec{ExtraArgs: []string{"--compress-cache", "/site"}}}, "spec.server.extraArgs must not set"},
		{"empty image volume", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ImageVolume: &v1alpha1.ImageVolumeContent{}}}, "spec.content.imageVolume.reference"},
	} {
		t.Run(tc.name, func(t *testing.T) { expectRefused(t, ns, tc.spec, tc.want) })
	}
}

func manyRedirects(n int) []v1alpha1.Redirect {
	rs := make([]v1alpha1.Redirect, n)
	for i := range rs {
		rs[i] = v1alpha1.Redirect{From: fmt.Sprintf("/old/%d", i), To: fmt.Sprintf("/new/%d", i)}
	}
	return rs
}

// Site rules the server accepts are accepted by the API server too, with status defaulted to 301.
func TestSiteRulesAreAccepted(t *testing.T) {
	ns := namespace(t)
	site := createSite(t, ns, "rules", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:1"}, Server: v1alpha1.ServerSpec{
		Redirects: append(manyRedirects(v1alpha1.MaxRedirects-5),
			v1alpha1.Redirect{From: "/blog/*", To: "/news/:splat", Status: 302},
			v1alpha1.Redirect{From: "/:year/:slug/", To: "https://example.com:8443/p/:slug?y=:year", Status: 308, Force: true},
			v1alpha1.Redirect{From: "/app/*", To: "/app/index.html", Status: 200},
			v1alpha1.Redirect{From: "/", To: "/home", Status: 307},
			v1alpha1.Redirect{From: "/café/a:b", To: "/x"},
		),
		CleanURLs:  true,
		ErrorPages: []v1alpha1.ErrorPage{{Status: 404, Path: "/docs/404.html", PathPrefix: "/docs/"}, {Status: 405, Path: "/405.html"}},
	}})
	got := &v1alpha1.StaticSite{}
	testenv.Must(t, k8s.Get(context.Background(), client.ObjectKeyFromObject(site), got))
	if s := got.Spec.Server.Redirects[0].Status; s != 301 {
		t.Errorf("redirects[0].status defaulted to %d, want 301", s)
	}
}

// A name the API server accepts for a custom resource (a DNS subdomain) but not for the site's Service is refused
// up front, naming the field, instead of leaving a site whose Service can never be created.
func TestSiteNamesThatCannotNameAServiceAreRefused(t *testing.T) {
	ns := namespace(t)
	img := v1alpha1.ContentSource{Image: "example/site:1"}
	for _, name := range []string{"1site", "my.site", strings.Repeat("a", 64)} {
		site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: v1alpha1.StaticSiteSpec{Content: img}}
		err := k8s.Create(context.Background(), site)
		if err == nil {
			_ = k8s.Delete(context.Background(), site)
			t.Errorf("name %q accepted; want a refusal naming metadata.name", name)
			continue
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.name must be a DNS-1035 label") {
			t.Errorf("name %q: error %q, want an Invalid error naming metadata.name", name, err)
		}
	}
	ok := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "site-1"}, Spec: v1alpha1.StaticSiteSpec{Content: img}}
	testenv.Must(t, k8s.Create(context.Background(), ok))
}

// Services written by operator versions that published the admin port lose it on upgrade: the new operator applies
// the Service without it as the same field manager, so server-side apply removes the entry it no longer applies.
func TestUpgradeRemovesTheAdminPortFromTheService(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "legacy", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"}})
	svc := &corev1.Service{}
	testenv.Eventually(t, "Service", func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy"}, svc) })

	// What the previous operator version applied: the site's port and the admin port.
	old := DesiredService(site)
	old.Spec.WithPorts(corev1ac.ServicePort().WithName(v1alpha1.AdminPortName).WithProtocol(corev1.ProtocolTCP).
		WithAppProtocol("http").WithPort(v1alpha1.AdminPort).WithTargetPort(intstr.FromString(v1alpha1.AdminPortName)))
	testenv.Must(t, k8s.Apply(ctx, old, client.FieldOwner(FieldOwner), client.ForceOwnership))

	testenv.Eventually(t, "admin port removed from the Service", func() error {
		fresh := &corev1.Service{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "legacy"}, fresh); err != nil {
			return err
		}
		for _, p := range fresh.Spec.Ports {
			if p.Port == v1alpha1.AdminPort || p.Name == v1alpha1.AdminPortName {
				return fmt.Errorf("Service still publishes %s/%d", p.Name, p.Port)
			}
		}
		if len(fresh.Spec.Ports) != 1 {
			return fmt.Errorf("ports %+v, want only the site's", fresh.Spec.Ports)
		}
		return nil
	})
}

// An object with a child's name that the site does not own is never taken over (it would be deleted with the
// site): the site is Stalled with reason NotOwned, the object is left as it was, and once it is gone the periodic
// retry of stalled sites creates the site's own. The foreign objects carry no operator label, so the manager's
// cache (production settings) cannot see them: only the direct read before the first apply finds them.
func TestForeignObjectsAreNeverAdopted(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	foreignSvc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken", Labels: map[string]string{"app": "theirs"}},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "theirs", Port: 7000}}, Selector: map[string]string{"app": "theirs"}}}
	testenv.Must(t, k8s.Create(ctx, foreignSvc))
	foreignPDB := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "taken"},
		Spec: policyv1.PodDisruptionBudgetSpec{MaxUnavailable: ptr.To(intstr.FromInt32(3)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "theirs"}}}}
	testenv.Must(t, k8s.Create(ctx, foreignPDB))

	createSite(t, ns, "taken", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/site:v1"}, Replicas: ptr.To[int32](2)})
	waitSite(t, ns, "taken", "Stalled NotOwned naming the Service", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonNotOwned); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionStalled); !strings.Contains(c.Message, "Service "+ns+"/taken") {
			return fmt.Errorf("message %q does not name the Service", c.Message)
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonNotOwned)
	})
	waitEvent(t, ns, "taken", "Stalled: Service "+ns+"/taken exists and is not owned by this StaticSite")

	for _, obj := range []client.Object{&corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, obj))
		if len(obj.GetOwnerReferences()) != 0 || obj.GetLabels()[v1alpha1.LabelManagedBy] != "" {
			t.Errorf("%T was taken over: owners %v labels %v", obj, obj.GetOwnerReferences(), obj.GetLabels())
		}
	}
	svc := &corev1.Service{}
	testenv.Must(t, k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, svc))
	if len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 7000 || svc.Spec.Selector["app"] != "theirs" {
		t.Errorf("foreign Service changed: %+v", svc.Spec)
	}

	// The owner removes them; nothing the controller watches changes, the periodic retry heals the site.
	testenv.Must(t, k8s.Delete(ctx, foreignSvc))
	testenv.Must(t, k8s.Delete(ctx, foreignPDB))
	waitSite(t, ns, "taken", "no longer Stalled", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionStalled, "", "")
	})
	for _, obj := range []client.Object{&corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		testenv.Eventually(t, fmt.Sprintf("the site's own %T", obj), func() error {
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "taken"}, obj); err != nil {
				return err
			}
			if len(obj.GetOwnerReferences()) != 1 || obj.GetOwnerReferences()[0].Kind != "StaticSite" {
				return fmt.Errorf("owners %v", obj.GetOwnerReferences())
			}
			return nil
		})
	}
}

func TestDriftIsCorrected(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createSite(t, ns, "blog", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/blog:v1"}, Replicas: ptr.To[int32](2)})
	d := getDeployment(t, ns, "blog")

	// Someone edits fields the operator owns (a plain update, as `kubectl edit` does).
	testenv.Eventually(t, "edit Deployment", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		d.Spec.Replicas = ptr.To[int32](5)
		d.Spec.Template.Spec.Containers[0].Image = "evil/image:latest"
		d.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("3")
		return k8s.Update(ctx, d)
	})
	testenv.Eventually(t, "Deployment restored", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		c := d.Spec.Template.Spec.Containers[0]
		if *d.Spec.Replicas != 2 || c.Image != "example/blog:v1" || c.Resources.Limits.Cpu().String() != "1" {
			return fmt.Errorf("replicas %d image %s cpu %s", *d.Spec.Replicas, c.Image, c.Resources.Limits.Cpu())
		}
		return nil
	})
	waitEvent(t, ns, "blog", "Updated Deployment blog")

	// A deleted Service comes back; a changed selector is put back.
	svc := &corev1.Service{}
	testenv.Eventually(t, "Service", func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blog"}, svc) })
	testenv.Must(t, k8s.Delete(ctx, svc))
	testenv.Eventually(t, "Service recreated", func() error {
		fresh := &corev1.Service{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blog"}, fresh); err != nil {
			return err
		}
		if fresh.UID == svc.UID {
			return fmt.Errorf("still the old Service")
		}
		return nil
	})
	pdb := &policyv1.PodDisruptionBudget{}
	testenv.Eventually(t, "PDB", func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "blog"}, pdb) })
	testenv.Eventually(t, "edit PDB", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(pdb), pdb))
		pdb.Spec.MaxUnavailable = ptr.To(intstr.FromInt32(0))
		return k8s.Update(ctx, pdb)
	})
	testenv.Eventually(t, "PDB restored", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(pdb), pdb))
		if pdb.Spec.MaxUnavailable.IntValue() != 1 {
			return fmt.Errorf("maxUnavailable %s", pdb.Spec.MaxUnavailable.String())
		}
		return nil
	})
}

func TestOwnerReferences(t *testing.T) {
	// envtest runs no garbage collector, so deletion of the children cannot be observed here. What makes the
	// collector delete them is their owner reference: controller, blockOwnerDeletion, the site's UID. Check that.
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "owned", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/o:v1"}, Replicas: ptr.To[int32](3)})
	testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(site), site))
	for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &policyv1.PodDisruptionBudget{}} {
		testenv.Eventually(t, fmt.Sprintf("%T", obj), func() error { return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "owned"}, obj) })
		want := []metav1.OwnerReference{{APIVersion: "hyperstatic.dev/v1alpha1", Kind: "StaticSite", Name: "owned", UID: site.UID,
			Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		if got := obj.GetOwnerReferences(); !reflect.DeepEqual(got, want) {
			t.Errorf("%T owner references %+v, want %+v", obj, got, want)
		}
		if obj.GetLabels()[v1alpha1.LabelSite] != "owned" || obj.GetLabels()[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue {
			t.Errorf("%T labels %v", obj, obj.GetLabels())
		}
	}
}

func TestScaleSubresource(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "scaled", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/s:v1"}})
	d := getDeployment(t, ns, "scaled")
	completeRollout(t, d)
	waitSite(t, ns, "scaled", "Ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	})

	scale := &autoscalingv1.Scale{}
	testenv.Must(t, k8s.SubResource("scale").Get(ctx, site, scale))
	if scale.Spec.Replicas != 1 || scale.Status.Replicas != 1 || scale.Status.Selector != "app.kubernetes.io/name=hyperstatic-server,hyperstatic.dev/site=scaled" {
		t.Errorf("scale %+v", scale)
	}
	// What `kubectl scale hss scaled --replicas 3` does.
	scaleTo(t, site, 3)
	testenv.Eventually(t, "Deployment scaled", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		if *d.Spec.Replicas != 3 {
			return fmt.Errorf("replicas %d", *d.Spec.Replicas)
		}
		return nil
	})
	// More than one replica: a budget appears; the site is reconciling until the new pods are ready, but a scale-up
	// is not an outage: the pod that served before still serves, so Ready stays True and no "No longer ready".
	testenv.Eventually(t, "PDB", func() error {
		return k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "scaled"}, &policyv1.PodDisruptionBudget{})
	})
	waitSite(t, ns, "scaled", "scaling up", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionReconciling, metav1.ConditionTrue, "Progressing"); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available")
	})
	completeRollout(t, d)
	for _, e := range events(t, ns, "scaled") {
		if strings.Contains(e, "No longer ready") {
			t.Errorf("a scale-up reported the site unready: %s", e)
		}
	}
	waitSite(t, ns, "scaled", "Ready at 3", func(s *v1alpha1.StaticSite) error {
		if s.Status.Replicas != 3 {
			return fmt.Errorf("status.replicas %d", s.Status.Replicas)
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "Available")
	})
	// Back to one: the budget goes away.
	scaleTo(t, site, 1)
	testenv.Eventually(t, "PDB deleted", func() error {
		err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "scaled"}, &policyv1.PodDisruptionBudget{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("PDB still there: %w", err)
	})
	waitEvent(t, ns, "scaled", "Deleted PodDisruptionBudget")
}

func TestRolloutStalls(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	createSite(t, ns, "stuck", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/stuck:v1"}})
	d := getDeployment(t, ns, "stuck")
	testenv.Eventually(t, "Deployment status", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(d), d))
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse,
				Reason: "ProgressDeadlineExceeded", Message: `ReplicaSet "stuck-1" has timed out progressing.`}}}
		return k8s.Status().Update(ctx, d)
	})
	waitSite(t, ns, "stuck", "Stalled", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionStalled, metav1.ConditionTrue, "ProgressDeadlineExceeded"); err != nil {
			return err
		}
		if err := condition(s, v1alpha1.ConditionReconciling, "", ""); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionFalse, "ProgressDeadlineExceeded")
	})
	waitEvent(t, ns, "stuck", "Warning ProgressDeadlineExceeded")
}

// serverPod plays the Deployment controller and kubelet for one pod of a site.
func serverPod(t *testing.T, d *appsv1.Deployment, name, ip string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: name, Labels: d.Spec.Template.Labels,
		Annotations: d.Spec.Template.Annotations}, Spec: *d.Spec.Template.Spec.DeepCopy()}
	p.Spec.NodeName = "node-1"
	testenv.Must(t, k8s.Create(ctx, p))
	if p.Status.QOSClass != corev1.PodQOSGuaranteed {
		t.Errorf("pod %s QoS class %q, want Guaranteed", name, p.Status.QOSClass)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.PodIP = ip
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: containerName, Ready: true, Image: p.Spec.Containers[0].Image,
		ImageID: "docker.io/example/pinned@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}}
	testenv.Must(t, k8s.Status().Update(ctx, p))
	return p
}

func TestPinnedAndGuaranteedPods(t *testing.T) {
	ns := namespace(t)
	createSite(t, ns, "pinned", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/pinned:v1"}, Replicas: ptr.To[int32](2)})
	d := getDeployment(t, ns, "pinned")
	completeRollout(t, d)
	waitSite(t, ns, "pinned", "no pods yet", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPinned, metav1.ConditionUnknown, "NoReadyPods")
	})

	// The namespace enforces the restricted Pod Security Standard (see namespace()): a plain pod is refused, so the
	// server pods created below from the operator's template prove that the template passes it.
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
	if err := k8s.Create(context.Background(), plain); !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "restricted") {
		t.Fatalf("a non-restricted pod was not refused by PodSecurity admission: %v", err)
	}

	scraper.set(ns, "pinned-a", podmetrics.Sample{Workers: 1, CPUs: "2", Pinned: true})
	serverPod(t, d, "pinned-a", "10.0.0.1")
	serverPod(t, d, "pinned-b", "10.0.0.2") // its metrics cannot be read yet
	waitSite(t, ns, "pinned", "metrics unavailable", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPinned, metav1.ConditionUnknown, "MetricsUnavailable")
	})
	// The controller retries unreadable pods on its own (RequeueAfter), no event needed.
	scraper.set(ns, "pinned-b", podmetrics.Sample{Workers: 1, CPUs: "3", Pinned: true})
	site := waitSite(t, ns, "pinned", "pinned", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPinned, metav1.ConditionTrue, "ExclusiveCPUs")
	})
	msg := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionPinned).Message
	if !strings.Contains(msg, "pinned-a=2") || !strings.Contains(msg, "pinned-b=3") {
		t.Errorf("Pinned message %q should list each pod's CPUs", msg)
	}
	if !strings.HasPrefix(site.Status.ContentRevision, "example/pinned:v1@sha256:0123") {
		t.Errorf("revision %q should carry the digest the pods report", site.Status.ContentRevision)
	}
	waitEvent(t, ns, "pinned", "PinnedTrue")
	// pinned-b's CPU set was kept in the pass that wrote Pinned=True. Every pass reads one pod's content afresh
	// (pinned-a, first by name: status.content), so only pinned-b shows that a CPU set is read once.
	scraper.mu.Lock()
	callsB := scraper.calls[ns+"/pinned-b"]
	scraper.mu.Unlock()

	// A pod whose server reports shared CPUs (no static CPU manager) turns Pinned False.
	scraper.set(ns, "pinned-c", podmetrics.Sample{Workers: 2, CPUs: "0-3", Pinned: false})
	serverPod(t, d, "pinned-c", "10.0.0.3")
	waitSite(t, ns, "pinned", "shared", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionPinned, metav1.ConditionFalse, "SharedCPUs")
	})
	scraper.mu.Lock()
	after := scraper.calls[ns+"/pinned-b"]
	scraper.mu.Unlock()
	if after != callsB {
		t.Errorf("pod pinned-b scraped %d times after its CPU set was known (%d before); a pod's CPU set is read once", after-callsB, callsB)
	}
}

func TestKeepsTheAutoscalersStatus(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "shared", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/shared:v1"}})
	waitSite(t, ns, "shared", "first status", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, "")
	})
	// The autoscaler writes its own condition.
	testenv.Eventually(t, "autoscaler status write", func() error {
		testenv.Must(t, k8s.Get(ctx, client.ObjectKeyFromObject(site), site))
		meta.SetStatusCondition(&site.Status.Conditions, metav1.Condition{Type: "AbleToScale", Status: metav1.ConditionTrue, Reason: "ReadyForNewScale", Message: "test"})
		return k8s.Status().Update(ctx, site)
	})
	// The site controller then rewrites its own status (a rollout completes) and must keep that condition.
	completeRollout(t, getDeployment(t, ns, "shared"))
	site = waitSite(t, ns, "shared", "Ready", func(s *v1alpha1.StaticSite) error {
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	})
	if err := condition(site, "AbleToScale", metav1.ConditionTrue, "ReadyForNewScale"); err != nil {
		t.Error(err)
	}
}

func TestSamplesAreValid(t *testing.T) {
	// Every sample in config/samples is accepted by the API server (dry run: validation and CEL rules apply).
	ns := namespace(t)
	files, err := filepath.Glob(filepath.Join(testenv.RepoRoot(), "config", "samples", "staticsite_*.yaml"))
	testenv.Must(t, err)
	if len(files) < 4 {
		t.Fatalf("want a sample per content source, found %v", files)
	}
	sites := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		testenv.Must(t, err)
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			u := &unstructured.Unstructured{}
			if err := dec.Decode(&u.Object); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				t.Fatalf("%s: %v", f, err)
			}
			if len(u.Object) == 0 {
				continue
			}
			u.SetNamespace(ns)
			if err := k8s.Create(context.Background(), u, client.DryRunAll); err != nil {
				t.Errorf("%s: %s %s refused: %v", filepath.Base(f), u.GetKind(), u.GetName(), err)
			}
			if u.GetKind() == "StaticSite" {
				sites++
			}
		}
	}
	if sites != len(files) {
		t.Errorf("%d StaticSites in %d files", sites, len(files))
	}
}

func TestApplyIsSkippedWhenUnchanged(t *testing.T) {
	// The extracted fields the operator owns, read back from a real API server, equal the desired objects: a
	// second apply of the same objects sends nothing.
	ns := namespace(t)
	site := &v1alpha1.StaticSite{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "noop", UID: "0000-noop"},
		Spec: v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "a", PathPrefix: "p"}}},
			Replicas: ptr.To[int32](3), CPU: ptr.To(resource.MustParse("1500m")), Memory: ptr.To(resource.MustParse("1Gi")),
			PodTemplate: v1alpha1.PodTemplateOverrides{Tolerations: []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
				PodIdentity: v1alpha1.PodIdentity{ImagePullSecrets: []v1alpha1.LocalObjectReference{{Name: "b"}, {Name: "a"}}, ServiceAccountName: "sa"},
				Affinity: &corev1.Affinity{PodAntiAffinity: &corev1.PodAntiAffinity{PreferredDuringSchedulingIgnoredDuringExecution: []corev1.WeightedPodAffinityTerm{{
					Weight: 10, PodAffinityTerm: corev1.PodAffinityTerm{TopologyKey: corev1.LabelHostname}}}}}},
			Server: v1alpha1.ServerSpec{DrainDelay: &metav1.Duration{Duration: 7 * 1e9}}}}
	content := ConfigMapsContent(site, []corev1.ConfigMap{{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}, Data: map[string]string{"x.html": "x"}}})
	key := client.ObjectKey{Namespace: ns, Name: "noop"}
	applyTwice(t, site, key, []applyCase{
		{"Deployment", func() client.Object { return &appsv1.Deployment{} }, func() any { return DesiredDeployment(site, testServerImage, content, MemoryFor(site, content)) }, extractDeployment},
		{"Service", func() client.Object { return &corev1.Service{} }, func() any { return DesiredService(site) }, extractService},
		{"PodDisruptionBudget", func() client.Object { return &policyv1.PodDisruptionBudget{} }, func() any { return DesiredPodDisruptionBudget(site) }, extractPodDisruptionBudget},
	})
}

// applyCase is one kind of child for applyTwice.
type applyCase struct {
	kind    string
	obj     func() client.Object
	desired func() any
	extract func(client.Object) (any, error)
}

// applyTwice applies each desired child twice through applyChild and expects Created, then Unchanged: the fields
// the operator owns, read back from the API server, equal the desired object.
func applyTwice(t *testing.T, site *v1alpha1.StaticSite, key client.ObjectKey, cases []applyCase) {
	t.Helper()
	ctx := context.Background()
	for _, tc := range cases {
		var results []applyResult
		for range 2 {
			res, err := applyChild(ctx, k8s, k8s, site, tc.kind, tc.obj(), tc.desired().(runtime.ApplyConfiguration), key, tc.extract)
			if err != nil {
				t.Fatalf("%s: %v", tc.kind, err)
			}
			results = append(results, res)
		}
		if results[0] != applyCreated || results[1] != applyUnchanged {
			live := tc.obj()
			testenv.Must(t, k8s.Get(ctx, key, live))
			owned, _ := tc.extract(live)
			t.Errorf("%s: results %v, want [Created Unchanged]\nowned:   %s\ndesired: %s", tc.kind, results, jsonOf(owned), jsonOf(tc.desired()))
		}
	}
}

func jsonOf(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
