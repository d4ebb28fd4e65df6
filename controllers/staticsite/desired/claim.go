package desired

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
)

// A claim's access mode decides how many server pods can mount it at once. The pods mount it read-only, but that
// does not help: the attach/detach controller allows a volume on several nodes only when its access modes include
// ReadOnlyMany or ReadWriteMany, and the scheduler gives a ReadWriteOncePod volume to one pod in the cluster. A
// second pod on another node waits in "Multi-Attach error" (or Pending) for as long as the first one runs.

// AccessModes are the claim's effective access modes: those of the bound volume (status) once bound, else the
// requested ones.
func AccessModes(claim *corev1.PersistentVolumeClaim) []corev1.PersistentVolumeAccessMode {
	if len(claim.Status.AccessModes) > 0 {
		return claim.Status.AccessModes
	}
	return claim.Spec.AccessModes
}

// SingleAttach: the claim's volume can be used by one node (ReadWriteOnce) or one pod (ReadWriteOncePod) at a
// time. A claim without access modes is left to the cluster (as the attach/detach controller does).
func SingleAttach(claim *corev1.PersistentVolumeClaim) bool {
	modes := AccessModes(claim)
	if len(modes) == 0 {
		return false
	}
	return !slices.Contains(modes, corev1.ReadOnlyMany) && !slices.Contains(modes, corev1.ReadWriteMany)
}
