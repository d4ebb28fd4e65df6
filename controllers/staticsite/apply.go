package staticsite

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// applyResult says what an apply did, for events and logs.
type applyResult string

const (
	applyCreated   applyResult = "Created"
	applyUpdated   applyResult = "Updated"
	applyUnchanged applyResult = "Unchanged"
)

// notOwnedError says an object with a child's name exists and is not controlled by the site. The operator never
// takes such an object over: force-applying would make it the site's, and the garbage collector would delete it
// with the site.
type notOwnedError struct {
	kind  string
	key   types.NamespacedName
	owner string // the controller reference it has, or "" for none
}

func (e *notOwnedError) Error() string {
	by := "it has no controller"
	if e.owner != "" {
		by = "its controller is " + e.owner
	}
	return fmt.Sprintf("%s %s exists and is not owned by this StaticSite (%s): the operator does not take over objects it did not create; delete or rename it",
		e.kind, e.key, by)
}

// applyChild server-side applies desired as FieldOwner, forcing ownership of conflicting fields (that is how drift
// made by other managers is corrected). It first reads the live object into live and compares the fields our
// manager owns with desired: when they are semantically equal (quantities by value), no request is sent.
//
// The manager's cache only holds objects carrying the operator's managed-by label, so "not in the cache" does not
// mean "does not exist": before creating, direct reads around the cache, and an object found there that the site
// does not control is a notOwnedError, as is a cached one (someone copied the labels).
func applyChild(ctx context.Context, c client.Client, direct client.Reader, site metav1.Object, kind string, live client.Object,
	desired runtime.ApplyConfiguration, key types.NamespacedName, extract func(client.Object) (any, error)) (applyResult, error) {
	existed := true
	if err := c.Get(ctx, key, live); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", err
		}
		if err := direct.Get(ctx, key, live); err != nil {
			if !apierrors.IsNotFound(err) {
				return "", err
			}
			existed = false
		}
	}
	if existed && !metav1.IsControlledBy(live, site) {
		owner := ""
		if ref := metav1.GetControllerOf(live); ref != nil {
			owner = ref.Kind + " " + ref.Name
		}
		return "", &notOwnedError{kind: kind, key: key, owner: owner}
	}
	if existed {
		owned, err := extract(live)
		if err != nil {
			return "", fmt.Errorf("extract fields of %s owned by %s: %w", key, sitechild.FieldOwner, err)
		}
		if equality.Semantic.DeepEqual(owned, desired) {
			return applyUnchanged, nil
		}
	}
	if err := c.Apply(ctx, desired, client.FieldOwner(sitechild.FieldOwner), client.ForceOwnership); err != nil {
		return "", err
	}
	if existed {
		return applyUpdated, nil
	}
	return applyCreated, nil
}

func extractDeployment(o client.Object) (any, error) {
	return appsv1ac.ExtractDeployment(o.(*appsv1.Deployment), sitechild.FieldOwner)
}

func extractService(o client.Object) (any, error) {
	return corev1ac.ExtractService(o.(*corev1.Service), sitechild.FieldOwner)
}

func extractPodDisruptionBudget(o client.Object) (any, error) {
	return policyv1ac.ExtractPodDisruptionBudget(o.(*policyv1.PodDisruptionBudget), sitechild.FieldOwner)
}
