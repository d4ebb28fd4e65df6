package desired

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	discoveryv1ac "k8s.io/client-go/applyconfigurations/discovery/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// EndpointSliceManagedBy is the endpointslice.kubernetes.io/managed-by value of a pool site's EndpointSlice: the
// cluster's EndpointSlice controller leaves slices it does not manage alone, and it tells the two apart when the
// site moves back to its own pods (its Service has a selector again and the controller's slices appear).
const EndpointSliceManagedBy = v1alpha1.ManagedByValue

// PoolEndpoints are the endpoints of a pool site's EndpointSlice: the pool's ready server pods' addresses of one
// IP family (an EndpointSlice holds one), sorted, so the same pods give the same slice.
type PoolEndpoints struct {
	AddressType discoveryv1.AddressType
	Pods        []PoolEndpoint
}

// PoolEndpoint is one ready pool pod.
type PoolEndpoint struct {
	Address, Pod, Namespace, Node string
}

// PoolEndpointsOf picks the ready pool pods with an address that are neither terminating nor draining (the pool
// controller is removing them: poolplacement.AnnotationDraining): the IP family is the first such pod's primary
// address's (IPv4 when there is none), and a dual-stack pod contributes its address of that family.
func PoolEndpointsOf(pods []corev1.Pod) PoolEndpoints {
	out := PoolEndpoints{AddressType: discoveryv1.AddressTypeIPv4}
	family := ""
	for i := range pods {
		p := &pods[i]
		if !p.DeletionTimestamp.IsZero() || poolplacement.Draining(p) || !podReady(p) {
			continue
		}
		for _, ip := range podIPs(p) {
			a, err := netip.ParseAddr(ip)
			if err != nil {
				continue
			}
			f := "4"
			if a.Is6() && !a.Is4In6() {
				f = "6"
			}
			if family == "" {
				family = f
				if f == "6" {
					out.AddressType = discoveryv1.AddressTypeIPv6
				}
			}
			if f == family {
				out.Pods = append(out.Pods, PoolEndpoint{Address: a.String(), Pod: p.Name, Namespace: p.Namespace, Node: p.Spec.NodeName})
				break
			}
		}
	}
	slices.SortFunc(out.Pods, func(a, b PoolEndpoint) int {
		if a.Address < b.Address {
			return -1
		}
		if a.Address > b.Address {
			return 1
		}
		return 0
	})
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func podIPs(p *corev1.Pod) []string {
	if len(p.Status.PodIPs) == 0 {
		if p.Status.PodIP == "" {
			return nil
		}
		return []string{p.Status.PodIP}
	}
	ips := make([]string, 0, len(p.Status.PodIPs))
	for _, ip := range p.Status.PodIPs {
		ips = append(ips, ip.IP)
	}
	return ips
}

// PoolEndpointSlice is a pool site's EndpointSlice (poolplacement.EndpointSliceName, in the site's namespace): the
// pool's ready server pods behind the site's selector-less Service (PoolService). Its ports are named as the
// Service's, so the proxies match them, and go to the pool pods' http port (v1alpha1.ServerPort).
func PoolEndpointSlice(site *v1alpha1.StaticSite, pool string, eps PoolEndpoints) *discoveryv1ac.EndpointSliceApplyConfiguration {
	labels := sitechild.ObjectLabels(site)
	labels[discoveryv1.LabelServiceName] = site.Name
	labels[discoveryv1.LabelManagedBy] = EndpointSliceManagedBy
	labels[poolplacement.LabelPool] = pool
	s := discoveryv1ac.EndpointSlice(poolplacement.EndpointSliceName(site), site.Namespace).
		WithLabels(labels).
		WithOwnerReferences(sitechild.OwnerReference(site)).
		WithAddressType(eps.AddressType).
		WithPorts(discoveryv1ac.EndpointPort().WithName(v1alpha1.ServerPortName).WithProtocol(corev1.ProtocolTCP).
			WithAppProtocol(plainAppProtocol(site)).WithPort(v1alpha1.ServerPort))
	for _, e := range eps.Pods {
		ep := discoveryv1ac.Endpoint().WithAddresses(e.Address).
			WithConditions(discoveryv1ac.EndpointConditions().WithReady(true).WithServing(true).WithTerminating(false)).
			WithTargetRef(corev1ac.ObjectReference().WithKind("Pod").WithNamespace(e.Namespace).WithName(e.Pod))
		if e.Node != "" {
			ep.WithNodeName(e.Node)
		}
		s.WithEndpoints(ep)
	}
	return s
}
