package pool

import (
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// releasable is the release rule of a held pod (internal/poolplacement/drain.go, step 5), from the pool sites'
// EndpointSlices alone: p may be released once no slice may send it a new connection, that is once every slice
// that lists it lists it not ready beside a ready endpoint of another pod (the proxies send a Service's connections
// to a serving, terminating endpoint only when it has no ready one), or no slice lists it at all. listing is how
// many slices still list it. A slice that lists it ready has not been rewritten since its deletion; one that lists
// it alone (not ready) is a pool of one pod whose replacement is not ready yet: it serves that site's every
// request, and waits.
func releasable(p *corev1.Pod, slices []discoveryv1.EndpointSlice) (ok bool, listing int) {
	ok = true
	for i := range slices {
		listed, ready, otherReady := false, false, false
		for _, e := range slices[i].Endpoints {
			switch {
			case isPod(e, p.Namespace, p.Name):
				listed, ready = true, ready || endpointReady(e)
			case endpointReady(e):
				otherReady = true
			}
		}
		if listed {
			listing++
			ok = ok && !ready && otherReady
		}
	}
	return ok, listing
}

// isPod says whether e is the pod ns/name's.
func isPod(e discoveryv1.Endpoint, ns, name string) bool {
	t := e.TargetRef
	return t != nil && t.Kind == "Pod" && t.Namespace == ns && t.Name == name
}

// endpointReady reads e's ready condition as the API says to: nil is ready.
func endpointReady(e discoveryv1.Endpoint) bool {
	return e.Conditions.Ready == nil || *e.Conditions.Ready
}
