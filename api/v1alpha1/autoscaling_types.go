package v1alpha1

// Placeholder: the autoscaling work fills these in (spec.autoscaling and status.autoscaling of a StaticSite).

// AutoscalingSpec configures the operator's requests-per-second autoscaler for a StaticSite.
type AutoscalingSpec struct{}

// AutoscalingStatus is what the autoscaler last observed and decided.
type AutoscalingStatus struct{}
