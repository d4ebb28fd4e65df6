package v1alpha1

import "k8s.io/apimachinery/pkg/api/resource"

// DefaultCPU is spec.cpu when it is unset: one whole CPU, exclusive and pinned under the static CPU manager. The
// CRD schema applies it too (+kubebuilder:default on StaticSiteSpec.CPU); code reads it through CPUOrDefault so
// objects that never went through the API server (unit tests, objects stored before the default) agree.
const DefaultCPU = "1"

// CPUOrDefault returns spec.cpu, or DefaultCPU when it is unset.
func (s *StaticSite) CPUOrDefault() resource.Quantity {
	if s.Spec.CPU == nil {
		return resource.MustParse(DefaultCPU)
	}
	return *s.Spec.CPU
}
