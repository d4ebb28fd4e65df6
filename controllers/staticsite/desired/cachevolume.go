package desired

import (
	"k8s.io/apimachinery/pkg/api/resource"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// The compression cache: the server makes brotli and gzip variants of the files it holds in memory in the
// background, after it serves (images/server/src/compress/encoder.rs), and with --compress-cache keeps them in a
// directory, keyed by content digest. An emptyDir lives as long as the pod, not the container: a server that
// restarts (liveness, OOM) reads its variants back instead of spending CPU on them again. The root file system
// stays read-only; this is the one writable path.
//
// The server is told through its environment (HYPERSTATIC_COMPRESS_CACHE), not an argument: a server older than
// the flag rejects an unknown argument and would crash-loop, and old servers keep running under a new operator
// (content images built FROM an older server, spec.server.image, sites waiting for their turn on a new default
// image). An unknown HYPERSTATIC_ variable is ignored. --compress-cache in extraArgs still wins (flags do).
const (
	// CompressCacheVolumeName and CompressCacheDir are the cache's volume and where the server container mounts it.
	CompressCacheVolumeName = "compress-cache"
	CompressCacheDir        = "/var/cache/hyperstatic"
	compressCacheEnv        = "HYPERSTATIC_COMPRESS_CACHE"
)

// compressCacheVolume is the cache's emptyDir. Its sizeLimit is the pod's memory: the server encodes only files
// it holds in memory, which fit the content budget (under half the memory limit, images/server/src/site/memory.rs),
// and keeps a variant only when it is smaller than its file, so the two variants of all of them stay under twice
// the budget, below the memory limit. A fixed size would be too small for a large site, and the kubelet evicts a
// pod whose emptyDir passes its limit. (A --memory-budget above the automatic one in extraArgs could pass it.)
func compressCacheVolume(memory resource.Quantity) *corev1ac.VolumeApplyConfiguration {
	return corev1ac.Volume().WithName(CompressCacheVolumeName).
		WithEmptyDir(corev1ac.EmptyDirVolumeSource().WithSizeLimit(memory))
}

func compressCacheMount() *corev1ac.VolumeMountApplyConfiguration {
	return corev1ac.VolumeMount().WithName(CompressCacheVolumeName).WithMountPath(CompressCacheDir)
}

func compressCacheEnvVar() *corev1ac.EnvVarApplyConfiguration {
	return corev1ac.EnvVar().WithName(compressCacheEnv).WithValue(CompressCacheDir)
}
