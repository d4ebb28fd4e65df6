package staticsite

import (
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// A claim's access mode decides how many server pods can mount it at once. The pods mount it read-only, but that
// does not help: the attach/detach controller allows a volume on several nodes only when its access modes include
// ReadOnlyMany or ReadWriteMany, and the scheduler gives a ReadWriteOncePod volume to one pod in the cluster. A
// second pod on another node waits in "Multi-Attach error" (or Pending) for as long as the first one runs.

// accessModesOf are the claim's effective access modes: those of the bound volume (status) once bound, else the
// requested ones.
func accessModesOf(claim *corev1.PersistentVolumeClaim) []corev1.PersistentVolumeAccessMode {
	if len(claim.Status.AccessModes) > 0 {
		return claim.Status.AccessModes
	}
	return claim.Spec.AccessModes
}

// singleAttach: the claim's volume can be used by one node (ReadWriteOnce) or one pod (ReadWriteOncePod) at a
// time. A claim without access modes is left to the cluster (as the attach/detach controller does).
func singleAttach(claim *corev1.PersistentVolumeClaim) bool {
	modes := accessModesOf(claim)
	if len(modes) == 0 {
		return false
	}
	return !slices.Contains(modes, corev1.ReadOnlyMany) && !slices.Contains(modes, corev1.ReadWriteMany)
}

// claimAccessProblem refuses more than one replica on a single-attach claim: the extra pods could never start, and
// the site would look like a rollout that never ends. The caller leaves the Deployment as it is (at most the one
// replica it ran), so what serves keeps serving.
func claimAccessProblem(site *v1alpha1.StaticSite, claim *corev1.PersistentVolumeClaim) *problem {
	replicas := replicasOf(site)
	if replicas <= 1 || !singleAttach(claim) {
		return nil
	}
	return &problem{Reason: v1alpha1.ReasonClaimAccessMode, Message: fmt.Sprintf(
		"PersistentVolumeClaim %q has access modes %v: its volume can be mounted by one node at a time (ReadWriteOncePod: one pod), "+
			"so %d replicas cannot run; use a ReadOnlyMany or ReadWriteMany claim, or replicas: 1 (the Deployment is left unchanged)",
		claim.Name, accessModesOf(claim), replicas)}
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
