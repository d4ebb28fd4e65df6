package desired

import (
	"net/netip"
	"slices"
	"strings"

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

// PoolEndpoints are the endpoints of a pool site's EndpointSlice: pool server pods' addresses of one IP family (an
// EndpointSlice holds one), sorted, so the same pods give the same slice.
type PoolEndpoints struct {
	AddressType discoveryv1.AddressType
	Pods        []PoolEndpoint
}

// PoolEndpoint is one pool pod with its conditions, in the EndpointSlice API's meaning: a ready pod is ready,
// serving and not terminating; a terminating pod that holds its drain is serving and terminating, not ready.
type PoolEndpoint struct {
	Address, Pod, Namespace, Node string
	Ready, Serving, Terminating   bool
}

// PoolEndpointsOf picks the pool pods a site's slice lists: the ready pods with an address that are neither
// terminating nor draining (the pool controller is removing them: poolplacement.AnnotationDraining); when there is
// none, the terminating pods that hold their drain and were serving (poolplacement.ServingHeld), as serving,
// terminating endpoints. The IP family is the first picked pod's primary address's (IPv4 when there is none), and
// a dual-stack pod contributes its address of that family.
//
// A held pod is listed only while no ready pod is: then it is all that can serve the site (a pool of one pod
// evicted or deleted, until its replacement is ready), and kube-proxy sends a Service's connections to its
// serving, terminating endpoints exactly when it has no ready one (KEP-1669). Beside a ready pod, listing it (not
// ready) would change nothing the proxies do, and would cost every site of the pool one more slice write per pod
// that ends (listed terminating, then dropped once released), N writes where the pool has N sites; its release
// (internal/poolplacement/drain.go, step 5) comes at the same moment either way: once the slices no longer list
// it ready. A draining pod stays out even then: it is removed only once every slice dropped it, while the pool
// keeps other pods.
func PoolEndpointsOf(pods []corev1.Pod) PoolEndpoints {
	out := endpointsOf(pods, func(p *corev1.Pod) bool {
		return p.DeletionTimestamp.IsZero() && !poolplacement.Draining(p) && podReady(p)
	}, PoolEndpoint{Ready: true, Serving: true})
	if len(out.Pods) > 0 {
		return out
	}
	return endpointsOf(pods, func(p *corev1.Pod) bool {
		return !poolplacement.Draining(p) && poolplacement.ServingHeld(p)
	}, PoolEndpoint{Serving: true, Terminating: true})
}

// endpointsOf lists the pods that pick keeps, each with the conditions of with, sorted by address.
func endpointsOf(pods []corev1.Pod, pick func(*corev1.Pod) bool, with PoolEndpoint) PoolEndpoints {
	out := PoolEndpoints{AddressType: discoveryv1.AddressTypeIPv4}
	family := ""
	for i := range pods {
		p := &pods[i]
		if !pick(p) {
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
				e := with
				e.Address, e.Pod, e.Namespace, e.Node = a.String(), p.Name, p.Namespace, p.Spec.NodeName
				out.Pods = append(out.Pods, e)
				break
			}
		}
	}
	slices.SortFunc(out.Pods, func(a, b PoolEndpoint) int {
		if c := strings.Compare(a.Address, b.Address); c != 0 {
			return c
		}
		return strings.Compare(a.Pod, b.Pod)
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
// pool's server pods PoolEndpointsOf picked, with their conditions, behind the site's selector-less Service
// (PoolService). Its ports are named as the Service's, so the proxies match them, and go to the pool pods' http
// port (v1alpha1.ServerPort).
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
			WithConditions(discoveryv1ac.EndpointConditions().WithReady(e.Ready).WithServing(e.Serving).WithTerminating(e.Terminating)).
			WithTargetRef(corev1ac.ObjectReference().WithKind("Pod").WithNamespace(e.Namespace).WithName(e.Pod))
		if e.Node != "" {
			ep.WithNodeName(e.Node)
		}
		s.WithEndpoints(ep)
	}
	return s
}
