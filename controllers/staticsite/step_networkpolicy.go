package staticsite

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete

// reconcileNetworkPolicy applies the NetworkPolicy of spec.networkPolicy, or deletes the one the site made. A
// refusal or a foreign object of that name makes the site Stalled, like the other children: a policy the user
// asked for and does not have is a security problem, not a detail.
func (r *Reconciler) reconcileNetworkPolicy(ctx context.Context, st *observation) error {
	site := st.site
	desired := DesiredNetworkPolicy(site, r.OperatorNamespace)
	if desired == nil {
		return r.deleteOwned(ctx, r.Client, site, "NetworkPolicy", &networkingv1.NetworkPolicy{}, "spec.networkPolicy is unset")
	}
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "NetworkPolicy", &networkingv1.NetworkPolicy{}, desired,
		types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, extractNetworkPolicy)
	if err != nil {
		return childRefused(st, "NetworkPolicy", v1alpha1.ReasonNetworkPolicyRejected, err)
	}
	r.recordApply(site, "NetworkPolicy", res)
	return nil
}
