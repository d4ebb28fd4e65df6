package staticsite

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// applyResult says what an apply did, for events and logs.
type applyResult string

const (
	applyCreated   applyResult = "Created"
	applyUpdated   applyResult = "Updated"
	applyUnchanged applyResult = "Unchanged"
)

// applyChild server-side applies desired as FieldOwner, forcing ownership of conflicting fields (that is how drift
// made by other managers is corrected). It first reads the live object into live and compares the fields our
// manager owns with desired: when they are semantically equal (quantities by value), no request is sent.
func applyChild(ctx context.Context, c client.Client, live client.Object, desired runtime.ApplyConfiguration,
	key types.NamespacedName, extract func(client.Object) (any, error)) (applyResult, error) {
	existed := true
	if err := c.Get(ctx, key, live); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", err
		}
		existed = false
	}
	if existed {
		owned, err := extract(live)
		if err != nil {
			return "", fmt.Errorf("extract fields of %s owned by %s: %w", key, FieldOwner, err)
		}
		if equality.Semantic.DeepEqual(owned, desired) {
			return applyUnchanged, nil
		}
	}
	if err := c.Apply(ctx, desired, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return "", err
	}
	if existed {
		return applyUpdated, nil
	}
	return applyCreated, nil
}

func extractDeployment(o client.Object) (any, error) {
	return appsv1ac.ExtractDeployment(o.(*appsv1.Deployment), FieldOwner)
}

func extractService(o client.Object) (any, error) {
	return corev1ac.ExtractService(o.(*corev1.Service), FieldOwner)
}

func extractPodDisruptionBudget(o client.Object) (any, error) {
	return policyv1ac.ExtractPodDisruptionBudget(o.(*policyv1.PodDisruptionBudget), FieldOwner)
}
