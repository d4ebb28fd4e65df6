package benchmark

import (
	"context"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// checkPolicy fails a Benchmark that breaks the tenancy policy (internal/tenancy) before any child exists: no
// script, no Job, no k6 pod. A Benchmark already running when the policy was tightened fails too at its next pass
// (its Job is then cleaned up as spec.cleanup says): the policy bounds the load, not only its start.
//
// target.pod needs no rule of its own: it names a pod of the Benchmark's namespace, and resolveTarget loads it only
// when it is a pod of target.staticSite (findPodTarget), so a Benchmark reaches no pod a StaticSite target could
// not (a URL target is what the policy's urlTargets governs).
func (r *Reconciler) checkPolicy(_ context.Context, b *v1alpha1.Benchmark, o *observation) error {
	p := tenancy.Unrestricted()
	if r.Policy != nil {
		p = *r.Policy
	}
	if vs := p.CheckBenchmark(b); len(vs) > 0 {
		o.failure = failWith(v1alpha1.BenchmarkReasonPolicyViolation, "%s", vs.Error())
	}
	return nil
}
