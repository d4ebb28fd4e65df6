package pool

import (
	"maps"
	"net"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// The pool's server pods, pinned and Guaranteed like a site's (controllers/staticsite/desired: the same non-root
// user, restricted security context, probes and compression cache), serving every site of the index from one
// process (`hyperstatic-server --sites /pool`, docs/design/pools.md). They hold no API token and no credentials:
// the index arrives as a projected volume of the shard ConfigMaps, the trees through the puller sidecar, which
// pulls them from the pool fetcher into an emptyDir the two containers share.
const (
	// poolDir is the server's --sites directory: index/ (the shards) and content/ (the trees).
	poolDir    = "/pool"
	indexDir   = poolDir + "/index"
	contentDir = poolDir + "/content"

	indexVolumeName   = "index"
	contentVolumeName = "content"

	// pullerContainerName is the server pods' content-agent sidecar.
	pullerContainerName = "content"

	// A terminating pool pod holds its drain until the pool controller released it, once no site's EndpointSlice
	// may send it a new connection (step_release.go; at most poolplacement.DrainHold), then serves for drainDelay
	// more (the proxies' lag, a site's default) and finishes the responses in flight within shutdownTimeout.
	drainDelay      = 5 * time.Second
	shutdownTimeout = 10 * time.Second
	terminationWait = poolplacement.DrainHold + drainDelay + shutdownTimeout + 5*time.Second

	// pullerStartupSeconds is how long the puller may take to be ready at a pod's start (period 1 s): every site of
	// the index has a tree or a reported failure, the trees pulled from the fetcher.
	pullerStartupSeconds = 600
)

// Defaults the CRD also applies (kept here for objects stored before a default existed).
var (
	defaultReplicas = int32(2)
	defaultCPU      = resource.MustParse("1")
	defaultMemory   = resource.MustParse("512Mi")
	defaultDisk     = resource.MustParse("4Gi")
	// The puller is in every Guaranteed pool pod: requests == limits, small (as a Git site's puller).
	pullerCPU    = resource.MustParse("100m")
	pullerMemory = resource.MustParse("64Mi")
)

// replicasOf is the pool's server pod count: spec.replicas, or with spec.autoscaling the autoscaler's last
// decision (status.autoscaling.desiredReplicas, step_scale.go) within the spec's bounds, which apply at once.
func replicasOf(pool *v1alpha1.StaticSitePool) int32 {
	floor := floorOf(pool)
	a := pool.Spec.Autoscaling
	if a == nil {
		return floor
	}
	want := floor
	if st := pool.Status.Autoscaling; st != nil && st.DesiredReplicas > 0 {
		want = st.DesiredReplicas
	}
	return min(max(want, floor), max(a.MaxReplicas, floor))
}

func quantityOr(q *resource.Quantity, def resource.Quantity) resource.Quantity {
	if q != nil && q.Sign() > 0 {
		return *q
	}
	return def
}

// ServerArgs are the pool server's process settings: the site's listeners, drain and shutdown (the same flags a
// site passes, in the same form: "[::]:PORT" is dual-stack, and the server's listen flags are socket addresses,
// which ":PORT" is not) and --sites instead of --root and --site.
func ServerArgs() []string {
	return []string{
		"--sites", poolDir,
		"--listen", net.JoinHostPort("::", strconv.Itoa(v1alpha1.ServerPort)),
		"--admin-listen", net.JoinHostPort("::", strconv.Itoa(v1alpha1.AdminPort)),
		"--drain-delay", sitechild.FormatDuration(drainDelay),
		"--drain-hold", sitechild.FormatDuration(poolplacement.DrainHold),
		"--shutdown-timeout", sitechild.FormatDuration(shutdownTimeout),
	}
}

// FetcherURL is the pool fetcher's in-cluster address, as the pullers reach it: its Service by its
// namespace-qualified name, which resolves whatever the cluster's domain is.
func FetcherURL(pool *v1alpha1.StaticSitePool) string {
	return "http://" + poolplacement.FetcherName(pool.Name) + "." + pool.Spec.Namespace + ".svc:" + strconv.Itoa(v1alpha1.GitFetcherPort)
}

// PullArgs are the puller sidecar's arguments (the content agent's `pool-pull`, docs/design/pools.md).
func PullArgs(pool *v1alpha1.StaticSitePool) []string {
	return []string{"pool-pull", "--index", indexDir, "--dir", contentDir, "--fetcher", FetcherURL(pool),
		"--listen", ":" + strconv.Itoa(v1alpha1.ContentPort)}
}

// serverDeployment is the pool's server Deployment: replicas pods (replicasOf, held while a scale-down drains:
// step_drain.go) labelled PodSelector, rolled by surge (a new pod is ready before an old one stops).
func serverDeployment(pool *v1alpha1.StaticSitePool, replicas int32, serverImage, agentImage string) *appsv1ac.DeploymentApplyConfiguration {
	maxUnavailable, maxSurge := intstr.FromInt32(0), intstr.FromInt32(1)
	return appsv1ac.Deployment(poolplacement.ServerName(pool.Name), pool.Spec.Namespace).
		WithLabels(serverLabels(pool.Name)).
		WithOwnerReferences(ownerReference(pool)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(replicas).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(poolplacement.PodSelector(pool.Name))).
			WithRevisionHistoryLimit(5).
			WithProgressDeadlineSeconds(600).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RollingUpdateDeploymentStrategyType).
				WithRollingUpdate(appsv1ac.RollingUpdateDeployment().WithMaxUnavailable(maxUnavailable).WithMaxSurge(maxSurge))).
			WithTemplate(serverPodTemplate(pool, serverImage, agentImage)))
}

func serverPodTemplate(pool *v1alpha1.StaticSitePool, serverImage, agentImage string) *corev1ac.PodTemplateSpecApplyConfiguration {
	o := pool.Spec.PodTemplate
	labels := maps.Clone(o.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, serverLabels(pool.Name)) // the operator's labels win: the selectors depend on them
	memory := quantityOr(pool.Spec.Memory, defaultMemory)
	spec := corev1ac.PodSpec().
		WithEnableServiceLinks(false).
		WithAutomountServiceAccountToken(false). // a pool pod serves the internet: no API token
		WithTerminationGracePeriodSeconds(int64(terminationWait/time.Second)).
		WithSecurityContext(podSecurityContext()).
		WithInitContainers(pullerContainer(pool, agentImage)).
		WithContainers(serverContainer(pool, serverImage, memory)).
		WithVolumes(indexVolume(pool),
			corev1ac.Volume().WithName(contentVolumeName).
				WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(quantityOr(pool.Spec.Disk, defaultDisk))),
			corev1ac.Volume().WithName(desired.CompressCacheVolumeName).
				WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(memory)))
	withScheduling(spec, o)
	if o.PriorityClassName != "" {
		spec.WithPriorityClassName(o.PriorityClassName)
	}
	t := corev1ac.PodTemplateSpec().WithLabels(labels).WithSpec(spec)
	if len(o.Annotations) > 0 {
		t.WithAnnotations(o.Annotations)
	}
	return t
}

// podSecurityContext is a site pod's: the non-root user, RuntimeDefault seccomp (restricted Pod Security).
func podSecurityContext() *corev1ac.PodSecurityContextApplyConfiguration {
	return corev1ac.PodSecurityContext().
		WithRunAsNonRoot(true).
		WithRunAsUser(sitechild.ServerUID).
		WithRunAsGroup(sitechild.ServerUID).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}

func serverContainer(pool *v1alpha1.StaticSitePool, serverImage string, memory resource.Quantity) *corev1ac.ContainerApplyConfiguration {
	image := serverImage
	if pool.Spec.ServerImage != "" {
		image = pool.Spec.ServerImage
	}
	// requests == limits for every resource: the pod is in the Guaranteed QoS class, whole CPUs pinned.
	res := corev1.ResourceList{corev1.ResourceCPU: quantityOr(pool.Spec.CPU, defaultCPU), corev1.ResourceMemory: memory}
	return corev1ac.Container().
		WithName(sitechild.ContainerName).
		WithImage(image).
		WithArgs(ServerArgs()...).
		WithPorts(
			corev1ac.ContainerPort().WithName(v1alpha1.ServerPortName).WithContainerPort(v1alpha1.ServerPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(v1alpha1.AdminPortName).WithContainerPort(v1alpha1.AdminPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().WithRequests(res).WithLimits(res)).
		// A site's probes (controllers/staticsite/desired/deployment.go says why each is lenient).
		WithStartupProbe(httpProbe("/healthz", v1alpha1.AdminPortName, 1, 1, 120)).
		WithReadinessProbe(httpProbe("/readyz", v1alpha1.AdminPortName, 2, 2, 3)).
		WithLivenessProbe(httpProbe("/healthz", v1alpha1.AdminPortName, 10, 5, 3)).
		WithSecurityContext(sitechild.RestrictedContainer()).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(indexVolumeName).WithMountPath(indexDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(contentVolumeName).WithMountPath(contentDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(desired.CompressCacheVolumeName).WithMountPath(desired.CompressCacheDir)).
		WithEnv(corev1ac.EnvVar().WithName("HYPERSTATIC_COMPRESS_CACHE").WithValue(desired.CompressCacheDir))
}

// pullerContainer is the native sidecar (an init container that restarts Always): it starts, and is ready (every
// site of the index has a tree or a reported failure), before the server starts, and runs beside it. Its
// readiness then holds for the life of the container (contentagent.PoolPuller.Ready says why).
func pullerContainer(pool *v1alpha1.StaticSitePool, agentImage string) *corev1ac.ContainerApplyConfiguration {
	res := corev1.ResourceList{corev1.ResourceCPU: pullerCPU, corev1.ResourceMemory: pullerMemory}
	return corev1ac.Container().
		WithName(pullerContainerName).
		WithImage(agentImage).
		WithArgs(PullArgs(pool)...).
		WithRestartPolicy(corev1.ContainerRestartPolicyAlways).
		WithPorts(corev1ac.ContainerPort().WithName(v1alpha1.ContentPortName).WithContainerPort(v1alpha1.ContentPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().WithRequests(res).WithLimits(res)).
		WithStartupProbe(httpProbe("/healthz", v1alpha1.ContentPortName, 1, 1, pullerStartupSeconds)).
		WithReadinessProbe(httpProbe("/healthz", v1alpha1.ContentPortName, 2, 2, 3)).
		WithSecurityContext(sitechild.RestrictedContainer()).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(indexVolumeName).WithMountPath(indexDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(contentVolumeName).WithMountPath(contentDir))
}

// indexVolume projects every shard's ConfigMap into one directory (their keys differ: poolplacement.IndexKey); the
// kubelet swaps the files atomically when a shard changes, under running pods.
func indexVolume(pool *v1alpha1.StaticSitePool) *corev1ac.VolumeApplyConfiguration {
	p := corev1ac.ProjectedVolumeSource().WithDefaultMode(0o444)
	for i := range shardsOf(pool) {
		p.WithSources(corev1ac.VolumeProjection().WithConfigMap(corev1ac.ConfigMapProjection().WithName(poolplacement.IndexName(pool.Name, i))))
	}
	return corev1ac.Volume().WithName(indexVolumeName).WithProjected(p)
}

func httpProbe(path, port string, period, timeout, failures int32) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().WithPath(path).WithPort(intstr.FromString(port))).
		WithPeriodSeconds(period).WithTimeoutSeconds(timeout).WithFailureThreshold(failures)
}

// withScheduling gives a pool pod what spec.podTemplate says of where it runs and how its images are pulled: the
// image pull Secrets, the node selector and the tolerations.
func withScheduling(spec *corev1ac.PodSpecApplyConfiguration, o v1alpha1.PodTemplateOverrides) {
	for _, s := range o.ImagePullSecrets {
		spec.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s.Name))
	}
	if len(o.NodeSelector) > 0 {
		spec.WithNodeSelector(o.NodeSelector)
	}
	for i := range o.Tolerations {
		spec.WithTolerations(toleration(o.Tolerations[i]))
	}
}

func toleration(t corev1.Toleration) *corev1ac.TolerationApplyConfiguration {
	a := corev1ac.Toleration().WithKey(t.Key).WithOperator(t.Operator).WithValue(t.Value).WithEffect(t.Effect)
	if t.TolerationSeconds != nil {
		a.WithTolerationSeconds(*t.TolerationSeconds)
	}
	return a
}

// disruptionBudget lets one pool pod at a time be evicted (a single-pod pool can still be drained: the budget
// allows one); pods that are not ready may always be evicted, they serve nothing.
func disruptionBudget(pool *v1alpha1.StaticSitePool) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(poolplacement.ServerName(pool.Name), pool.Spec.Namespace).
		WithLabels(serverLabels(pool.Name)).
		WithOwnerReferences(ownerReference(pool)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(poolplacement.PodSelector(pool.Name))).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
}
