package staticsite

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// Every pod gets the compression cache: an emptyDir as large as its memory, mounted writable where
// HYPERSTATIC_COMPRESS_CACHE points, while the root file system stays read-only; no argument an old server
// would reject.
func TestCompressCacheVolume(t *testing.T) {
	for _, content := range []v1alpha1.ContentSource{
		{Image: "example/docs:v3"},
		{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}},
		{PersistentVolumeClaim: &v1alpha1.PersistentVolumeClaimContent{ClaimName: "docs-data"}},
	} {
		site := newSite(content)
		site.Spec.Memory = ptr.To(resource.MustParse("96Mi"))
		c := desired.Content{Source: desired.SourceOf(site)}
		if c.Source == v1alpha1.ContentSourceImage {
			c = desired.ImageContent(v1alpha1.ContentSourceImage, content.Image, "")
		}
		pod := deploymentFor(t, site, c).Spec.Template.Spec
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == desired.CompressCacheVolumeName })
		if i < 0 || pod.Volumes[i].EmptyDir == nil || pod.Volumes[i].EmptyDir.SizeLimit == nil ||
			pod.Volumes[i].EmptyDir.SizeLimit.Cmp(resource.MustParse("96Mi")) != 0 || pod.Volumes[i].EmptyDir.Medium != "" {
			t.Fatalf("%s: want a disk emptyDir %q limited to the pod's 96Mi, got %+v", c.Source, desired.CompressCacheVolumeName, pod.Volumes)
		}
		server := pod.Containers[0]
		j := slices.IndexFunc(server.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == desired.CompressCacheVolumeName })
		if j < 0 || server.VolumeMounts[j].MountPath != desired.CompressCacheDir || server.VolumeMounts[j].ReadOnly {
			t.Errorf("%s: want %s mounted writable at %s, got %+v", c.Source, desired.CompressCacheVolumeName, desired.CompressCacheDir, server.VolumeMounts)
		}
		if !*server.SecurityContext.ReadOnlyRootFilesystem {
			t.Errorf("%s: the root file system must stay read-only", c.Source)
		}
		want := corev1.EnvVar{Name: "HYPERSTATIC_COMPRESS_CACHE", Value: "/var/cache/hyperstatic"}
		if !slices.Contains(server.Env, want) || slices.ContainsFunc(server.Args, func(a string) bool { return strings.HasPrefix(a, "--compress-cache") }) {
			t.Errorf("%s: want the cache in the environment %v, not the arguments: env %v args %q", c.Source, want, server.Env, server.Args)
		}
	}
}
