package pool

import (
	"maps"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
)

// mirrorConfigMap is the mirror, in the pool's namespace, of ConfigMap source of the site site: its data and
// binaryData as they are, named poolindex.MirrorName, labelled with the site (namespace and name) and the source's
// resourceVersion it copies. It carries no managed-by label (desired_labels.go).
func mirrorConfigMap(pool *v1alpha1.StaticSitePool, site *v1alpha1.StaticSite, source *corev1.ConfigMap) *corev1ac.ConfigMapApplyConfiguration {
	id := poolindex.ID(site.Namespace, site.Name)
	l := mirrorSelector(pool.Name)
	l[v1alpha1.LabelSite] = site.Name
	l[labelSiteNamespace] = site.Namespace
	cm := corev1ac.ConfigMap(poolindex.MirrorName(pool.Name, id, source.Name), pool.Spec.Namespace).
		WithLabels(l).
		WithAnnotations(map[string]string{annotationSite: id, annotationSourceVersion: source.ResourceVersion}).
		WithOwnerReferences(ownerReference(pool))
	if len(source.Data) > 0 {
		cm.WithData(maps.Clone(source.Data))
	}
	if len(source.BinaryData) > 0 {
		cm.WithBinaryData(maps.Clone(source.BinaryData))
	}
	return cm
}

// mirrorName is a site's ConfigMap as the pool knows it: the mirror's name in the pool namespace.
func mirrorName(pool *v1alpha1.StaticSitePool, site *v1alpha1.StaticSite, configMap string) string {
	return poolindex.MirrorName(pool.Name, poolindex.ID(site.Namespace, site.Name), configMap)
}
