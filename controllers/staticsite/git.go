package staticsite

// Content from Git (spec.content.git; docs/staticsite.md, "Content from Git"; docs/design/git-content.md): the
// desired objects, pure functions of the site and the operator's content-agent image.
//
//   - the fetcher: Deployment <site>-git (one pod, Recreate) running `content-agent fetch`, which follows the
//     repository, checks each new commit with the server's --check and publishes it as a digest-addressed bundle;
//   - Service <site>-git (port 8080: /revision and /bundles/ for the pullers), Service <site>-git-webhook (port 80
//     to the fetcher's webhook port, only with webhookSecretRef; the user routes to it) and NetworkPolicy
//     <site>-git (the fetcher port from the site's pods and the operator only);
//   - in every server pod, the puller: a native sidecar (`content-agent pull`) that takes each new bundle and
//     flips /site/current, the server's root, to it; its startup probe holds the server back until a tree is
//     there, so a pod never starts empty.
//
// The fetcher objects carry LabelGitFetcherOf instead of LabelSite, like the capacity probes: the site's Service,
// autoscaler and Benchmarks select the site's pods by LabelSite, and the fetcher is not one of them.

import (
	"fmt"
	"maps"
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
)

const (
	// gitFetcherAppName is the fetcher objects' app.kubernetes.io/name (the server's is appName).
	gitFetcherAppName = "hyperstatic-git-fetcher"
	labelComponent    = "app.kubernetes.io/component"

	// fetchContainerName and pullerContainerName are the content-agent containers: the fetcher pod's only one and
	// the server pods' sidecar.
	fetchContainerName  = "fetch"
	pullerContainerName = "content"

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
	// gitFetcherWorkFactor × maxSize is the fetcher's emptyDir: the served tree and the previous one, the tree
	// being written and the fetched pack while a fetch runs, and two bundles (each about one tree). The kubelet
	// evicts a pod whose emptyDir passes its limit, so the bound holds the worst case, not the usual one.
	gitFetcherWorkFactor = 6
	// gitSiteFactor × maxSize is a server pod's site emptyDir: the tree served, the previous one (the server may
	// read it until its reload) and the one being extracted.
	gitSiteFactor = 3
)

// Resources of the content-agent containers. The fetcher's memory is spec.content.git.fetcherMemory (request ==
// limit); its CPU bursts (the fetch, the check and the bundle), so it asks for little and may use a whole CPU.
// The puller is in every server pod, which is Guaranteed: requests == limits, small. Its CPU bounds how fast a
// large tree is verified (sha256 of every byte) and extracted: about 0.3 CPU-seconds for a 67 MB site, so 3 s at
// 100m.
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

// GitFetcherName is the name of a Git site's fetcher Deployment, its Service and its NetworkPolicy.
func GitFetcherName(site *v1alpha1.StaticSite) string { return site.Name + v1alpha1.GitFetcherSuffix }

// GitWebhookName is the name of the Service in front of a Git site's webhook port.
func GitWebhookName(site *v1alpha1.StaticSite) string { return site.Name + v1alpha1.GitWebhookSuffix }

// gitFetcherSelector selects a site's fetcher pod; it never matches the server pods (app name differs).
func gitFetcherSelector(site *v1alpha1.StaticSite) map[string]string {
	return map[string]string{v1alpha1.LabelGitFetcherOf: site.Name, labelName: gitFetcherAppName}
}

// gitFetcherLabels are on every fetcher object. managed-by keeps them in the manager's cache
// (internal/managercache).
func gitFetcherLabels(site *v1alpha1.StaticSite) map[string]string {
	l := gitFetcherSelector(site)
	l[labelInstance] = site.Name
	l[labelComponent] = "git-fetcher"
	l[v1alpha1.LabelManagedBy] = v1alpha1.ManagedByValue
	return l
}

// gitIntervalOf is spec.content.git.interval, default 1m.
func gitIntervalOf(g *v1alpha1.GitContent) time.Duration {
	if g.Interval != nil && g.Interval.Duration > 0 {
		return g.Interval.Duration
	}
	d, _ := time.ParseDuration(v1alpha1.DefaultGitInterval)
	return d
}

// gitMaxSizeOf is spec.content.git.maxSize, default 512Mi.
func gitMaxSizeOf(g *v1alpha1.GitContent) resource.Quantity {
	if g.MaxSize != nil && g.MaxSize.Sign() > 0 {
		return *g.MaxSize
	}
	return resource.MustParse(v1alpha1.DefaultGitMaxSize)
}

// gitFetcherMemoryOf is spec.content.git.fetcherMemory, default 256Mi.
func gitFetcherMemoryOf(g *v1alpha1.GitContent) resource.Quantity {
	if g.FetcherMemory != nil && g.FetcherMemory.Sign() > 0 {
		return *g.FetcherMemory
	}
	return resource.MustParse(v1alpha1.DefaultGitFetcherMemory)
}

// times is q × n, in q's format.
func times(q resource.Quantity, n int64) resource.Quantity {
	return *resource.NewQuantity(q.Value()*n, resource.BinarySI)
}

// GitFetcherURL is the fetcher's in-cluster address, as the pullers reach it: the Service <site>-git by its
// namespace-qualified name, which resolves whatever the cluster's domain is.
func GitFetcherURL(site *v1alpha1.StaticSite) string {
	return fmt.Sprintf("http://%s.%s.svc:%d", GitFetcherName(site), site.Namespace, v1alpha1.GitFetcherPort)
}

// FetchArgs are the fetcher container's arguments (the image's entry point is /content-agent): the operator's half
// of the command-line contract with cmd/content-agent, which internal/contract runs through the real binary.
func FetchArgs(site *v1alpha1.StaticSite) []string {
	g := site.Spec.Content.Git
	maxSize := gitMaxSizeOf(g)
	args := []string{"fetch", "--url", g.URL, "--ref", g.Ref}
	if g.Path != "" {
		args = append(args, "--path", g.Path)
	}
	args = append(args, "--interval", formatDuration(gitIntervalOf(g)), "--max-bytes", strconv.FormatInt(maxSize.Value(), 10))
	args = append(args, gitTreeLimitArgs(g)...)
	if g.SecretRef != nil {
		args = append(args, "--secret-dir", gitCredentialsDir)
	}
	args = append(args, "--check-server", gitCheckServer, "--dir", gitWorkDir, "--listen", portAddr(v1alpha1.GitFetcherPort))
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
// reload (the server's admin port on the pod's loopback).
func PullArgs(site *v1alpha1.StaticSite) []string {
	maxSize := gitMaxSizeOf(site.Spec.Content.Git)
	args := []string{"pull", "--fetcher", GitFetcherURL(site), "--dir", v1alpha1.SiteRoot,
		"--listen", portAddr(v1alpha1.ContentPort), "--max-bytes", strconv.FormatInt(maxSize.Value(), 10),
		"--server-admin", fmt.Sprintf("http://127.0.0.1:%d", v1alpha1.AdminPort)}
	return append(args, gitTreeLimitArgs(site.Spec.Content.Git)...)
}

// gitTreeLimitArgs passes spec.content.git.maxEntries and maxDepth, when set, to the fetcher and the pullers
// alike: a puller must extract a bundle under the limits its tree was written with. Unset, both take the
// content-agent's defaults (gitsource.DefaultMaxEntries, DefaultMaxDepth).
func gitTreeLimitArgs(g *v1alpha1.GitContent) []string {
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

// contentAgentSecurityContext is the server container's: non-root, no privilege escalation, read-only root, no
// capabilities, RuntimeDefault seccomp (the restricted Pod Security Standard).
func contentAgentSecurityContext() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithRunAsNonRoot(true).
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

// DesiredGitFetcher is the fetcher Deployment of a Git site: one pod, Recreate (two fetchers would publish
// bundles into two volumes), the content-agent image, the credentials and webhook Secrets mounted (only these
// keys, optional: a missing Secret is reported as GitSecretNotFound and does not keep the fetcher from running),
// an emptyDir for its work, the server pods' security. Scheduling follows the site's nodeSelector, tolerations
// and priority class, so the fetcher lands where the tenant's pods may; its image is pulled with the site's pull
// Secrets (the operator's images may live in a private registry).
func DesiredGitFetcher(site *v1alpha1.StaticSite, agentImage string) *appsv1ac.DeploymentApplyConfiguration {
	g := site.Spec.Content.Git
	o := site.Spec.PodTemplate
	mem := gitFetcherMemoryOf(g)
	c := corev1ac.Container().
		WithName(fetchContainerName).
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
		WithSecurityContext(contentAgentSecurityContext()).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(gitWorkVolumeName).WithMountPath(gitWorkDir),
			corev1ac.VolumeMount().WithName(gitTmpVolumeName).WithMountPath("/tmp"))
	spec := corev1ac.PodSpec().
		WithEnableServiceLinks(false).
		WithAutomountServiceAccountToken(false).
		WithTerminationGracePeriodSeconds(15).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(serverUID).
			WithRunAsGroup(serverUID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithVolumes(
			corev1ac.Volume().WithName(gitWorkVolumeName).
				WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(times(gitMaxSizeOf(g), gitFetcherWorkFactor))),
			corev1ac.Volume().WithName(gitTmpVolumeName).
				WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(resource.MustParse(gitTmpSize))))
	if g.SecretRef != nil {
		// Flux's keys; a key the Secret does not have is left out (optional), other keys never reach the pod.
		items := make([]*corev1ac.KeyToPathApplyConfiguration, 0, len(gitCredentialKeys))
		for _, k := range gitCredentialKeys {
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
	spec.WithTolerations(tolerationsOf(site)...)
	if o.PriorityClassName != "" {
		spec.WithPriorityClassName(o.PriorityClassName)
	}
	return appsv1ac.Deployment(GitFetcherName(site), site.Namespace).
		WithLabels(gitFetcherLabels(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(gitFetcherSelector(site))).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType("Recreate")).
			WithRevisionHistoryLimit(2).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(gitFetcherLabels(site)).WithSpec(spec)))
}

// gitCredentialKeys are the keys of a credentials Secret the fetcher reads (Flux's GitRepository keys; gitsource.Secret*,
// spelled here so that the operator does not link go-git: a test holds them together).
var gitCredentialKeys = []string{"username", "password", "bearerToken", "identity", "known_hosts", "ca.crt"}

// DesiredGitService is the Service <site>-git the pullers follow: port 8080 to the fetcher's. It lists the fetcher
// pod before it is ready (ready means "has published"), so a new pod's puller long-polls the fetcher and takes
// the first commit the moment it is published, instead of waiting in its backoff.
func DesiredGitService(site *v1alpha1.StaticSite) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(GitFetcherName(site), site.Namespace).
		WithLabels(gitFetcherLabels(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(gitFetcherSelector(site)).
			WithIPFamilyPolicy(corev1.IPFamilyPolicyPreferDualStack).
			WithPublishNotReadyAddresses(true).
			WithPorts(corev1ac.ServicePort().WithName(v1alpha1.GitFetcherPortName).WithProtocol(corev1.ProtocolTCP).
				WithAppProtocol("http").WithPort(v1alpha1.GitFetcherPort).WithTargetPort(intstr.FromString(v1alpha1.GitFetcherPortName))))
}

// DesiredGitWebhookService is the Service <site>-git-webhook (port 80 to the fetcher's webhook port, /hooks and
// nothing else), or nil without spec.content.git.webhookSecretRef. The operator never exposes it: the user routes
// a public path to it (an Ingress or HTTPRoute). It lists the fetcher before its first publish too: a push can
// fix a first fetch that failed (a branch that did not exist yet).
func DesiredGitWebhookService(site *v1alpha1.StaticSite) *corev1ac.ServiceApplyConfiguration {
	if site.Spec.Content.Git.WebhookSecretRef == nil {
		return nil
	}
	return corev1ac.Service(GitWebhookName(site), site.Namespace).
		WithLabels(gitFetcherLabels(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(gitFetcherSelector(site)).
			WithIPFamilyPolicy(corev1.IPFamilyPolicyPreferDualStack).
			WithPublishNotReadyAddresses(true).
			WithPorts(corev1ac.ServicePort().WithName(v1alpha1.GitWebhookServicePortName).WithProtocol(corev1.ProtocolTCP).
				WithAppProtocol("http").WithPort(v1alpha1.GitWebhookServicePort).WithTargetPort(intstr.FromString(v1alpha1.GitWebhookPortName))))
}

// DesiredGitNetworkPolicy is the fetcher's NetworkPolicy, always there (security by default), ingress only:
//   - the fetcher port (/revision, /bundles/: the site's content, even a private repository's) from the site's
//     server pods, its capacity measurement pods (same template, same puller) and the operator's namespace (it
//     reads /revision); operatorNamespace "" (an operator outside the cluster) leaves that peer out;
//   - with a webhook Secret, the webhook port from anywhere: the user decides where it is reachable by routing
//     to the Service, and every delivery is authenticated (HMAC or token).
//
// Egress is not restricted here: the fetcher's connections to the forge are the tenant's own, under the
// namespace's egress policies.
func DesiredGitNetworkPolicy(site *v1alpha1.StaticSite, operatorNamespace string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	port := func(name string) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
		return networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromString(name))
	}
	probes := map[string]string{v1alpha1.LabelCapacityProbeOf: site.Name, v1alpha1.LabelManagedBy: v1alpha1.ManagedByValue}
	fetch := networkingv1ac.NetworkPolicyIngressRule().WithPorts(port(v1alpha1.GitFetcherPortName)).
		WithFrom(
			networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(site))),
			networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(maps.Clone(probes))))
	if operatorNamespace != "" {
		fetch.WithFrom(networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(
			metav1ac.LabelSelector().WithMatchLabels(map[string]string{namespaceNameLabel: operatorNamespace})))
	}
	spec := networkingv1ac.NetworkPolicySpec().
		WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(gitFetcherSelector(site))).
		WithPolicyTypes(networkingv1.PolicyTypeIngress).
		WithIngress(fetch)
	if site.Spec.Content.Git.WebhookSecretRef != nil {
		spec.WithIngress(networkingv1ac.NetworkPolicyIngressRule().WithPorts(port(v1alpha1.GitWebhookPortName)))
	}
	return networkingv1ac.NetworkPolicy(GitFetcherName(site), site.Namespace).
		WithLabels(gitFetcherLabels(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(spec)
}

// gitSiteVolume is a Git site's /site: an emptyDir the puller fills and the server reads.
func gitSiteVolume(site *v1alpha1.StaticSite) *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(siteVolumeName).
		WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(times(gitMaxSizeOf(site.Spec.Content.Git), gitSiteFactor)))
}

// pullerContainer is the server pod's puller: a native sidecar (an init container that keeps running), so the
// kubelet starts it first and starts the server only once its startup probe passes (/healthz is 503 until a tree
// is installed: a pod never serves an empty site). Requests equal limits, like every container of the pod
// (Guaranteed). The server's readiness is its own, unchanged.
func pullerContainer(site *v1alpha1.StaticSite, agentImage string) *corev1ac.ContainerApplyConfiguration {
	res := corev1.ResourceList{corev1.ResourceCPU: gitPullerCPU, corev1.ResourceMemory: gitPullerMemory}
	return corev1ac.Container().
		WithName(pullerContainerName).
		WithImage(agentImage).
		WithArgs(PullArgs(site)...).
		WithRestartPolicy(corev1.ContainerRestartPolicyAlways).
		WithPorts(corev1ac.ContainerPort().WithName(v1alpha1.ContentPortName).WithContainerPort(v1alpha1.ContentPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().WithRequests(res).WithLimits(res)).
		WithStartupProbe(corev1ac.Probe().
			WithHTTPGet(corev1ac.HTTPGetAction().WithPath("/healthz").WithPort(intstr.FromString(v1alpha1.ContentPortName))).
			WithPeriodSeconds(1).WithTimeoutSeconds(1).WithFailureThreshold(gitPullerStartupSeconds)).
		WithSecurityContext(contentAgentSecurityContext()).
		WithVolumeMounts(corev1ac.VolumeMount().WithName(siteVolumeName).WithMountPath(v1alpha1.SiteRoot))
}
