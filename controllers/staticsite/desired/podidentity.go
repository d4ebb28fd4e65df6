package desired

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// withPodIdentity sets the pod's pull secrets, service account and token mount from spec.podTemplate. Unset
// fields are left out of the apply configuration (not set to empty values), so a site that does not use them
// owns no such fields and its pod template is what it was before these fields existed: no roll on upgrade.
func withPodIdentity(spec *corev1ac.PodSpecApplyConfiguration, id v1alpha1.PodIdentity) {
	// The token stays unmounted unless asked for: the server never calls the Kubernetes API.
	spec.WithAutomountServiceAccountToken(id.AutomountServiceAccountToken != nil && *id.AutomountServiceAccountToken)
	if id.ServiceAccountName != "" {
		// The API server copies serviceAccountName into the deprecated serviceAccount field, and reads the old field
		// back when the new one is empty: unless the operator owns both, removing the name from the spec would leave
		// the pods on the old account. Owning both, an apply without them removes both.
		spec.WithServiceAccountName(id.ServiceAccountName).WithDeprecatedServiceAccount(id.ServiceAccountName)
	}
	// In the spec's order, which the API keeps: the kubelet tries them in turn. They also cover a content image
	// and an image volume's reference, both pulled by the kubelet with the pod's secrets.
	for _, s := range id.ImagePullSecrets {
		spec.WithImagePullSecrets(corev1ac.LocalObjectReference().WithName(s.Name))
	}
}
