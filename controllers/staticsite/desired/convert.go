package desired

import (
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// The user's scheduling overrides arrive as typed API structs; server-side apply wants apply configurations. Both
// share one JSON form, so a JSON round trip converts them without hand-copying every nested field.
func viaJSON[T any](in any) *T {
	out := new(T)
	b, err := json.Marshal(in)
	if err != nil {
		panic(err) // API structs always marshal
	}
	if err := json.Unmarshal(b, out); err != nil {
		panic(err)
	}
	return out
}

func affinityApplyConfiguration(a *corev1.Affinity) *corev1ac.AffinityApplyConfiguration {
	return viaJSON[corev1ac.AffinityApplyConfiguration](a)
}

func topologySpreadApplyConfiguration(t *corev1.TopologySpreadConstraint) *corev1ac.TopologySpreadConstraintApplyConfiguration {
	return viaJSON[corev1ac.TopologySpreadConstraintApplyConfiguration](t)
}
