package desired

import (
	"maps"
	"path"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// Deployment is the Deployment that runs a site's server pods. It is a pure function of the site, the
// operator's default server image, what the controller learned about the content, and the memory to give.
func Deployment(site *v1alpha1.StaticSite, serverImage string, content Content, memory resource.Quantity) *appsv1ac.DeploymentApplyConfiguration {
	return appsv1ac.Deployment(site.Name, site.Namespace).
		WithLabels(sitechild.ObjectLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithSpec(appsv1ac.DeploymentSpec().
			WithReplicas(Replicas(site)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(sitechild.SelectorLabels(site))).
			WithRevisionHistoryLimit(5).
			WithProgressDeadlineSeconds(600).
			WithStrategy(rolloutStrategy(content)).
			WithTemplate(desiredPodTemplate(site, serverImage, content, memory)))
}

func desiredPodTemplate(site *v1alpha1.StaticSite, serverImage string, content Content, memory resource.Quantity) *corev1ac.PodTemplateSpecApplyConfiguration {
	o := site.Spec.PodTemplate
	podLabels := maps.Clone(o.Labels)
	if podLabels == nil {
		podLabels = map[string]string{}
	}
	maps.Copy(podLabels, sitechild.ObjectLabels(site)) // the operator's labels win: the selector depends on them
	annotations := maps.Clone(o.Annotations)
	if content.RollHash != "" {
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[sitechild.AnnotationContentHash] = content.RollHash
	}

	grace := int64((drainDelayOf(site) + terminationMargin + 999_999_999) / 1_000_000_000)
	spec := corev1ac.PodSpec().
		WithEnableServiceLinks(false).
		WithTerminationGracePeriodSeconds(grace).
		WithSecurityContext(corev1ac.PodSecurityContext().
			WithRunAsNonRoot(true).
			WithRunAsUser(sitechild.ServerUID).
			WithRunAsGroup(sitechild.ServerUID).
			WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))).
		WithContainers(serverContainer(site, serverImage, content, memory))
	if c := ssoContainer(site, content.AgentImage); c != nil { // sso.go
		spec.WithContainers(c)
		spec.WithVolumes(ssoVolume(site))
	}
	if content.Source == v1alpha1.ContentSourceGit {
		puller := gitcontent.PullerContainer(site, content.AgentImage)
		if site.Spec.Previews != nil {
			puller.WithVolumeMounts(siteValueMount()) // it embeds the site value in every entry of the --sites index
		}
		spec.WithInitContainers(puller)
	}
	if v := siteVolume(site, content); v != nil {
		spec.WithVolumes(v)
	}
	spec.WithVolumes(compressCacheVolume(memory), siteValueVolume(site))
	if v := tlsVolume(site); v != nil {
		spec.WithVolumes(v)
	}
	withPodIdentity(spec, o.PodIdentity)
	if len(o.NodeSelector) > 0 {
		spec.WithNodeSelector(o.NodeSelector)
	}
	// placement.go: the user's tolerations and affinity with the operator's node-loss and zone defaults.
	spec.WithTolerations(Tolerations(site)...)
	if a := affinityOf(site); a != nil {
		spec.WithAffinity(a)
	}
	if o.PriorityClassName != "" {
		spec.WithPriorityClassName(o.PriorityClassName)
	}
	spec.WithTopologySpreadConstraints(spreadOf(site)...) // placement.go

	t := corev1ac.PodTemplateSpec().WithLabels(podLabels).WithSpec(spec)
	if len(annotations) > 0 {
		t.WithAnnotations(annotations)
	}
	return t
}

func serverContainer(site *v1alpha1.StaticSite, serverImage string, content Content, memory resource.Quantity) *corev1ac.ContainerApplyConfiguration {
	image := serverImage
	if site.Spec.Server.Image != "" {
		image = site.Spec.Server.Image
	}
	if content.Source == v1alpha1.ContentSourceImage {
		image = site.Spec.Content.Image // built FROM the server image: it is the server
	}
	// requests == limits for every resource: the pod is in the Guaranteed QoS class.
	res := corev1.ResourceList{corev1.ResourceCPU: site.CPUOrDefault(), corev1.ResourceMemory: memory}
	c := corev1ac.Container().
		WithName(sitechild.ContainerName).
		WithImage(image).
		WithArgs(ServerArgs(site)...).
		WithPorts(
			corev1ac.ContainerPort().WithName(v1alpha1.ServerPortName).WithContainerPort(v1alpha1.ServerPort).WithProtocol(corev1.ProtocolTCP),
			corev1ac.ContainerPort().WithName(v1alpha1.AdminPortName).WithContainerPort(v1alpha1.AdminPort).WithProtocol(corev1.ProtocolTCP)).
		WithResources(corev1ac.ResourceRequirements().WithRequests(res).WithLimits(res)).
		// Startup: up to 2 minutes to load a large site. Readiness tolerates a slow answer or two: under full load
		// the admin thread shares the CPU with the workers, and a flapping endpoint would drop requests; draining
		// does not need it to be fast (terminating pods leave the endpoints at once). Liveness is lenient for the
		// same reason: it restarts only a server that is really stuck.
		WithStartupProbe(httpProbe("/healthz", 1, 1, 120)).
		WithReadinessProbe(httpProbe("/readyz", 2, 2, 3)).
		WithLivenessProbe(httpProbe("/healthz", 10, 5, 3)).
		WithSecurityContext(sitechild.RestrictedContainer())
	if site.Spec.Server.ImagePullPolicy != "" {
		c.WithImagePullPolicy(site.Spec.Server.ImagePullPolicy)
	}
	if content.Source != v1alpha1.ContentSourceImage {
		m := corev1ac.VolumeMount().WithName(sitechild.SiteVolumeName).WithMountPath(v1alpha1.SiteRoot).WithReadOnly(true)
		if pvc := site.Spec.Content.PersistentVolumeClaim; pvc != nil && pvc.SubPath != "" {
			m.WithSubPath(pvc.SubPath)
		}
		c.WithVolumeMounts(m)
	}
	c.WithVolumeMounts(compressCacheMount(), siteValueMount()).WithEnv(compressCacheEnvVar())
	withTLSListener(site, c)
	withHTTP3Port(site, c) // http3.go
	return c
}

// httpProbe probes the admin port.
func httpProbe(p string, period, timeout, failures int32) *corev1ac.ProbeApplyConfiguration {
	return corev1ac.Probe().
		WithHTTPGet(corev1ac.HTTPGetAction().WithPath(p).WithPort(intstr.FromString(v1alpha1.AdminPortName))).
		WithPeriodSeconds(period).
		WithTimeoutSeconds(timeout).
		WithFailureThreshold(failures)
}

// siteVolume is the volume mounted at /site (read-only in the server), or nil for a baked image (the files are in
// the image).
func siteVolume(site *v1alpha1.StaticSite, content Content) *corev1ac.VolumeApplyConfiguration {
	c := site.Spec.Content
	v := corev1ac.Volume().WithName(sitechild.SiteVolumeName)
	switch content.Source {
	case v1alpha1.ContentSourceConfigMaps:
		p := corev1ac.ProjectedVolumeSource().WithDefaultMode(0o444)
		for _, ref := range c.ConfigMaps {
			cm := corev1ac.ConfigMapProjection().WithName(ref.Name)
			if ref.PathPrefix != "" {
				prefix := path.Clean(ref.PathPrefix)
				for _, k := range content.ConfigMapKeys[ref.Name] {
					cm.WithItems(corev1ac.KeyToPath().WithKey(k).WithPath(path.Join(prefix, k)))
				}
			}
			p.WithSources(corev1ac.VolumeProjection().WithConfigMap(cm))
		}
		return v.WithProjected(p)
	case v1alpha1.ContentSourceImageVolume:
		iv := corev1ac.ImageVolumeSource().WithReference(c.ImageVolume.Reference)
		if c.ImageVolume.PullPolicy != "" {
			iv.WithPullPolicy(c.ImageVolume.PullPolicy)
		}
		return v.WithImage(iv)
	case v1alpha1.ContentSourcePersistentVolumeClaim:
		return v.WithPersistentVolumeClaim(corev1ac.PersistentVolumeClaimVolumeSource().
			WithClaimName(c.PersistentVolumeClaim.ClaimName).WithReadOnly(true))
	case v1alpha1.ContentSourceGit:
		return gitcontent.SiteVolume(site) // the puller's emptyDir
	}
	return nil
}

// rolloutStrategy is how the Deployment replaces pods. By default it surges: a new pod starts and becomes ready
// before an old one stops, so a rollout never lowers capacity. A single-attach claim cannot surge (the new pod
// would need the volume the old pod holds, on another node): the Deployment recreates instead, the old pod stops
// before the new one starts, and the site is unavailable for the length of a pod start.
func rolloutStrategy(content Content) *appsv1ac.DeploymentStrategyApplyConfiguration {
	if content.SingleAttach {
		return appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType)
	}
	maxUnavailable, maxSurge := intstr.FromInt32(0), intstr.FromInt32(1)
	return appsv1ac.DeploymentStrategy().
		WithType(appsv1.RollingUpdateDeploymentStrategyType).
		WithRollingUpdate(appsv1ac.RollingUpdateDeployment().
			WithMaxUnavailable(maxUnavailable).
			WithMaxSurge(maxSurge))
}
