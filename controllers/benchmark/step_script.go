package benchmark

import (
	"context"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// ensureScript creates the script ConfigMap from the files resolveTarget rendered. It is created once and is
// immutable: it is never updated, and goes with the Benchmark (owner reference).
//
// Observes: nothing new; it records the ConfigMap it created.
func (r *Reconciler) ensureScript(ctx context.Context, b *v1alpha1.Benchmark, o *observation) error {
	if o.script != nil {
		return nil
	}
	want := desiredScriptConfigMap(b, o.files)
	if err := r.Create(ctx, want); err != nil {
		return err // AlreadyExists is a race with another pass: the retry reads it back
	}
	o.script = want
	return nil
}
