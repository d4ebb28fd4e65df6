package managercache

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// KeepOwnManagedFields is a cache transform that keeps, of each object's managed fields, only the entries of the
// given field managers (the operator's own): the controllers' apply guards read those (appsv1ac.ExtractDeployment
// and the like, managedfields.ExtractInto) to tell what the operator last applied, and nothing in the operator
// reads anyone else's. The others' entries are most of an object's metadata in the cache: kube-controller-manager's
// of every pod's spec, the kubelet's (kwok's) of its status, the Deployment controller's of a Deployment's status.
// Objects are entered into the cache as transformed, so every Get and List returns the trimmed list.
//
// What the trimmed list must never do is go back to the API server: an Update of the main resource that carries a
// non-empty managedFields replaces the live object's (the server takes the list as the client's wish), and would
// drop the other managers' entries. Apply requests carry none, patches computed against the cached object
// (client.MergeFrom) leave an unchanged list out, and subresource updates ignore it; an Update of a cached
// object must clear ManagedFields first (nil: the server keeps the live list).
func KeepOwnManagedFields(managers ...string) toolscache.TransformFunc {
	return func(in any) (any, error) {
		// Not an object (a tombstone of a missed delete): as it is, as TransformStripManagedFields does.
		obj, err := meta.Accessor(in)
		if err != nil {
			return in, nil
		}
		fields := obj.GetManagedFields()
		var kept []metav1.ManagedFieldsEntry // a new array: the decoded one would keep the others' entries alive
		for _, e := range fields {
			if slices.Contains(managers, e.Manager) {
				kept = append(kept, e)
			}
		}
		if len(kept) < len(fields) {
			obj.SetManagedFields(kept)
		}
		return in, nil
	}
}
