package desired

import (
	"encoding/json"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Children of kinds whose Go types are not compiled in (the Prometheus Operator's PodMonitor, cert-manager's
// Certificate): built as unstructured objects, in the shape an apply request takes.

// unstructuredChild is the site's child of kind gvk, named like the site, with labels, the site as its
// controlling owner, and spec.
func unstructuredChild(site *v1alpha1.StaticSite, gvk schema.GroupVersionKind, labels map[string]string, spec map[string]any) *unstructured.Unstructured {
	controller, block := true, true
	return normalized(map[string]any{
		"apiVersion": gvk.GroupVersion().String(),
		"kind":       gvk.Kind,
		"metadata": map[string]any{
			"name":      site.Name,
			"namespace": site.Namespace,
			"labels":    labels,
			"ownerReferences": []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "StaticSite",
				Name: site.Name, UID: site.UID, Controller: &controller, BlockOwnerDeletion: &block}},
		},
		"spec": spec,
	})
}

// normalized round-trips an object through JSON, so it compares equal to one read back from the API server
// (typed values become maps, integers int64, empty fields go).
func normalized(obj map[string]any) *unstructured.Unstructured {
	b, err := json.Marshal(obj)
	if err != nil {
		panic(err) // built from plain maps and API types: cannot fail
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(b); err != nil {
		panic(err)
	}
	return u
}
