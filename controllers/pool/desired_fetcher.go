package pool

import (
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// The pool fetcher (docs/design/pools.md, "Where things run"): one pod per pool, the only part of a pool that
// talks to Git forges and to the Kubernetes API. Its ServiceAccount may get, list and watch ConfigMaps in the pool
// namespace and nothing else (the mirrors of ConfigMap sites, and the index); no Secret, no other namespace.
// Only the pool's server pods and the operator reach it (NetworkPolicy).
const (
	fetchContainerName = "fetch"
	fetcherWorkDir     = "/var/lib/content"
	fetcherCheckServer = "/hyperstatic-server" // in the content-agent image: `--check` of each new tree
	fetcherWorkVolume  = "work"
	fetcherTmpVolume   = "tmp"
)

var (
	// The fetcher's CPU bursts (fetches, checks, bundles): it asks little and may use a whole CPU.
	fetcherCPURequest = resource.MustParse("100m")
	fetcherCPULimit   = resource.MustParse("1")
	fetcherMemory     = resource.MustParse("256Mi")
	fetcherTmp        = resource.MustParse("64Mi")
)

// FetchArgs are the fetcher's arguments (the content agent's `pool-fetch`, docs/design/pools.md).
func FetchArgs(pool *v1alpha1.StaticSitePool) []string {
	return []string{"pool-fetch", "--index", indexDir, "--namespace", pool.Spec.Namespace,
		"--check-server", fetcherCheckServer, "--dir", fetcherWorkDir, "--listen", ":" + strconv.Itoa(v1alpha1.GitFetcherPort)}
}

// fetcherServiceAccount is the fetcher's identity: its token is the only API credential of a pool.
func fetcherServiceAccount(pool *v1alpha1.StaticSitePool) *corev1ac.ServiceAccountApplyConfiguration {
	return corev1ac.ServiceAccount(poolplacement.FetcherName(pool.Name), pool.Spec.Namespace).
		WithLabels(fetcherLabels(pool.Name)).
		WithOwnerReferences(ownerReference(pool)).
		WithAutomountServiceAccountToken(false) // mounted by the fetcher's pod alone, which asks for it
}

// fetcherRole: ConfigMaps of the pool namespace, read only.
func fetcherRole(pool *v1alpha1.StaticSitePool) *rbacv1ac.RoleApplyConfiguration {
	return rbacv1ac.Role(poolplacement.FetcherName(pool.Name), pool.Spec.Namespace).
		WithLabels(fetcherLabels(pool.Name)).
		WithOwnerReferences(ownerReference(pool)).
		WithRules(rbacv1ac.PolicyRule().WithAPIGroups("").WithResources("configmaps").WithVerbs("get", "list", "watch"))
}

func fetcherRoleBinding(pool *v1alpha1.StaticSitePool) *rbacv1ac.RoleBindingApplyConfiguration {
	name := poolplacement.FetcherName(pool.Name)
	return rbacv1ac.RoleBinding(name, pool.Spec.Namespace).
		WithLabels(fetcherLabels(pool.Name)).
		WithOwnerReferences(ownerReference(pool)).
		WithRoleRef(rbacv1ac.RoleRef().WithAPIGroup(rbacv1.GroupName).WithKind("Role").WithName(name)).
		WithSubjects(rbacv1ac.Subject().WithKind(rbacv1.ServiceAccountKind).WithName(name).WithNamespace(pool.Spec.Namespace))
}

// fetcherDeployment: one pod, Recreate (two fetchers would serve two sets of bundles), the index mounted as the
// server pods have it, an emptyDir for its work bounded by the pool's disk, its ServiceAccount's token.
func fetcherDeployment(pool *v1alpha1.StaticSitePool, agentImage string) *appsv1ac.DeploymentApplyConfiguration {
	c := corev1ac.Container().
		WithName(fetchContainerName).
		WithImage(agentImage).
		WithArgs(FetchArgs(pool)...).
		WithPorts(corev1ac.ContainerPort().WithName(v1alpha1.GitFetcherPortName).WithContainerPort(v1alpha1.GitFetcherPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceCPU: fetcherCPURequest, corev1.ResourceMemory: fetcherMemory}).
			WithLimits(corev1.ResourceList{corev1.ResourceCPU: fetcherCPULimit, corev1.ResourceMemory: fetcherMemory})).
		WithReadinessProbe(httpProbe("/healthz", v1alpha1.GitFetcherPortName, 2, 2, 3)).
		WithSecurityContext(sitechild.RestrictedContainer()).
		WithVolumeMounts(
			corev1ac.VolumeMount().WithName(indexVolumeName).WithMountPath(indexDir).WithReadOnly(true),
			corev1ac.VolumeMount().WithName(fetcherWorkVolume).WithMountPath(fetcherWorkDir),
			corev1ac.VolumeMount().WithName(fetcherTmpVolume).WithMountPath("/tmp"))
	o := pool.Spec.PodTemplate
	spec := corev1ac.PodSpec().
		WithServiceAccountName(poolplacement.FetcherName(pool.Name)).
		WithAutomountServiceAccountToken(true).
		WithEnableServiceLinks(false).
		WithTerminationGracePeriodSeconds(15).
		WithSecurityContext(podSecurityContext()).
		WithContainers(c).
		WithVolumes(indexVolume(pool),
			corev1ac.Volume().WithName(fetcherWorkVolume).
				WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(quantityOr(pool.Spec.Disk, defaultDisk))),
			corev1ac.Volume().WithName(fetcherTmpVolume).WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(fetcherTmp)))
	withScheduling(spec, o)
	return appsv1ac.Deployment(poolplacement.FetcherName(pool.Name), pool.Spec.Namespace).
		WithLabels(fetcherLabels(pool.Name)).
		WithOwnerReferences(ownerReference(pool)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(1).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(poolplacement.FetcherSelector(pool.Name))).
			WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)).
			WithRevisionHistoryLimit(2).
			WithTemplate(corev1ac.PodTemplateSpec().WithLabels(fetcherLabels(pool.Name)).WithSpec(spec)))
}

// fetcherService is what the pullers follow (FetcherURL). It lists the fetcher before it is ready, so a puller's
// long poll reaches it as soon as it listens.
func fetcherService(pool *v1alpha1.StaticSitePool) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(poolplacement.FetcherName(pool.Name), pool.Spec.Namespace).
		WithLabels(fetcherLabels(pool.Name)).
		WithOwnerReferences(ownerReference(pool)).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithSelector(poolplacement.FetcherSelector(pool.Name)).
			WithIPFamilyPolicy(corev1.IPFamilyPolicyPreferDualStack).
			WithPublishNotReadyAddresses(true).
			WithPorts(corev1ac.ServicePort().WithName(v1alpha1.GitFetcherPortName).WithProtocol(corev1.ProtocolTCP).
				WithAppProtocol("http").WithPort(v1alpha1.GitFetcherPort).WithTargetPort(intstr.FromString(v1alpha1.GitFetcherPortName))))
}

// fetcherNetworkPolicy admits to the fetcher's port only the pool's server pods (their pullers) and the operator's
// namespace (it reads /sites); operatorNamespace "" (an operator outside the cluster) leaves that peer out. The
// fetcher serves every pool site's bundle and is never exposed: no other pod of the cluster reaches it. Egress is
// not restricted here (the platform's egress policies for the pool namespace apply).
func fetcherNetworkPolicy(pool *v1alpha1.StaticSitePool, operatorNamespace string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	from := []*networkingv1ac.NetworkPolicyPeerApplyConfiguration{
		networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(poolplacement.PodSelector(pool.Name))),
	}
	if operatorNamespace != "" {
		from = append(from, networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(metav1ac.LabelSelector().
			WithMatchLabels(map[string]string{corev1.LabelMetadataName: operatorNamespace})))
	}
	return networkingv1ac.NetworkPolicy(poolplacement.FetcherName(pool.Name), pool.Spec.Namespace).
		WithLabels(fetcherLabels(pool.Name)).
		WithOwnerReferences(ownerReference(pool)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(poolplacement.FetcherSelector(pool.Name))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(networkingv1ac.NetworkPolicyIngressRule().
				WithFrom(from...).
				WithPorts(networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).
					WithPort(intstr.FromString(v1alpha1.GitFetcherPortName)))))
}
