package staticsite

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// namespaceNameLabel is the label the API server sets on every namespace to its own name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// DesiredNetworkPolicy is the site's NetworkPolicy, or nil without spec.networkPolicy. It selects the site's pods
// and restricts ingress only (the server makes no connections of its own):
//   - the serving ports (http, and https with spec.tls) from spec.networkPolicy.servingFrom, or from anywhere;
//   - the admin port (/readyz, /metrics, /content) from the operator's namespace (its scrapes make Pinned,
//     status.content and the autoscaler work) and from the monitoring namespaces (Prometheus).
//
// The kubelet's probes come from the node, which NetworkPolicy implementations let through to the node's own
// pods. operatorNamespace "" (an operator run outside the cluster) leaves the operator's rule out.
func DesiredNetworkPolicy(site *v1alpha1.StaticSite, operatorNamespace string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	np := site.Spec.NetworkPolicy
	if np == nil {
		return nil
	}
	port := func(name string) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
		return networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromString(name))
	}
	serving := networkingv1ac.NetworkPolicyIngressRule().WithPorts(port(v1alpha1.ServerPortName))
	if site.Spec.TLS != nil {
		serving.WithPorts(port(v1alpha1.HTTPSPortName))
	}
	for i := range np.ServingFrom {
		serving.WithFrom(viaJSON[networkingv1ac.NetworkPolicyPeerApplyConfiguration](&np.ServingFrom[i]))
	}
	admin := networkingv1ac.NetworkPolicyIngressRule().WithPorts(port(v1alpha1.AdminPortName))
	if operatorNamespace != "" {
		admin.WithFrom(networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(
			metav1ac.LabelSelector().WithMatchLabels(map[string]string{namespaceNameLabel: operatorNamespace})))
	}
	monitoring := &metav1.LabelSelector{MatchLabels: map[string]string{namespaceNameLabel: v1alpha1.DefaultMonitoringNamespace}}
	if np.MonitoringNamespaceSelector != nil {
		monitoring = np.MonitoringNamespaceSelector
	}
	admin.WithFrom(networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(viaJSON[metav1ac.LabelSelectorApplyConfiguration](monitoring)))
	return networkingv1ac.NetworkPolicy(site.Name, site.Namespace).
		WithLabels(objectLabels(site)).
		WithOwnerReferences(ownerReference(site)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(site))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(serving, admin))
}

// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete

// reconcileNetworkPolicy applies the NetworkPolicy of spec.networkPolicy, or deletes the one the site made. A
// refusal or a foreign object of that name makes the site Stalled, like the other children: a policy the user
// asked for and does not have is a security problem, not a detail.
func (r *Reconciler) reconcileNetworkPolicy(ctx context.Context, st *state) error {
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

func extractNetworkPolicy(o client.Object) (any, error) {
	return networkingv1ac.ExtractNetworkPolicy(o.(*networkingv1.NetworkPolicy), FieldOwner)
}
