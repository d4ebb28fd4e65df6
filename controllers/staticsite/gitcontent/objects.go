package gitcontent

// The Git objects, pure functions of the site, the content-agent image and the server pods' tolerations, built
// after the conventions of every site object (package sitechild): the fetcher's Deployment, Services and
// NetworkPolicy, and the server pods' puller sidecar and /site volume.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

const (
	// FetcherAppName is the fetcher objects' app.kubernetes.io/name (never the server pods' one: their selector
	// must not match the fetcher).
	FetcherAppName = "hyperstatic-git-fetcher"
	labelComponent = "app.kubernetes.io/component"

	// FetchContainerName and PullerContainerName are the content-agent containers: the fetcher pod's only one and
	// the server pods' sidecar.
	FetchContainerName  = "fetch"
	PullerContainerName = "content"

	// Paths inside the fetcher pod. The image (images/content-agent) holds /content-agent (its entry point) and
	// /hyperstatic-server, which the fetcher runs as `--check` on each new tree.
	gitWorkDir           = "/var/lib/content"
	gitCheckServer       = "/hyperstatic-server"
	gitCredentialsDir    = "/etc/git-credentials"
	gitWebhookDir        = "/etc/git-webhook"
	gitWebhookSecretKey  = "token"
	gitWorkVolumeName    = "content"
	gitTmpVolumeName     = "tmp"
	gitCredentialsVolume = "git-credentials"
	gitWebhookVolume     = "git-webhook"

	// gitTmpSize bounds the fetcher's /tmp: go-git writes the pinned known_hosts there (a Secret holds 1 MiB at
	// most); the root file system is read-only.
	gitTmpSize = "64Mi"
	// gitSiteFactor × maxSize is the least of a server pod's site emptyDir: the tree served, the previous one (the
	// server may read it until its reload) and the one being extracted. The fetcher's work volume and the site
	// volume grow with spec.content.git.history (deploys.go). The kubelet evicts a pod whose emptyDir passes its
	// limit, so the bounds hold the worst case, not the usual one.
	gitSiteFactor = 3
)

// Resources of the content-agent containers. The fetcher's memory is spec.content.git.fetcherMemory (request ==
// limit); its CPU bursts (the fetch, the check and the bundle), so it asks for little and may use a whole CPU.
// The puller is in every server pod, which is Guaranteed: requests == limits, small. Its CPU bounds how fast a
// large tree is verified (sha256 of every byte) and extracted: about 0.3 CPU-seconds for a 67 MB site, so 3 s at
// 100m, for a pod's first tree; a push after it costs what changed (the bundle's file list and the changed files:
// about 30 ms of CPU for a page of that site, internal/contentagent/filesinstall.go).
var (
	gitFetcherCPURequest = resource.MustParse("100m")
	gitFetcherCPULimit   = resource.MustParse("1")
	gitPullerCPU         = resource.MustParse("100m")
	gitPullerMemory      = resource.MustParse("64Mi")
)

// Tuning of the fetcher's and the puller's probes.
const (
	// gitPullerStartupSeconds is how long the first pull may take (period 1 s): the fetcher's first fetch of a
	// large repository, then the download and extraction. The server container starts only after it.
	gitPullerStartupSeconds = 600
)

// FetcherName is the name of a Git site's fetcher Deployment, its Service and its NetworkPolicy.
func FetcherName(site *v1alpha1.StaticSite) string { return site.Name + v1alpha1.GitFetcherSuffix }

// WebhookName is the name of the Service in front of a Git site's webhook port.
func WebhookName(site *v1alpha1.StaticSite) string { return site.Name + v1alpha1.GitWebhookSuffix }

// fetcherSelector selects a site's fetcher pod; it never matches the server pods (app name differs).
func fetcherSelector(site *v1alpha1.StaticSite) map[string]string {
	return map[string]string{v1alpha1.LabelGitFetcherOf: site.Name, sitechild.LabelName: FetcherAppName}
}

// fetcherLabels are on every fetcher object. managed-by keeps them in the manager's cache
// (internal/managercache).
func fetcherLabels(site *v1alpha1.StaticSite) map[string]string {
	l := fetcherSelector(site)
	l[sitechild.LabelInstance] = site.Name
	l[labelComponent] = "git-fetcher"
	l[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByValue
	return l
}

// intervalOf is spec.content.git.interval, default 1m.
func intervalOf(g *v1alpha1.GitContent) time.Duration {
	if g.Interval != nil && g.Interval.Duration > 0 {
		return g.Interval.Duration
	}
	d, _ := time.ParseDuration(v1alpha1.DefaultGitInterval)
	return d
}

// maxSizeOf is spec.content.git.maxSize, default 512Mi.
func maxSizeOf(g *v1alpha1.GitContent) resource.Quantity {
	if g.MaxSize != nil && g.MaxSize.Sign() > 0 {
		return *g.MaxSize
	}
	return resource.MustParse(v1alpha1.DefaultGitMaxSize)
}

// fetcherMemoryOf is spec.content.git.fetcherMemory, default 256Mi.
func fetcherMemoryOf(g *v1alpha1.GitContent) resource.Quantity {
	if g.FetcherMemory != nil && g.FetcherMemory.Sign() > 0 {
		return *g.FetcherMemory
	}
	return resource.MustParse(v1alpha1.DefaultGitFetcherMemory)
}

// times is q × n, in q's format.
func times(q resource.Quantity, n int64) resource.Quantity {
	return *resource.NewQuantity(q.Value()*n, resource.BinarySI)
}

// FetcherURL is the fetcher's in-cluster address, as the pullers reach it: the Service <site>-git by its
// namespace-qualified name, which resolves whatever the cluster's domain is.
func FetcherURL(site *v1alpha1.StaticSite) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", FetcherName(site), site.Namespace, v1alpha1.GitFetcherPort)
}

// FetchArgs are the fetcher container's arguments (the image's entry point is /content-agent): the operator's half
// of the command-line contract with cmd/content-agent, which internal/contract runs through the real binary.
func FetchArgs(site *v1alpha1.StaticSite) []string {
	g := site.Spec.Content.Git
	maxSize := maxSizeOf(g)
	args := []string{"fetch", "--url", g.URL, "--ref", g.Ref}
	if g.Path != "" {
		args = append(args, "--path", g.Path)
	}
	args = append(args, "--interval", sitechild.FormatDuration(intervalOf(g)), "--max-bytes", strconv.FormatInt(maxSize.Value(), 10))
	args = append(args, TreeLimitArgs(g)...)
	if g.SecretRef != nil {
		args = append(args, "--secret-dir", gitCredentialsDir)
	}
	args = append(args, "--check-server", gitCheckServer, "--dir", gitWorkDir, "--listen", portAddr(v1alpha1.GitFetcherPort))
	args = append(args, deployArgs(g)...)
	args = append(args, previewArgs(site)...)
	// Without a webhook Secret the fetcher would refuse every delivery: it listens for none.
	if g.WebhookSecretRef != nil {
		args = append(args, "--webhook-secret-file", gitWebhookDir+"/"+gitWebhookSecretKey,
			"--webhook-listen", portAddr(v1alpha1.GitWebhookPort))
	} else {
		args = append(args, "--webhook-listen=")
	}
	return args
}

// PullArgs are the puller sidecar's arguments: follow the fetcher's Service, install each tree under /site (the
// server's root is /site/current), answer the operator on the content port, and flip at most once per server
// reload (the server's admin port on the pod's loopback). With spec.previews, lay out the server's --sites
// directory instead (previews.go).
func PullArgs(site *v1alpha1.StaticSite) []string {
	maxSize := maxSizeOf(site.Spec.Content.Git)
	args := []string{"pull", "--fetcher", FetcherURL(site), "--dir", v1alpha1.SiteRoot,
		"--listen", portAddr(v1alpha1.ContentPort), "--max-bytes", strconv.FormatInt(maxSize.Value(), 10)}
	if site.Spec.Previews == nil {
		args = append(args, "--server-admin", fmt.Sprintf("http://127.0.0.1:%d", v1alpha1.AdminPort))
	}
	args = append(args, TreeLimitArgs(site.Spec.Content.Git)...)
	return append(args, sitesPullArgs(site, sitevalue.File)...) // previews.go
}

// TreeLimitArgs passes spec.content.git.maxEntries and maxDepth, when set, to the fetcher and the pullers
// alike: a puller must extract a bundle under the limits its tree was written with. Unset, both take the
// content-agent's defaults (gitsource.DefaultMaxEntries, DefaultMaxDepth).
func TreeLimitArgs(g *v1alpha1.GitContent) []string {
	var args []string
	if g.MaxEntries != nil {
		args = append(args, "--max-entries", strconv.Itoa(int(*g.MaxEntries)))
	}
	if g.MaxDepth != nil {
		args = append(args, "--max-depth", strconv.Itoa(int(*g.MaxDepth)))
	}
	return args
}

// portAddr is Go's "every address" form, ":PORT" (a dual-stack socket where the node has IPv6).
func portAddr(port int) string { return ":" + strconv.Itoa(port) }

// DesiredFetcher is the fetcher Deployment of a Git site: one pod, Recreate (two fetchers would publish
// bundles into two volumes), the content-agent image, the credentials and webhook Secrets mounted (only these
// keys, optional: a missing Secret is reported as GitSecretNotFound and does not keep the fetcher from running),
// an emptyDir for its work, the server pods' security. Scheduling follows the site's nodeSelector, tolerations
// and priority class, so the fetcher lands where the tenant's pods may; its image is pulled with the site's pull
// Secrets (the operator's images may live in a private registry).
func DesiredFetcher(site *v1alpha1.StaticSite, agentImage string, tolerations []*corev1ac.TolerationApplyConfiguration) *appsv1ac.DeploymentApplyConfiguration {
	g := site.Spec.Content.Git
	o := site.Spec.PodTemplate
	mem := fetcherMemoryOf(g)
	c := corev1ac.Container().
		WithName(FetchContainerName).
		WithImage(agentImage).
		WithArgs(FetchArgs(site)...).
		WithPorts(corev1ac.ContainerPort().WithName(v1alpha1.GitFetcherPortName).WithContainerPort(v1alpha1.GitFetcherPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: gitFetcherCPURequest, corev1.ResourceMemory: mem}).
			WithLimits(corev1.ResourceList{corev1.ResourceCPU: gitFetcherCPULimit, corev1.ResourceMemory: mem})).
		// /healthz answers 200 once a bundle is published (or restored after a restart): Ready means "has a commit".
		WithReadinessProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromString(v1alpha1.GitFetcherPortName))).
			WithPeriodSeconds(2).WithTimeoutSeconds(2).WithFailureThreshold(3)).
		WithSecurityContext(sitechild.RestrictedContainer()).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(gitWorkVolumeName).WithMountPath(gitWorkDir),
			corev1ac.VolumeMount().WithName(gitTmpVolumeName).WithMountPath("/tmp"))
	spec := corev1ac.PodSpec().
		WithEnableServiceLinks(false).
		WithAutomountServiceAccountToken(false).
		WithTerminationGracePeriodSeconds(15).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(sitechild.ServerUID).
			WithRunAsGroup(sitechild.ServerUID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithVolumes(
			corev1ac.Volume().WithName(gitWorkVolumeName).
				WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(times(maxSizeOf(g), fetcherWorkFactor(g)+previewsWorkFactor(site)))),
			corev1ac.Volume().WithName(gitTmpVolumeName).
				WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(resource.MustParse(gitTmpSize))))
	withPinToken(site, spec, c) // deploys.go
	if g.SecretRef != nil {
		// Flux's keys; a key the Secret does not have is left out (optional), other keys never reach the pod.
		items := make([]*corev1ac.KeyToPathApplyConfiguration, 0, len(credentialKeys))
		for _, k := range credentialKeys {
			items = append(items, corev1ac.KeyToPath().WithKey(k).WithPath(k))
		}
		spec.WithVolumes(corev1ac.Volume().WithName(gitCredentialsVolume).WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(g.SecretRef.Name).WithOptional(true).WithItems(items...)))
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(gitCredentialsVolume).WithMountPath(gitCredentialsDir).WithReadOnly(true))
	}
	if g.WebhookSecretRef != nil {
		spec.WithVolumes(corev1ac.Volume().WithName(gitWebhookVolume).WithSecret(corev1ac.SecretVolumeSource().
			WithSecretName(g.WebhookSecretRef.Name).WithOptional(true).
			WithItems(corev1ac.KeyToPath().WithKey(gitWebhookSecretKey).WithPath(gitWebhookSecretKey))))
		c.WithVolumeMounts(corev1ac.VolumeMount().WithName(gitWebhookVolume).WithMountPath(gitWebhookDir).WithReadOnly(true))
		c.WithPorts(corev1ac.ContainerPort().WithName(v1alpha1.GitWebhookPortName).WithContainerPort(v1alpha1.GitWebhookPort).WithProtocol(corev1.ProtocolTCP))
	}
	spec.WithContainers(c)
	for _, s := range o.ImagePullSecrets {
		spec.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s.Name))
	}
	if len(o.NodeSelector) > 0 {
		spec.WithNodeSelector(o.NodeSelector)
	}
	spec.WithTolerations(tolerations...)
	if o.PriorityClassName != "" {
		spec.WithPriorityClassName(o.PriorityClassName)
	}
	return appsv1ac.Deployment(FetcherName(site), site.Namespace).
		WithLabels(fetcherLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(fetcherSelector(site))).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType("Recreate")).
			WithRevisionHistoryLimit(2).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(fetcherLabels(site)).WithSpec(spec)))
}

// credentialKeys are the keys of a credentials Secret the fetcher reads (Flux's GitRepository keys; gitsource.Secret*,
// spelled here so that the operator does not link go-git: a test holds them together).
var credentialKeys = []string{"username", "password", "bearerToken", "identity", "known_hosts", "ca.crt"}

// DesiredService is the Service <site>-git the pullers follow: port 8080 to the fetcher's. It lists the fetcher
// pod before it is ready (ready means "has published"), so a new pod's puller long-polls the fetcher and takes
// the first commit the moment it is published, instead of waiting in its backoff.
func DesiredService(site *v1alpha1.StaticSite) *corev1ac.ServiceApplyConfiguration {
	return fetcherService(site, FetcherName(site), v1alpha1.GitFetcherPortName, v1alpha1.GitFetcherPort, v1alpha1.GitFetcherPortName)
}

// DesiredWebhookService is the Service <site>-git-webhook (port 80 to the fetcher's webhook port, /hooks and
// nothing else), or nil without spec.content.git.webhookSecretRef. The operator never exposes it: the user routes
// a public path to it (an Ingress or HTTPRoute). It lists the fetcher before its first publish too: a push can
// fix a first fetch that failed (a branch that did not exist yet).
func DesiredWebhookService(site *v1alpha1.StaticSite) *corev1ac.ServiceApplyConfiguration {
	if site.Spec.Content.Git.WebhookSecretRef == nil {
		return nil
	}
	return fetcherService(site, WebhookName(site), v1alpha1.GitWebhookServicePortName, v1alpha1.GitWebhookServicePort, v1alpha1.GitWebhookPortName)
}

// fetcherService is a ClusterIP Service of the fetcher pod with one HTTP port (name, number) to the pod's named
// port target, listing the pod before it is ready.
func fetcherService(site *v1alpha1.StaticSite, name, portName string, port int32, target string) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(name, site.Namespace).
		WithLabels(fetcherLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(fetcherSelector(site)).
			WithIPFamilyPolicy(corev1.IPFamilyPolicyPreferDualStack).
			WithPublishNotReadyAddresses(true).
			WithPorts(corev1ac.ServicePort().WithName(portName).WithProtocol(corev1.ProtocolTCP).
				WithAppProtocol("http").WithPort(port).WithTargetPort(intstr.FromString(target))))
}

// DesiredNetworkPolicy is the fetcher's NetworkPolicy, always there (security by default), ingress only:
//   - the fetcher port (/revision, /bundles/: the site's content, even a private repository's) from the site's
//     server pods, its capacity measurement pods (same template, same puller) and the operator's namespace (it
//     reads /revision); operatorNamespace "" (an operator outside the cluster) leaves that peer out;
//   - with a webhook Secret, the webhook port from anywhere: the user decides where it is reachable by routing
//     to the Service, and every delivery is authenticated (HMAC or token).
//
// Egress is not restricted here: the fetcher's connections to the forge are the tenant's own, under the
// namespace's egress policies.
func DesiredNetworkPolicy(site *v1alpha1.StaticSite, operatorNamespace string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	port := func(name string) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
		return networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromString(name))
	}
	probes := map[string]string{v1alpha1.LabelCapacityProbeOf: site.Name, v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}
	fetch := networkingv1ac.NetworkPolicyIngressRule().WithPorts(port(v1alpha1.GitFetcherPortName)).
		WithFrom(
			networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(sitechild.SelectorLabels(site))),
			networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(maps.Clone(probes))))
	if operatorNamespace != "" {
		fetch.WithFrom(networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(
			metav1ac.LabelSelector().WithMatchLabels(map[string]string{corev1.LabelMetadataName: operatorNamespace})))
	}
	spec := networkingv1ac.NetworkPolicySpec().
		WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(fetcherSelector(site))).
		WithPolicyTypes(networkingv1.PolicyTypeIngress).
		WithIngress(fetch)
	if site.Spec.Content.Git.WebhookSecretRef != nil {
		spec.WithIngress(networkingv1ac.NetworkPolicyIngressRule().WithPorts(port(v1alpha1.GitWebhookPortName)))
	}
	return networkingv1ac.NetworkPolicy(FetcherName(site), site.Namespace).
		WithLabels(fetcherLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithSpec(spec)
}

// SiteVolume is a Git site's /site: an emptyDir the puller fills and the server reads.
func SiteVolume(site *v1alpha1.StaticSite) *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(sitechild.SiteVolumeName).
		WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(times(maxSizeOf(site.Spec.Content.Git), siteFactor(site.Spec.Content.Git)+previewsSiteFactor(site))))
}

// PullerContainer is the server pod's puller: a native sidecar (an init container that keeps running), so the
// kubelet starts it first and starts the server only once its startup probe passes (/healthz is 503 until a tree
// is installed: a pod never serves an empty site). Requests equal limits, like every container of the pod
// (Guaranteed). The server's readiness is its own, unchanged.
func PullerContainer(site *v1alpha1.StaticSite, agentImage string) *corev1ac.ContainerApplyConfiguration {
	res := corev1.ResourceList{corev1.ResourceCPU: gitPullerCPU, corev1.ResourceMemory: gitPullerMemory}
	return corev1ac.Container().
		WithName(PullerContainerName).
		WithImage(agentImage).
		WithArgs(PullArgs(site)...).
		WithRestartPolicy(corev1.ContainerRestartPolicyAlways).
		WithPorts(corev1ac.ContainerPort().WithName(v1alpha1.ContentPortName).WithContainerPort(v1alpha1.ContentPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().WithRequests(res).WithLimits(res)).
		WithStartupProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromString(v1alpha1.ContentPortName))).
			WithPeriodSeconds(1).WithTimeoutSeconds(1).WithFailureThreshold(gitPullerStartupSeconds)).
		WithSecurityContext(sitechild.RestrictedContainer()).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(sitechild.SiteVolumeName).WithMountPath(v1alpha1.SiteRoot))
}

// CredentialKeys are the keys of a credentials Secret the fetcher pod gets (a copy).
func CredentialKeys() []string { return slices.Clone(credentialKeys) }
