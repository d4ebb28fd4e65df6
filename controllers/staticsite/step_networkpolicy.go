package staticsite

import (
	"context"

	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/types"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete

// reconcileNetworkPolicy applies the NetworkPolicy of spec.networkPolicy, or deletes the one the site made. A
// refusal or a foreign object of that name makes the site Stalled, like the other children: a policy the user
// asked for and does not have is a security problem, not a detail.
func (r *Reconciler) reconcileNetworkPolicy(ctx context.Context, st *observation) error {
	site := st.site
	want := desired.NetworkPolicy(site, r.OperatorNamespace)
	if want == nil {
		return r.deleteOwned(ctx, r.Client, site, "NetworkPolicy", &networkingv1.NetworkPolicy{}, "spec.networkPolicy is unset")
	}
	res, err := applyChild(ctx, r.Client, r.directReader(), site, "NetworkPolicy", &networkingv1.NetworkPolicy{}, want,
		types.NamespacedName{Namespace: site.Namespace, Name: site.Name}, extractNetworkPolicy)
	if err != nil {
		return childRefused(st, "NetworkPolicy", v1alpha1.ReasonNetworkPolicyRejected, err)
	}
	r.recordApply(site, "NetworkPolicy", res)
	return nil
}

func extractNetworkPolicy(o client.Object) (any, error) {
	return networkingv1ac.ExtractNetworkPolicy(o.(*networkingv1.NetworkPolicy), sitechild.FieldOwner)
}
