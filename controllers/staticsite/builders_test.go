package staticsite

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

const testServerImage = "hyperstatic/server:test"

func newSite(content v1alpha1.ContentSource) *v1alpha1.StaticSite {
	return &v1alpha1.StaticSite{
		ObjectMeta: metav1.ObjectMeta{Name: "docs", Namespace: "web", UID: "uid-1"},
		Spec:       v1alpha1.StaticSiteSpec{Content: content},
	}
}

// typed turns an apply configuration into the typed object it describes, for assertions.
func typed[T any](t *testing.T, ac any) *T {
	t.Helper()
	b, err := json.Marshal(ac)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func deploymentFor(t *testing.T, site *v1alpha1.StaticSite, c desired.Content) *appsv1.Deployment {
	t.Helper()
	return typed[appsv1.Deployment](t, desired.Deployment(site, testServerImage, c, desired.MemoryFor(site, c)))
}

func TestDeploymentPerContentSource(t *testing.T) {
	cms := []corev1.ConfigMap{
		{ObjectMeta: metav1.ObjectMeta{Name: "pages", ResourceVersion: "7"}, Data: map[string]string{"index.html": "<h1>hi</h1>"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "css", ResourceVersion: "9"}, Data: map[string]string{"site.css": "body{}"},
			BinaryData: map[string][]byte{"logo.png": {0x89, 'P', 'N', 'G'}}},
	}
	cmSite := newSite(v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}, {Name: "css", PathPrefix: "assets/css/"}}})
	imgSite := newSite(v1alpha1.ContentSource{Image: "example/docs:v3"})
	ivSite := newSite(v1alpha1.ContentSource{ImageVolume: &v1alpha1.ImageVolumeContent{Reference: "example/docs-content:v3", PullPolicy: corev1.PullIfNotPresent}})
	pvcSite := newSite(v1alpha1.ContentSource{PersistentVolumeClaim: &v1alpha1.PersistentVolumeClaimContent{ClaimName: "docs-data", SubPath: "public"}})
	claim := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "docs-data"}, Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv-1"}}

	t.Run("configMaps", func(t *testing.T) {
		c := desired.ConfigMapsContent(cmSite, cms)
		d := deploymentFor(t, cmSite, c)
		pod := d.Spec.Template.Spec
		if got := pod.Containers[0].Image; got != testServerImage {
			t.Errorf("image = %q, want the server image", got)
		}
		if len(pod.Volumes) != 3 || pod.Volumes[0].Projected == nil {
			t.Fatalf("want a projected volume, the compression cache and the site value, got %+v", pod.Volumes)
		}
		srcs := pod.Volumes[0].Projected.Sources
		if srcs[0].ConfigMap.Name != "pages" || len(srcs[0].ConfigMap.Items) != 0 {
			t.Errorf("unprefixed ConfigMap must project every key as is: %+v", srcs[0].ConfigMap)
		}
		wantItems := []corev1.KeyToPath{{Key: "logo.png", Path: "assets/css/logo.png"}, {Key: "site.css", Path: "assets/css/site.css"}}
		if !reflect.DeepEqual(srcs[1].ConfigMap.Items, wantItems) {
			t.Errorf("prefixed items = %+v, want %+v (binaryData included)", srcs[1].ConfigMap.Items, wantItems)
		}
		assertSiteMount(t, pod, "")
		if _, ok := d.Spec.Template.Annotations[sitechild.AnnotationContentHash]; ok {
			t.Error("ConfigMap content reloads live: the pod template must not carry a content hash")
		}
		if c.Size != int64(len("<h1>hi</h1>")+len("body{}")+4) {
			t.Errorf("size = %d", c.Size)
		}
	})
	t.Run("image", func(t *testing.T) {
		d := deploymentFor(t, imgSite, desired.ImageContent(v1alpha1.ContentSourceImage, "example/docs:v3", ""))
		pod := d.Spec.Template.Spec
		if got := pod.Containers[0].Image; got != "example/docs:v3" {
			t.Errorf("image = %q, want the baked site image", got)
		}
		if len(pod.Volumes) != 2 || pod.Volumes[0].Name != desired.CompressCacheVolumeName || pod.Volumes[1].Name != desired.SiteValueVolumeName ||
			len(pod.Containers[0].VolumeMounts) != 2 || pod.Containers[0].VolumeMounts[0].Name != desired.CompressCacheVolumeName {
			t.Errorf("a baked image needs no site volume, only the compression cache and the site value: %+v %+v", pod.Volumes, pod.Containers[0].VolumeMounts)
		}
		if d.Spec.Template.Annotations[sitechild.AnnotationContentHash] == "" {
			t.Error("a baked image must put the content hash on the pod template")
		}
		other := deploymentFor(t, imgSite, desired.ImageContent(v1alpha1.ContentSourceImage, "example/docs:v4", ""))
		if other.Spec.Template.Annotations[sitechild.AnnotationContentHash] == d.Spec.Template.Annotations[sitechild.AnnotationContentHash] {
			t.Error("a new image must change the content hash")
		}
	})
	t.Run("imageVolume", func(t *testing.T) {
		d := deploymentFor(t, ivSite, desired.ImageContent(v1alpha1.ContentSourceImageVolume, "example/docs-content:v3", corev1.PullIfNotPresent))
		pod := d.Spec.Template.Spec
		if pod.Containers[0].Image != testServerImage {
			t.Errorf("image = %q", pod.Containers[0].Image)
		}
		if len(pod.Volumes) != 3 || pod.Volumes[0].Image == nil ||
			pod.Volumes[0].Image.Reference != "example/docs-content:v3" || pod.Volumes[0].Image.PullPolicy != corev1.PullIfNotPresent {
			t.Fatalf("want an image volume, got %+v", pod.Volumes)
		}
		assertSiteMount(t, pod, "")
		if d.Spec.Template.Annotations[sitechild.AnnotationContentHash] == "" {
			t.Error("an image volume must put the content hash on the pod template")
		}
	})
	t.Run("persistentVolumeClaim", func(t *testing.T) {
		c := desired.ClaimContent(claim)
		d := deploymentFor(t, pvcSite, c)
		pod := d.Spec.Template.Spec
		v := pod.Volumes[0].PersistentVolumeClaim
		if v == nil || v.ClaimName != "docs-data" || !v.ReadOnly {
			t.Fatalf("want a read-only claim volume, got %+v", pod.Volumes)
		}
		assertSiteMount(t, pod, "public")
		if c.Revision != "pvc/docs-data@pv-1" {
			t.Errorf("revision = %q", c.Revision)
		}
		if got := desired.MemoryFor(pvcSite, c); got.Cmp(resource.MustParse("256Mi")) != 0 {
			t.Errorf("memory for unknown size = %s, want 256Mi", got.String())
		}
	})
}

func assertSiteMount(t *testing.T, pod corev1.PodSpec, subPath string) {
	t.Helper()
	want := []corev1.VolumeMount{{Name: sitechild.SiteVolumeName, MountPath: "/site", ReadOnly: true, SubPath: subPath},
		{Name: desired.CompressCacheVolumeName, MountPath: desired.CompressCacheDir}, {Name: desired.SiteValueVolumeName, MountPath: sitevalue.MountDir, ReadOnly: true}}
	if got := pod.Containers[0].VolumeMounts; !reflect.DeepEqual(got, want) {
		t.Errorf("mounts = %+v, want %+v", got, want)
	}
}

func TestPodIsGuaranteedAndRestricted(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "example/docs:v3"})
	site.Spec.CPU = ptr.To(resource.MustParse("2"))
	site.Spec.Memory = ptr.To(resource.MustParse("96Mi"))
	d := deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "example/docs:v3", ""))
	pod := d.Spec.Template.Spec
	all := append(slices.Clone(pod.InitContainers), pod.Containers...)
	for _, c := range all {
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			req, lim := c.Resources.Requests[r], c.Resources.Limits[r]
			if req.IsZero() || req.Cmp(lim) != 0 {
				t.Errorf("container %s %s: request %s, limit %s: want equal and set", c.Name, r, req.String(), lim.String())
			}
		}
		sc := c.SecurityContext
		if sc == nil || !*sc.RunAsNonRoot || *sc.AllowPrivilegeEscalation || !*sc.ReadOnlyRootFilesystem ||
			!reflect.DeepEqual(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || sc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
			t.Errorf("container %s security context not restricted: %+v", c.Name, sc)
		}
	}
	if cpu := pod.Containers[0].Resources.Limits[corev1.ResourceCPU]; cpu.String() != "2" {
		t.Errorf("cpu = %s", cpu.String())
	}
	psc := pod.SecurityContext
	if !*psc.RunAsNonRoot || *psc.RunAsUser != 65532 || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context: %+v", psc)
	}
	if pod.AutomountServiceAccountToken == nil || *pod.AutomountServiceAccountToken {
		t.Error("service account token must not be mounted")
	}
	// Probes on the admin port; grace period = drain delay 5s + shutdown timeout 10s + 5s to exit.
	c := pod.Containers[0]
	if c.ReadinessProbe.HTTPGet.Path != "/readyz" || c.LivenessProbe.HTTPGet.Path != "/healthz" || c.StartupProbe == nil ||
		c.ReadinessProbe.HTTPGet.Port != intstr.FromString("admin") {
		t.Errorf("probes: %+v %+v %+v", c.ReadinessProbe, c.LivenessProbe, c.StartupProbe)
	}
	if *pod.TerminationGracePeriodSeconds != 20 {
		t.Errorf("grace = %d, want 20", *pod.TerminationGracePeriodSeconds)
	}
	wantPorts := []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: "TCP"}, {Name: "admin", ContainerPort: 9090, Protocol: "TCP"}}
	if !reflect.DeepEqual(c.Ports, wantPorts) {
		t.Errorf("ports = %+v", c.Ports)
	}
}

func TestDeploymentShape(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "example/docs:v3"})
	site.Spec.Replicas = ptr.To[int32](3)
	site.Spec.PodTemplate.Labels = map[string]string{"team": "web", v1alpha1.LabelSite: "hijack"}
	d := deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "example/docs:v3", ""))
	if d.Name != "docs" || d.Namespace != "web" || *d.Spec.Replicas != 3 {
		t.Errorf("name/replicas: %s/%s %d", d.Namespace, d.Name, *d.Spec.Replicas)
	}
	ru := d.Spec.Strategy.RollingUpdate
	if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType || ru.MaxUnavailable.IntValue() != 0 || ru.MaxSurge.IntValue() != 1 {
		t.Errorf("strategy: %+v", d.Spec.Strategy)
	}
	wantLabels := map[string]string{"team": "web", v1alpha1.LabelSite: "docs", "app.kubernetes.io/name": "hyperstatic-server",
		"app.kubernetes.io/instance": "docs", "app.kubernetes.io/managed-by": "hyperstatic-operator"}
	if !reflect.DeepEqual(d.Spec.Template.Labels, wantLabels) {
		t.Errorf("pod labels = %v, want %v", d.Spec.Template.Labels, wantLabels)
	}
	or := d.OwnerReferences
	if len(or) != 1 || or[0].Kind != "StaticSite" || or[0].APIVersion != "hyperstatic.dev/v1alpha1" || or[0].UID != "uid-1" ||
		!*or[0].Controller || !*or[0].BlockOwnerDeletion {
		t.Errorf("owner references: %+v", or)
	}
	tsc := d.Spec.Template.Spec.TopologySpreadConstraints
	if len(tsc) != 1 || tsc[0].WhenUnsatisfiable != corev1.ScheduleAnyway || tsc[0].TopologyKey != corev1.LabelHostname {
		t.Errorf("default spread: %+v", tsc)
	}

	site.Spec.PodTemplate.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 2, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
	site.Spec.PodTemplate.NodeSelector = map[string]string{"pool": "static"}
	site.Spec.PodTemplate.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "web", Effect: corev1.TaintEffectNoSchedule}}
	site.Spec.PodTemplate.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "arch", Operator: corev1.NodeSelectorOpIn, Values: []string{"amd64"}}}}}}}}
	site.Spec.PodTemplate.PriorityClassName = "high"
	pod := deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "example/docs:v3", "")).Spec.Template.Spec
	if !reflect.DeepEqual(pod.TopologySpreadConstraints, site.Spec.PodTemplate.TopologySpreadConstraints) ||
		!reflect.DeepEqual(pod.NodeSelector, site.Spec.PodTemplate.NodeSelector) ||
		!reflect.DeepEqual(pod.Tolerations[:1], site.Spec.PodTemplate.Tolerations) || // then the node-loss ones

		!reflect.DeepEqual(pod.Affinity, site.Spec.PodTemplate.Affinity) || pod.PriorityClassName != "high" {
		t.Errorf("overrides not applied: %+v", pod)
	}
}

func TestServerArgs(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	if got, want := desired.ServerArgs(site), []string{"--root", "/site", "--listen", "[::]:8080", "--admin-listen", "[::]:9090", "--drain-delay", "5s", "--shutdown-timeout", "10s",
		"--site", "/etc/hyperstatic/site/site.json"}; !reflect.DeepEqual(got, want) {
		// Unset fields add no argument: an operator upgrade must not change existing sites' pod templates, and
		// older pinned server images reject flags they do not know.
		t.Errorf("default args = %q, want %q", got, want)
	}
	site.Spec.Server = v1alpha1.ServerSpec{
		CacheControl:    []v1alpha1.CacheControlRule{{Glob: "*.css", Value: "public, max-age=600"}},
		Headers:         []v1alpha1.Header{{Name: "X-Frame-Options", Value: "DENY"}, {Glob: "/fonts/**", Name: "X-Font", Value: "1"}},
		SecurityHeaders: ptr.To(false),
		CORS: []v1alpha1.CORSRule{
			{Glob: "/fonts/**", AllowOrigins: []string{"*"}},
			{Glob: "/api/**", AllowOrigins: []string{"https://a.example", "http://b.example:8080"}, AllowMethods: []string{"GET", "HEAD"},
				AllowHeaders: []string{"X-Token"}, MaxAge: ptr.To[int32](600)},
		},
		SPAFallback:              true,
		NotFoundPage:             "/404.html",
		MaxRequestsPerConnection: ptr.To[int32](500),
		MaxConnectionAge:         &metav1.Duration{Duration: 1500 * time.Millisecond},
		H2C:                      true,
		DrainDelay:               &metav1.Duration{Duration: 20 * time.Second},
		ExtraArgs:                []string{"--access-log"},
	}
	want := []string{"--root", "/site", "--listen", "[::]:8080", "--admin-listen", "[::]:9090", "--drain-delay", "20s", "--shutdown-timeout", "10s",
		"--max-requests-per-connection", "500", "--max-connection-age", "1500ms", "--h2c=true",
		"--site", "/etc/hyperstatic/site/site.json", "--access-log"} // the site rules are the site value's (step_sitevalue.go)
	if got := desired.ServerArgs(site); !reflect.DeepEqual(got, want) {
		t.Errorf("args = %q\nwant %q", got, want)
	}
	d := deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "x", ""))
	if *d.Spec.Template.Spec.TerminationGracePeriodSeconds != 35 {
		t.Errorf("grace = %d, want 35", *d.Spec.Template.Spec.TerminationGracePeriodSeconds)
	}
}

func TestService(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	svc := typed[corev1.Service](t, desired.Service(site))
	want := []corev1.ServicePort{
		{Name: "http", Protocol: "TCP", AppProtocol: ptr.To("http"), Port: 80, TargetPort: intstr.FromString("http")},
	}
	// Only the site's port: the admin port (probes, metrics) must never be published on a NodePort/LoadBalancer.
	if svc.Spec.Type != corev1.ServiceTypeClusterIP || !reflect.DeepEqual(svc.Spec.Ports, want) {
		t.Errorf("service: %s %+v", svc.Spec.Type, svc.Spec.Ports)
	}
	if !reflect.DeepEqual(svc.Spec.Selector, sitechild.SelectorLabels(site)) {
		t.Errorf("selector %v", svc.Spec.Selector)
	}
	if desired.URL(site) != "http://docs.web.svc.cluster.local" {
		t.Errorf("url %s", desired.URL(site))
	}
	site.Spec.Service = v1alpha1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Port: 8000, Annotations: map[string]string{"a": "b"}}
	svc = typed[corev1.Service](t, desired.Service(site))
	if svc.Spec.Type != corev1.ServiceTypeNodePort || svc.Spec.Ports[0].Port != 8000 || svc.Annotations["a"] != "b" {
		t.Errorf("service overrides: %+v", svc)
	}
	if desired.URL(site) != "http://docs.web.svc.cluster.local:8000" {
		t.Errorf("url %s", desired.URL(site))
	}
}

func TestPodDisruptionBudget(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	if desired.PodDisruptionBudget(site) != nil {
		t.Error("one replica: no budget")
	}
	site.Spec.Replicas = ptr.To[int32](3)
	pdb := typed[policyv1.PodDisruptionBudget](t, desired.PodDisruptionBudget(site))
	if pdb.Spec.MaxUnavailable.IntValue() != 1 || *pdb.Spec.UnhealthyPodEvictionPolicy != policyv1.AlwaysAllow ||
		!reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, sitechild.SelectorLabels(site)) {
		t.Errorf("pdb: %+v", pdb.Spec)
	}
	site.Spec.Replicas = ptr.To[int32](1)
	site.Spec.Disruption = &v1alpha1.DisruptionSpec{MaxUnavailable: intstr.FromString("50%")}
	pdb = typed[policyv1.PodDisruptionBudget](t, desired.PodDisruptionBudget(site))
	if pdb.Spec.MaxUnavailable.String() != "50%" {
		t.Errorf("override: %+v", pdb.Spec.MaxUnavailable)
	}
}

func TestMemoryFor(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "a"}}})
	for _, tc := range []struct {
		size int64
		want string
	}{{-1, "256Mi"}, {0, "64Mi"}, {8 << 20, "64Mi"}, {8<<20 + 1, "128Mi"}, {100 << 20, "256Mi"}} {
		if got := desired.MemoryFor(site, desired.Content{Size: tc.size}); got.Cmp(resource.MustParse(tc.want)) != 0 {
			t.Errorf("size %d: memory %s, want %s", tc.size, got.String(), tc.want)
		}
	}
	site.Spec.Memory = ptr.To(resource.MustParse("48Mi"))
	if got := desired.MemoryFor(site, desired.Content{Size: 1 << 30}); got.String() != "48Mi" {
		t.Errorf("spec.memory wins: %s", got.String())
	}
}

func TestConfigMapsRevision(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "a"}}})
	cm := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", ResourceVersion: "1"}, Data: map[string]string{"k": "v"}}
	r1 := desired.ConfigMapsContent(site, []corev1.ConfigMap{cm}).Revision
	cm.ResourceVersion = "2"
	r2 := desired.ConfigMapsContent(site, []corev1.ConfigMap{cm}).Revision
	if r1 == r2 || len(r1) != len("sha256:")+16 {
		t.Errorf("revisions %q %q", r1, r2)
	}
}

func TestSelectorAndWholeCPUs(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	if got := sitechild.Selector(site); got != "app.kubernetes.io/name=hyperstatic-server,hyperstatic.dev/site=docs" {
		t.Errorf("selector %q", got)
	}
	for q, want := range map[string]bool{"1": true, "2": true, "1000m": true, "250m": false, "1500m": false} {
		if wholeCPUs(resource.MustParse(q)) != want {
			t.Errorf("wholeCPUs(%s) != %v", q, want)
		}
	}
}
