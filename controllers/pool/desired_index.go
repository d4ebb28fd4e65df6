package pool

import (
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// indexConfigMap is the ConfigMap of index shard i: its rendered bytes (poolindex.Render, canonical, so an
// unchanged shard is an unchanged object and no write) under poolplacement.IndexKey(i).
func indexConfigMap(pool *v1alpha1.StaticSitePool, i int, rendered []byte) *corev1ac.ConfigMapApplyConfiguration {
	return corev1ac.ConfigMap(poolplacement.IndexName(pool.Name, i), pool.Spec.Namespace).
		WithLabels(objectLabels(pool.Name, componentIndex)).
		WithOwnerReferences(ownerReference(pool)).
		WithData(map[string]string{poolplacement.IndexKey(i): string(rendered)})
}

// shardsOf is the number of index shards of pool: spec.indexShards (immutable), poolindex.DefaultShards unset.
func shardsOf(pool *v1alpha1.StaticSitePool) int {
	if n := pool.Spec.IndexShards; n != nil && *n > 0 {
		return int(*n)
	}
	return poolindex.DefaultShards
}
