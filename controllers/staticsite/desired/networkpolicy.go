package desired

import (
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// namespaceNameLabel is the label the API server sets on every namespace to its own name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// NetworkPolicy is the site's NetworkPolicy, or nil without spec.networkPolicy. It selects the site's pods
// and restricts ingress only (the server makes no connections of its own):
//   - the serving ports (http, and https with spec.tls) from spec.networkPolicy.servingFrom, or from anywhere;
//   - the admin port (/readyz, /metrics, /content), and for Git content the puller's port (/revision: which commit
//     the pod serves), from the operator's namespace (its scrapes make Pinned, status.content, the autoscaler and
//     status.content.revision work) and from the monitoring namespaces (Prometheus).
//
// The pullers' connections to the fetcher are egress, which this policy leaves open; the fetcher's own
// NetworkPolicy (gitcontent.DesiredNetworkPolicy) admits them.
//
// The kubelet's probes come from the node, which NetworkPolicy implementations let through to the node's own
// pods. operatorNamespace "" (an operator run outside the cluster) leaves the operator's rule out.
func NetworkPolicy(site *v1alpha1.StaticSite, operatorNamespace string) *networkingv1ac.NetworkPolicyApplyConfiguration {
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
	withHTTP3Policy(site, serving) // http3.go
	if sitevalue.UsesSSO(site) {
		serving.WithPorts(port(v1alpha1.SSOPortName)) // the login agent: browsers reach it like the site
	}
	for i := range np.ServingFrom {
		serving.WithFrom(viaJSON[networkingv1ac.NetworkPolicyPeerApplyConfiguration](&np.ServingFrom[i]))
	}
	admin := networkingv1ac.NetworkPolicyIngressRule().WithPorts(port(v1alpha1.AdminPortName))
	if site.Spec.Content.Git != nil {
		admin.WithPorts(port(v1alpha1.ContentPortName)) // the puller's /revision (and /metrics), read like the admin port
	}
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
		WithLabels(sitechild.ObjectLabels(site)).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(sitechild.SelectorLabels(site))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(serving, admin))
}
