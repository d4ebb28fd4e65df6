package staticsite

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
)

// A claim's access mode decides how many server pods can mount it at once (desired.SingleAttach says why); the
// Deployment of a single-attach claim recreates instead of surging (package desired), and this refuses replicas.

// claimAccessProblem refuses more than one replica on a single-attach claim: the extra pods could never start, and
// the site would look like a rollout that never ends. The caller leaves the Deployment as it is (at most the one
// replica it ran), so what serves keeps serving.
func claimAccessProblem(site *v1alpha1.StaticSite, claim *corev1.PersistentVolumeClaim) *problem {
	replicas := desired.Replicas(site)
	if replicas <= 1 || !desired.SingleAttach(claim) {
		return nil
	}
	return &problem{Reason: v1alpha1.ReasonClaimAccessMode, Message: fmt.Sprintf(
		"PersistentVolumeClaim %q has access modes %v: its volume can be mounted by one node at a time (ReadWriteOncePod: one pod), "+
			"so %d replicas cannot run; use a ReadOnlyMany or ReadWriteMany claim, or replicas: 1 (the Deployment is left unchanged)",
		claim.Name, desired.AccessModes(claim), replicas)}
}
