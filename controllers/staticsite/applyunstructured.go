package staticsite

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/controller-runtime/pkg/client"
	smdtyped "sigs.k8s.io/structured-merge-diff/v6/typed"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// Applying an unstructured child (the PodMonitor of spec.monitoring, the Certificate of spec.tls.issuerRef): their
// projects' types are not compiled in, so the comparison with what the operator owns works without a schema.

// applyUnstructured is applyChild for an unstructured child: read it directly (the manager's client does not
// cache unstructured objects), refuse one the site does not control, compare the fields the operator's field
// manager owns with desired, and apply only when they differ. It returns the object as read before the apply
// (empty when there was none), whose status the apply does not change (the Certificate's, step_certificate.go).
func (r *Reconciler) applyUnstructured(ctx context.Context, site *v1alpha1.StaticSite, desired *unstructured.Unstructured) (applyResult, *unstructured.Unstructured, error) {
	key := types.NamespacedName{Namespace: desired.GetNamespace(), Name: desired.GetName()}
	live := &unstructured.Unstructured{}
	live.SetGroupVersionKind(desired.GroupVersionKind())
	existed := true
	if err := r.directReader().Get(ctx, key, live); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", nil, err
		}
		existed = false
	}
	if existed {
		if !metav1.IsControlledBy(live, site) {
			owner := ""
			if ref := metav1.GetControllerOf(live); ref != nil {
				owner = ref.Kind + " " + ref.Name
			}
			return "", nil, &notOwnedError{kind: desired.GetKind(), key: key, owner: owner}
		}
		owned, err := extractUnstructured(live)
		if err != nil {
			return "", nil, fmt.Errorf("extract fields of %s owned by %s: %w", key, sitechild.FieldOwner, err)
		}
		if equality.Semantic.DeepEqual(owned, desired.Object) {
			return applyUnchanged, live, nil
		}
	}
	if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(desired), client.FieldOwner(sitechild.FieldOwner), client.ForceOwnership); err != nil {
		return "", nil, err
	}
	if existed {
		return applyUpdated, live, nil
	}
	return applyCreated, live, nil
}

// extractUnstructured is the part of an object the operator's field manager owns, with its identity (apiVersion,
// kind, name, namespace), in the shape of an apply request. Without the CRD's schema the structure is deduced:
// lists are atomic, which is how the operator writes them anyway (whole).
func extractUnstructured(live *unstructured.Unstructured) (map[string]any, error) {
	out := map[string]any{}
	if err := managedfields.ExtractInto(live, smdtyped.DeducedParseableType, sitechild.FieldOwner, &out, ""); err != nil {
		return nil, err
	}
	out["apiVersion"], out["kind"] = live.GetAPIVersion(), live.GetKind()
	md, _ := out["metadata"].(map[string]any)
	if md == nil {
		md = map[string]any{}
		out["metadata"] = md
	}
	md["name"], md["namespace"] = live.GetName(), live.GetNamespace()
	fillAtomic(out, live.Object)
	return out, nil
}

// fillAtomic puts back the value of maps the CRD declares atomic (a LabelSelector): the operator owns such a map
// as a whole, and extraction with a deduced schema, which knows nothing of atomic maps, leaves null in its place.
// Lists need no help: the deduced schema treats every list as atomic and extracts it whole.
func fillAtomic(owned, live map[string]any) {
	for k, v := range owned {
		switch ov := v.(type) {
		case nil:
			if lv, ok := live[k]; ok {
				owned[k] = lv
			}
		case map[string]any:
			if lm, ok := live[k].(map[string]any); ok {
				fillAtomic(ov, lm)
			}
		}
	}
}
