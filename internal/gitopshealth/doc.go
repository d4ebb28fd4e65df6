// Package gitopshealth holds what GitOps tools read of a StaticSite's and a Benchmark's health, and tests it on
// objects the operator's real controllers drove in a real API server (envtest).
//
// The contract, per state (the same in docs/staticsite.md and charts/hyperstatic/README.md):
//
// Argo CD knows nothing of our kinds: it reads their health from the Lua checks in charts/hyperstatic/health, which
// a platform team puts into argocd-cm as resource.customizations.health.hyperstatic.dev_StaticSite and
// ..._Benchmark (ArgoCDConfigMap renders that block; the docs carry it and TestDocsCarryTheScripts holds them
// equal). Flux (kustomize-controller's health checks, `flux`'s wait) reads them through kstatus
// (sigs.k8s.io/cli-utils/pkg/kstatus/status.Compute), which knows only the conventions: status.observedGeneration
// and the conditions Reconciling, Stalled and Ready.
//
//	StaticSite                                           Argo CD       Flux (kstatus)
//	never seen by the operator (no status)               Progressing   Current (kstatus cannot tell: below)
//	spec not yet observed (observedGeneration behind)    Progressing   InProgress
//	Reconciling=True (created, rolling out, scaling up
//	  while Ready stays True, new rules, queued image)   Progressing   InProgress
//	Stalled=True (policy violation, content missing,
//	  foreign child, rollout past its deadline, ...)     Degraded      Failed
//	Ready=True, ScaledToZero (spec.replicas 0)           Suspended     Current
//	Ready=True                                           Healthy       Current
//
//	Benchmark (phase)                                    Argo CD       Flux (kstatus)
//	never seen by the operator (no status)               Progressing   Current (kstatus cannot tell: below)
//	Pending (waiting for its target, up to spec.timeout) Progressing   InProgress (Reconciling=True)
//	Running (the k6 Job runs)                            Progressing   InProgress (Reconciling=True)
//	Complete                                             Healthy       Current
//	Failed                                               Degraded      Failed (Stalled=True)
//
// A Benchmark has no Suspended state: it cannot be paused, and its one wait ends by itself. Its spec is immutable,
// so a Benchmark is never "observed behind". The Benchmark controller sets Reconciling and Stalled from the phase
// for kstatus's sake (controllers/benchmark/status.go): without them kstatus found nothing to read and computed
// Current for every phase, a failed run included.
//
// An object the operator has not written yet has no status at all: kstatus then finds nothing and computes
// Current (its documented limit for kinds it does not know), while the Lua checks say Progressing. Flux takes such
// an object for healthy until the operator's first pass writes a status. (Flux's own kinds avoid it with a CRD
// default, status.observedGeneration -1, which the API server fills in on every read until a controller writes;
// ours have none yet.) The tests record kstatus's answer, so a change in it shows.
//
// Argo runs the checks in gopher-lua (the interpreter it embeds) without the standard libraries: base, table and
// package only (and a reduced os, which the checks do not use). ArgoHealth runs them the same way, so a check that
// used string.* or os.* fails here as it would in Argo.
package gitopshealth
