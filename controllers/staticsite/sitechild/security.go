package sitechild

import (
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// RestrictedContainer is the security context of every container the operator runs (a site's server, its login
// agent, its Git puller and fetcher, a pool's containers): non-root, no privilege escalation, read-only root, no
// capabilities, RuntimeDefault seccomp — the restricted Pod Security Standard.
func RestrictedContainer() *corev1ac.SecurityContextApplyConfiguration {
	return corev1ac.SecurityContext().
		WithRunAsNonRoot(true).
		WithAllowPrivilegeEscalation(false).
		WithReadOnlyRootFilesystem(true).
		WithCapabilities(corev1ac.Capabilities().WithDrop("ALL")).
		WithSeccompProfile(corev1ac.SeccompProfile().WithType(corev1.SeccompProfileTypeRuntimeDefault))
}
