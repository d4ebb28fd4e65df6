package pool

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/internal/poolindex"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
)

// reconcileIndex renders every shard of the index, empty ones too (the server pods' projected volume names every
// shard's ConfigMap), and applies each one's ConfigMap. An admitted site whose mirrors are not all written yet is
// left out (o.unmirrored): in the index, the fetcher would report its content missing. poolindex.Render is canonical and the apply compares the
// owned fields first, so only the shards whose sites changed are written: one site's change costs one write.
func (r *Reconciler) reconcileIndex(ctx context.Context, o *observation) error {
	n := shardsOf(o.pool)
	shards := make([][]poolindex.Site, n)
	for _, a := range o.admitted {
		if o.unmirrored[a.entry.ID] {
			continue // its content is not all in the pool namespace yet (step_mirrors.go)
		}
		i := poolindex.ShardOf(a.entry.ID, n)
		shards[i] = append(shards[i], a.entry)
	}
	all := make([][]byte, n)
	for i := range n {
		rendered, err := poolindex.Render(i, shards[i])
		if err != nil {
			return fmt.Errorf("render index shard %d: %w", i, err)
		}
		all[i] = rendered
		key := types.NamespacedName{Namespace: o.pool.Spec.Namespace, Name: poolplacement.IndexName(o.pool.Name, i)}
		res, err := r.applyOrReject(ctx, o, "ConfigMap", &corev1.ConfigMap{}, indexConfigMap(o.pool, i, rendered), key, extractConfigMap)
		if err != nil {
			return err
		}
		if res != applyUnchanged {
			o.shardsWritten = append(o.shardsWritten, i)
		}
	}
	o.indexRevision = indexRevision(all)
	return nil
}

// indexRevision names a whole index by its shards' rendered bytes, in order (status.indexRevision).
func indexRevision(shards [][]byte) string {
	sum := sha256.New()
	for _, s := range shards {
		sum.Write(s)
		sum.Write([]byte{'\n'})
	}
	return hex.EncodeToString(sum.Sum(nil)[:8])
}
