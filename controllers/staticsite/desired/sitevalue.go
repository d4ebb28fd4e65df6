package desired

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
	"hyperstatic.dev/hyperstatic/internal/ssosite"
)

// SiteValueVolumeName is the pod volume holding the site value's ConfigMap.
const SiteValueVolumeName = "site-value"

// siteValueVolume is the site value's ConfigMap as a volume. The template names the ConfigMap, never its revision:
// a rule change updates the mounted file under the running server (the kubelet swaps the mount's ..data link, the
// server watches the directory), it rolls no pod. Not optional: the operator applies the ConfigMap before the
// Deployment, and a pod must not start without its rules.
//
// With basic authentication (sitevalue.UsesHtpasswd) or single sign-on (sitevalue.UsesSSO) the volume is
// projected: the ConfigMap and the key of the htpasswd Secret as the file sitevalue.HtpasswdFile, and the sso
// Secret's session keys as ssosite.KeysFile, beside site.json, so the kubelet swaps them all in one ..data change and
// the server reads the value with the users and keys it names. The Secrets themselves, never a copy: the hashes and
// keys stay in Secrets and the operator needs no right to write one. Turning either on or off rolls the pods once
// (the volume's sources change); changing users, keys or rules does not.
func siteValueVolume(site *v1alpha1.StaticSite) *corev1ac.VolumeApplyConfiguration {
	v := corev1ac.Volume().WithName(SiteValueVolumeName)
	if !sitevalue.UsesHtpasswd(site) && !sitevalue.UsesSSO(site) {
		return v.WithConfigMap(corev1ac.ConfigMapVolumeSource().WithName(sitevalue.ConfigMapName(site.Name)).WithDefaultMode(0o444))
	}
	sources := []*corev1ac.VolumeProjectionApplyConfiguration{
		corev1ac.VolumeProjection().WithConfigMap(corev1ac.ConfigMapProjection().WithName(sitevalue.ConfigMapName(site.Name))),
	}
	if sitevalue.UsesHtpasswd(site) {
		ref := site.Spec.Server.Access.HtpasswdSecret
		key := ref.Key
		if key == "" {
			key = v1alpha1.DefaultHtpasswdKey
		}
		sources = append(sources, corev1ac.VolumeProjection().WithSecret(corev1ac.SecretProjection().WithName(ref.Name).
			WithItems(corev1ac.KeyToPath().WithKey(key).WithPath(sitevalue.HtpasswdFile))))
	}
	if sitevalue.UsesSSO(site) {
		sources = append(sources, corev1ac.VolumeProjection().WithSecret(corev1ac.SecretProjection().
			WithName(site.Spec.Server.Access.SSO.SecretName).
			WithItems(corev1ac.KeyToPath().WithKey(v1alpha1.SSOSessionKeysKey).WithPath(ssosite.KeysFile))))
	}
	return v.WithProjected(corev1ac.ProjectedVolumeSource().WithDefaultMode(0o444).WithSources(sources...))
}

// siteValueMount mounts it read-only at sitevalue.MountDir. A whole-directory mount, never subPath: the kubelet
// does not update subPath mounts.
func siteValueMount() *corev1ac.VolumeMountApplyConfiguration {
	return corev1ac.VolumeMount().WithName(SiteValueVolumeName).WithMountPath(sitevalue.MountDir).WithReadOnly(true)
}

// SiteValueConfigMap is the ConfigMap holding a site's rendered value, owned by the site, with its labels.
func SiteValueConfigMap(site *v1alpha1.StaticSite, v sitevalue.Rendered) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(sitevalue.ConfigMapName(site.Name), site.Namespace).
		WithLabels(sitechild.ObjectLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithData(map[string]string{sitevalue.Key: string(v.Bytes)})
}
