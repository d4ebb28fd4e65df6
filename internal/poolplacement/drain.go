package poolplacement

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// How a pool pod leaves the pool without losing a request (the contract between the pool controller, which
// scales the server Deployment down, and the site controller, which writes each pool site's EndpointSlice).
//
// Every pool site has an EndpointSlice of its own listing the pool's ready pods, or while it has none the held
// pods of step 4 (controllers/staticsite/desired: PoolEndpointsOf), rewritten by that site's pass. A pool pod's end
// therefore reaches the proxies only once every site's pass ran: N writes for N sites, measured at 27.6 s for the
// few hundred sites of e2e scenario 20 while the pod stopped accepting after its 5 s drain delay (requests failed).
// No fixed delay holds at every size, so a scale-down goes in order instead:
//
//  1. The pool controller picks the pods to remove and marks them: AnnotationDraining (when the drain began, RFC
//  3339. and AnnotationDeletionCost (the lowest cost, so the ReplicaSet controller deletes exactly these pods
//     when the replicas go down: it removes the pods of lowest cost first among pods equally ready).
//  2. Each site's pass leaves a marked pod out of its slice (Draining below), whatever else the pool has; a
//     change of the mark wakes every site of the pool.
//  3. The pool controller lowers the Deployment's replicas only once no slice of the pool lists a marked pod (or,
//     as a last resort, once the drain has lasted DrainTimeout: a site whose slice cannot be written must not hold
//     the pool at a size it no longer needs forever). The pod then terminates as any pod does: its drain delay
//     covers the proxies' own lag and the connections it still holds.
//
// A mark whose scale-down was cancelled (the traffic came back before the replicas went down) or whose pod the
// ReplicaSet controller spared is taken off again, and the pod is back in every slice.
//
// Pods end for other reasons too, and the pool is not asked first: a rollout of the pool's pods (the Deployment
// controller picks which old pod goes), an eviction (a node drained), a deletion by hand. Their sites' slices
// drop such a pod only once N passes ran, as above, so a pool pod holds its drain instead of timing it:
//
//  4. A pool server pod runs with --drain-hold DrainHold: after its SIGTERM it keeps serving until the pool
//     controller releases its drain (POST /drain/release on its admin port) or DrainHold passed; only then does
//     its drain delay run (the proxies' own lag), then its shutdown. Its termination grace covers the hold. While
//     the pool has no ready pod to list (not terminating, not marked), each site's pass lists the held pods that
//     were ready when deleted (ServingHeld) as serving, terminating, not ready endpoints, which kube-proxy sends
//     a Service's connections to only when it has no ready one (KEP-1669, "ProxyTerminatingEndpoints"). So a
//     pool of ONE pod that is evicted or deleted goes on serving every site from that pod until its replacement
//     is ready (the Deployment makes it at once); before, every site's slice was empty until then and every
//     request failed. Beside a ready pod a held pod is not listed: it would change nothing the proxies do and
//     cost every site one more slice write per pod that ends.
//  5. The pool controller releases a terminating pod once no slice of the pool may send it a new connection:
//     every slice that lists it lists it not ready beside a ready endpoint of another pod, or none lists it (the
//     marked pods of 1-3 included: they terminate out of every slice already). For a pool of one pod that is
//     once every site's slice lists the ready replacement. It marks the pod AnnotationDrainReleased so it is
//     released once (and out of every slice: a released pod is no longer held). A release the pod refuses (its
//     SIGTERM not come yet) or cannot be sent is tried again. A pool deleted releases its pods at once. A
//     replacement not ready within DrainHold is not waited for: the held pod stops then, as it would unreleased.
//
// The release is unauthenticated: all it can do is end a drain already begun as a pod without a hold ends it.
const (
	// AnnotationDraining on a pool server pod: the pool controller is removing it (the value: when it began).
	AnnotationDraining = "hyperstatic.dev/draining"
	// AnnotationDeletionCost is Kubernetes' ReplicaSet pod-deletion-cost annotation.
	AnnotationDeletionCost = "controller.kubernetes.io/pod-deletion-cost"
	// DrainingDeletionCost is the cost a draining pod is given: the lowest there is.
	DrainingDeletionCost = "-2147483648"
	// DrainTimeout bounds how long a scale-down waits for the slices.
	DrainTimeout = 5 * time.Minute
	// DrainHold bounds how long a terminating pool pod waits for its release (its --drain-hold): as long as a
	// scale-down waits for the slices, for the same reason.
	DrainHold = DrainTimeout
	// AnnotationDrainReleased on a terminating pool server pod: its held drain was released (the value: when).
	AnnotationDrainReleased = "hyperstatic.dev/drain-released"
)

// Draining reports whether p is marked for removal: no slice should list it.
func Draining(p *corev1.Pod) bool {
	_, ok := p.Annotations[AnnotationDraining]
	return ok
}

// DrainingSince is when p's drain began; ok is false when p is not marked or its mark is not a time (then the
// drain counts as begun long ago: a mark the operator did not write must not hold a scale-down).
func DrainingSince(p *corev1.Pod) (since time.Time, ok bool) {
	v, marked := p.Annotations[AnnotationDraining]
	if !marked {
		return time.Time{}, false
	}
	t, err := time.Parse(time.RFC3339, v)
	return t, err == nil
}
