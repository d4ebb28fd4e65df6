package v1alpha1

// PodIdentity is who a pod runs as and what it pulls with: shared by a StaticSite's server pods
// (spec.podTemplate) and a Benchmark's k6 pods (spec), so both APIs spell and validate it the same way.
// The operator only copies these names into the pod spec: the kubelet reads the pull Secrets (the operator needs
// no Secret access) and the ServiceAccount admission checks the account exists when a pod is created.
type PodIdentity struct {
	// imagePullSecrets name Secrets (type kubernetes.io/dockerconfigjson) in the same namespace that the kubelet
	// uses to pull the pod's images: the server or k6 image, a baked content image, and an image volume's
	// reference (the kubelet pulls image volumes with the pod's pull secrets too). Each name at most once.
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ImagePullSecrets []LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// serviceAccountName the pods run as (default: the namespace's "default" account). The account must exist:
	// otherwise the pods are refused at creation (see the owning Deployment's or Job's events and conditions).
	// Its token is still not mounted unless automountServiceAccountToken is true.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// automountServiceAccountToken mounts the service account's API token into the pods. Default false: neither
	// the server nor k6 talks to the Kubernetes API, so a token would only be something to steal. Set true only
	// for a sidecar or mutating webhook that needs it (e.g. a registry credential helper bound to the account).
	// +optional
	AutomountServiceAccountToken *bool `json:"automountServiceAccountToken,omitempty"`
}

// The API's own reference type rather than corev1's: its name is required (a listType=map key must be) and
// validated as a DNS-1123 subdomain, so a typo is refused at apply time with the field's path instead of
// surfacing later as a pod that cannot pull.

// LocalObjectReference names an object in the same namespace.
type LocalObjectReference struct {
	// name of the object.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Name string `json:"name"`
}
