// Package v1alpha1 holds the Hyperstatic API: StaticSite and Benchmark.
// +kubebuilder:object:generate=true
// +groupName=hyperstatic.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every Hyperstatic kind.
	GroupVersion = schema.GroupVersion{Group: "hyperstatic.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Hyperstatic kinds with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Hyperstatic kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
