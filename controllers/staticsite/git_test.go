package staticsite

import (
	"reflect"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

const testAgentImage = "hyperstatic/content-agent:test"

// gitSite is a Git site with a private repository's Secret, a webhook Secret and a path.
func gitSite() *v1alpha1.StaticSite {
	return newSite(v1alpha1.ContentSource{Git: &v1alpha1.GitContent{
		URL: "https://github.com/example/docs.git", Ref: "main", Path: "public",
		Interval:         &metav1.Duration{Duration: 90 * time.Second},
		SecretRef:        &v1alpha1.LocalObjectReference{Name: "docs-git-auth"},
		WebhookSecretRef: &v1alpha1.LocalObjectReference{Name: "docs-git-hook"},
		MaxSize:          ptr.To(resource.MustParse("100Mi")),
	}})
}

func TestGitCommandLines(t *testing.T) {
	site := gitSite()
	want := []string{"fetch", "--url", "https://github.com/example/docs.git", "--ref", "main", "--path", "public",
		"--interval", "90s", "--max-bytes", "104857600", "--secret-dir", "/etc/git-credentials",
		"--check-server", "/hyperstatic-server", "--dir", "/var/lib/content", "--listen", ":8080",
		"--history", "5", "--pin-token-file", "/etc/git-pin/token",
		"--webhook-secret-file", "/etc/git-webhook/token", "--webhook-listen", ":8081"}
	if got := gitcontent.FetchArgs(site); !slices.Equal(got, want) {
		t.Errorf("fetch args\n got %q\nwant %q", got, want)
	}
	// Defaults: no path, interval 1m, maxSize 512Mi, no Secrets and so no webhook listener.
	plain := newSite(v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "git@github.com:example/docs.git", Ref: "v1.2.0"}})
	want = []string{"fetch", "--url", "git@github.com:example/docs.git", "--ref", "v1.2.0", "--interval", "60s",
		"--max-bytes", "536870912", "--check-server", "/hyperstatic-server", "--dir", "/var/lib/content", "--listen", ":8080",
		"--history", "5", "--pin-token-file", "/etc/git-pin/token", "--webhook-listen="}
	if got := gitcontent.FetchArgs(plain); !slices.Equal(got, want) {
		t.Errorf("fetch args without options\n got %q\nwant %q", got, want)
	}
	want = []string{"pull", "--fetcher", "http://docs-git.web.svc:8080", "--dir", "/site", "--listen", ":8082",
		"--max-bytes", "104857600", "--server-admin", "http://127.0.0.1:9090"}
	if got := gitcontent.PullArgs(site); !slices.Equal(got, want) {
		t.Errorf("pull args\n got %q\nwant %q", got, want)
	}
	if got := desired.ServerArgs(site); got[0] != "--root" || got[1] != "/site/current" {
		t.Errorf("server args %q, want --root /site/current", got)
	}
	if got := desired.ServerArgs(newSite(v1alpha1.ContentSource{Image: "x"})); got[1] != "/site" {
		t.Errorf("server args of an image site %q", got)
	}
}

func TestDesiredGitFetcher(t *testing.T) {
	site := gitSite()
	site.Spec.PodTemplate.NodeSelector = map[string]string{"pool": "web"}
	site.Spec.PodTemplate.PriorityClassName = "tenant-low"
	site.Spec.PodTemplate.ImagePullSecrets = []v1alpha1.LocalObjectReference{{Name: "regcred"}}
	site.Spec.PodTemplate.ServiceAccountName = "site-account" // the server pods' account, never the fetcher's
	site.Spec.PodTemplate.AutomountServiceAccountToken = ptr.To(true)
	d := typed[appsv1.Deployment](t, gitcontent.DesiredFetcher(site, testAgentImage, desired.Tolerations(site)))
	if d.Name != "docs-git" || d.Namespace != "web" || *d.Spec.Replicas != 1 || d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("deployment %s/%s replicas %d strategy %s", d.Namespace, d.Name, *d.Spec.Replicas, d.Spec.Strategy.Type)
	}
	if ref := d.OwnerReferences; len(ref) != 1 || ref[0].Kind != "StaticSite" || ref[0].Name != "docs" || !*ref[0].Controller {
		t.Errorf("owner %+v", ref)
	}
	// Its pods are not the site's server pods: the Service, autoscaler and Benchmarks never select them.
	podLabels := labels.Set(d.Spec.Template.Labels)
	if labels.SelectorFromSet(sitechild.SelectorLabels(site)).Matches(podLabels) || podLabels[v1alpha1.LabelSite] != "" {
		t.Errorf("fetcher pod labels %v match the server pods' selector or carry the site label", podLabels)
	}
	if podLabels[v1alpha1.LabelManagedBy] != v1alpha1.ManagedByValue || !labels.SelectorFromSet(d.Spec.Selector.MatchLabels).Matches(podLabels) {
		t.Errorf("fetcher pod labels %v: the manager's cache needs managed-by; the selector %v must match", podLabels, d.Spec.Selector.MatchLabels)
	}
	pod := d.Spec.Template.Spec
	if *pod.AutomountServiceAccountToken || pod.ServiceAccountName != "" || *pod.EnableServiceLinks ||
		!*pod.SecurityContext.RunAsNonRoot || pod.SecurityContext.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security %+v token %v account %q", pod.SecurityContext, *pod.AutomountServiceAccountToken, pod.ServiceAccountName)
	}
	if pod.NodeSelector["pool"] != "web" || pod.PriorityClassName != "tenant-low" || len(pod.ImagePullSecrets) != 1 {
		t.Errorf("scheduling %v %q %v", pod.NodeSelector, pod.PriorityClassName, pod.ImagePullSecrets)
	}
	if len(pod.Containers) != 1 || len(pod.InitContainers) != 0 {
		t.Fatalf("containers %d init %d", len(pod.Containers), len(pod.InitContainers))
	}
	c := pod.Containers[0]
	if c.Name != "fetch" || c.Image != testAgentImage || !slices.Equal(c.Args, gitcontent.FetchArgs(site)) || len(c.Command) != 0 {
		t.Errorf("container %s %s %q %q", c.Name, c.Image, c.Command, c.Args)
	}
	sc := c.SecurityContext
	if !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) || !*sc.RunAsNonRoot {
		t.Errorf("container security %+v", sc)
	}
	mem := resource.MustParse("256Mi")
	if r := c.Resources; r.Requests.Memory().Cmp(mem) != 0 || r.Limits.Memory().Cmp(mem) != 0 ||
		r.Requests.Cpu().Cmp(resource.MustParse("100m")) != 0 || r.Limits.Cpu().Cmp(resource.MustParse("1")) != 0 {
		t.Errorf("resources %+v", r)
	}
	if p := c.ReadinessProbe; p == nil || p.HTTPGet.Path != "/healthz" || p.HTTPGet.Port != intstr.FromString("http") {
		t.Errorf("readiness %+v", p)
	}
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	if !reflect.DeepEqual(ports, map[string]int32{"http": 8080, "webhook": 8081}) {
		t.Errorf("ports %v", ports)
	}
	vols := map[string]corev1.Volume{}
	for _, v := range pod.Volumes {
		vols[v.Name] = v
	}
	// (history 5 + 1) bundles, two trees, the tree being written, the pack.
	if v := vols["content"].EmptyDir; v == nil || v.SizeLimit.Cmp(resource.MustParse("1000Mi")) != 0 {
		t.Errorf("work volume %+v, want an emptyDir of 10 × maxSize", vols["content"])
	}
	if pin := vols["git-pin"].Secret; pin == nil || pin.SecretName != "docs"+gitcontent.PinSecretSuffix || !*pin.Optional {
		t.Errorf("pin token volume %+v", vols["git-pin"])
	}
	if v := vols["tmp"].EmptyDir; v == nil || v.SizeLimit == nil {
		t.Errorf("tmp volume %+v", vols["tmp"])
	}
	creds := vols["git-credentials"].Secret
	if creds == nil || creds.SecretName != "docs-git-auth" || !*creds.Optional || len(creds.Items) != len(gitcontent.CredentialKeys()) {
		t.Errorf("credentials volume %+v", creds)
	}
	hook := vols["git-webhook"].Secret
	if hook == nil || hook.SecretName != "docs-git-hook" || !*hook.Optional || len(hook.Items) != 1 || hook.Items[0].Key != "token" {
		t.Errorf("webhook volume %+v", hook)
	}
	mounts := map[string]corev1.VolumeMount{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m
	}
	if mounts["content"].MountPath != "/var/lib/content" || mounts["tmp"].MountPath != "/tmp" ||
		mounts["git-credentials"].MountPath != "/etc/git-credentials" || !mounts["git-credentials"].ReadOnly ||
		mounts["git-webhook"].MountPath != "/etc/git-webhook" || !mounts["git-webhook"].ReadOnly {
		t.Errorf("mounts %+v", mounts)
	}
	// Without Secrets: no credentials or webhook volume (the pin token's only), no webhook port.
	plainSite := newSite(v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "https://x/y", Ref: "main",
		FetcherMemory: ptr.To(resource.MustParse("1Gi"))}})
	plain := typed[appsv1.Deployment](t, gitcontent.DesiredFetcher(plainSite, testAgentImage, desired.Tolerations(plainSite))).Spec.Template.Spec
	if len(plain.Volumes) != 3 || plain.Volumes[2].Name != "git-pin" || len(plain.Containers[0].Ports) != 1 || plain.Containers[0].Resources.Limits.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("fetcher without Secrets: volumes %+v ports %+v resources %+v", plain.Volumes, plain.Containers[0].Ports, plain.Containers[0].Resources)
	}
}

func TestDesiredGitServicesAndNetworkPolicy(t *testing.T) {
	site := gitSite()
	fetcherSelector := map[string]string{v1alpha1.LabelGitFetcherOf: "docs", "app.kubernetes.io/name": "hyperstatic-git-fetcher"}
	svc := typed[corev1.Service](t, gitcontent.DesiredService(site))
	if svc.Name != "docs-git" || svc.Spec.Type != corev1.ServiceTypeClusterIP || !svc.Spec.PublishNotReadyAddresses ||
		!reflect.DeepEqual(svc.Spec.Selector, fetcherSelector) || len(svc.Spec.Ports) != 1 ||
		svc.Spec.Ports[0].Port != 8080 || svc.Spec.Ports[0].TargetPort != intstr.FromString("http") {
		t.Errorf("Service %+v", svc)
	}
	hook := typed[corev1.Service](t, gitcontent.DesiredWebhookService(site))
	if hook.Name != "docs-git-webhook" || len(hook.Spec.Ports) != 1 || hook.Spec.Ports[0].Port != 80 ||
		hook.Spec.Ports[0].TargetPort != intstr.FromString("webhook") || !reflect.DeepEqual(hook.Spec.Selector, fetcherSelector) {
		t.Errorf("webhook Service %+v", hook)
	}
	np := typed[networkingv1.NetworkPolicy](t, gitcontent.DesiredNetworkPolicy(site, "ops"))
	want := networkingv1.NetworkPolicySpec{
		PodSelector: metav1.LabelSelector{MatchLabels: fetcherSelector},
		PolicyTypes: []networkingv1.PolicyType{networkingv1.PolicyTypeIngress},
		Ingress: []networkingv1.NetworkPolicyIngressRule{
			{Ports: []networkingv1.NetworkPolicyPort{policyPort("http")}, From: []networkingv1.NetworkPolicyPeer{
				{PodSelector: &metav1.LabelSelector{MatchLabels: sitechild.SelectorLabels(site)}},
				{PodSelector: &metav1.LabelSelector{MatchLabels: map[string]string{v1alpha1.LabelCapacityProbeOf: "docs", v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}}},
				namespacePeer(map[string]string{"kubernetes.io/metadata.name": "ops"})}},
			{Ports: []networkingv1.NetworkPolicyPort{policyPort("webhook")}},
		},
	}
	if !reflect.DeepEqual(np.Name, "docs-git") || !reflect.DeepEqual(np.Spec, want) {
		t.Errorf("NetworkPolicy %s %+v\nwant %+v", np.Name, np.Spec, want)
	}
	site.Spec.Content.Git.WebhookSecretRef = nil
	if gitcontent.DesiredWebhookService(site) != nil {
		t.Error("a webhook Service without webhookSecretRef")
	}
	np = typed[networkingv1.NetworkPolicy](t, gitcontent.DesiredNetworkPolicy(site, ""))
	if len(np.Spec.Ingress) != 1 || len(np.Spec.Ingress[0].From) != 2 {
		t.Errorf("without a webhook and an operator namespace: %+v", np.Spec.Ingress)
	}
	// The site's own NetworkPolicy opens the puller's port beside the admin port.
	site.Spec.NetworkPolicy = &v1alpha1.NetworkPolicySpec{}
	own := typed[networkingv1.NetworkPolicy](t, desired.NetworkPolicy(site, "ops"))
	if got := own.Spec.Ingress[1].Ports; !reflect.DeepEqual(got, []networkingv1.NetworkPolicyPort{policyPort("admin"), policyPort("content")}) {
		t.Errorf("site NetworkPolicy admin rule ports %+v", got)
	}
}

// The server pods of a Git site: /site is an emptyDir the puller sidecar fills (read-only for the server), the
// server's root is /site/current, and the pod stays Guaranteed.
func TestGitServerPodTemplate(t *testing.T) {
	site := gitSite()
	c := desired.Content{Source: v1alpha1.ContentSourceGit, Size: 3 << 20, AgentImage: testAgentImage}
	d := deploymentFor(t, site, c)
	pod := d.Spec.Template.Spec
	if len(pod.InitContainers) != 1 {
		t.Fatalf("init containers %+v", pod.InitContainers)
	}
	p := pod.InitContainers[0]
	if p.Name != "content" || p.Image != testAgentImage || p.RestartPolicy == nil || *p.RestartPolicy != corev1.ContainerRestartPolicyAlways ||
		!slices.Equal(p.Args, gitcontent.PullArgs(site)) {
		t.Errorf("puller %s %s %v %q", p.Name, p.Image, p.RestartPolicy, p.Args)
	}
	if sp := p.StartupProbe; sp == nil || sp.HTTPGet.Path != "/healthz" || sp.HTTPGet.Port != intstr.FromString("content") ||
		sp.PeriodSeconds != 1 || sp.FailureThreshold < 300 {
		t.Errorf("puller startup probe %+v", sp)
	}
	if p.ReadinessProbe != nil || p.LivenessProbe != nil {
		t.Errorf("the puller must not make the pod unready or restart it: %+v %+v", p.ReadinessProbe, p.LivenessProbe)
	}
	if !reflect.DeepEqual(p.Resources.Requests, p.Resources.Limits) || p.Resources.Limits.Cpu().IsZero() || p.Resources.Limits.Memory().IsZero() {
		t.Errorf("puller resources %+v: requests must equal limits (Guaranteed)", p.Resources)
	}
	if len(p.Ports) != 1 || p.Ports[0].Name != "content" || p.Ports[0].ContainerPort != 8082 {
		t.Errorf("puller ports %+v", p.Ports)
	}
	if len(p.VolumeMounts) != 1 || p.VolumeMounts[0].MountPath != "/site" || p.VolumeMounts[0].ReadOnly {
		t.Errorf("puller mounts %+v", p.VolumeMounts)
	}
	if sc := p.SecurityContext; !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !*sc.RunAsNonRoot {
		t.Errorf("puller security %+v", sc)
	}
	server := pod.Containers[0]
	if !slices.Equal(server.Args[:2], []string{"--root", "/site/current"}) {
		t.Errorf("server args %q", server.Args)
	}
	var siteMount *corev1.VolumeMount
	for i := range server.VolumeMounts {
		if server.VolumeMounts[i].Name == "site" {
			siteMount = &server.VolumeMounts[i]
		}
	}
	if siteMount == nil || siteMount.MountPath != "/site" || !siteMount.ReadOnly {
		t.Errorf("server site mount %+v", siteMount)
	}
	for _, v := range pod.Volumes {
		if v.Name == "site" && (v.EmptyDir == nil || v.EmptyDir.SizeLimit.Cmp(resource.MustParse("600Mi")) != 0) {
			t.Errorf("site volume %+v, want an emptyDir of (history 5 + 1) × maxSize", v)
		}
	}
	// Memory from the bundle's size, as for ConfigMaps: 48Mi + 2 × 3Mi → 64Mi.
	if got := server.Resources.Limits.Memory(); got.Cmp(resource.MustParse("64Mi")) != 0 {
		t.Errorf("server memory %s", got)
	}
	if _, ok := d.Spec.Template.Annotations[sitechild.AnnotationContentHash]; ok {
		t.Error("Git content reloads live: no content hash rolls the pods")
	}
}
