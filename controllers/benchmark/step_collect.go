package benchmark

import (
	"context"
	"fmt"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
)

// collect runs once the run is over (the Job completed or failed, or the deadline passed): it reads every k6 pod's
// result block from the tail of its log, merges it with the recorded server samples, and publishes results.json,
// results.csv, chart.svg and the samples in the results ConfigMap, or what of them fits its 1 MiB limit
// (benchresults.Render; what was left out goes to status.dropped). The merged results, and why the run ended badly
// if it did, go to deriveStatus, which records the outcome. A failed or timed-out run still publishes what its
// pods printed; a pod whose result block is missing or cut fails an otherwise good run with ResultsTruncated.
//
// Observes: the k6 pods and the tails of their logs.
func (r *Reconciler) collect(ctx context.Context, b *v1alpha1.Benchmark, o *observation) error {
	ended, why := o.runEnd()
	if !ended {
		return nil
	}
	samples, err := serverSamplesOf(o.results)
	if err != nil {
		return fmt.Errorf("ConfigMap %s: %s: %w", o.results.Name, benchresults.ServerSamplesKey, err)
	}
	res, unread, found, tooLarge, err := r.mergeRun(ctx, b, *o.plan, samples)
	if err != nil {
		return err
	}
	title := fmt.Sprintf("Benchmark %s/%s: %s", b.Namespace, b.Name, res.Target)
	files, err := benchresults.Render(res, title, o.results.Data[benchresults.ServerSamplesKey], benchresults.ConfigMapBudget)
	if err != nil {
		return err
	}
	if n := samplesDropped(o.results); n > 0 {
		files.Dropped = append([]string{fmt.Sprintf("%s: the samples of %d point(s), past its %d KiB budget while the run went on",
			benchresults.ServerSamplesKey, n, serverSamplesBudget>>10)}, files.Dropped...)
	}
	if err := r.publishResults(ctx, o, files.Data); err != nil {
		return err
	}
	if why == nil && tooLarge != nil {
		why = tooLarge // partial numbers, and the reason is the size, not a cut
	}
	if why == nil && unread > 0 {
		// Partial numbers would understate the run: fail, and still publish what the other pods reported.
		why = failWith(v1alpha1.BenchmarkReasonResultsTruncated, "the results of %d of %d k6 pod(s) are missing or truncated", unread, found)
	}
	o.collected, o.dropped, o.failure = &res, files.Dropped, why
	return nil
}
