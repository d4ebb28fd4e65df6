// Package pool reconciles StaticSitePools (docs/design/pools.md is the contract; docs/pools.md the user's guide).
// For each pool, one pass (reconciler.go) runs its steps in order, each filling its part of the observation
// (observation.go):
//
//   - the pool's namespace (spec.namespace) must exist: the platform creates it; without it the pool is Stalled
//     (NamespaceMissing) and nothing else is done (step_namespace.go);
//   - the StaticSites that ask for the pool (a field index on spec.placement.pool) are admitted or refused by
//     poolplacement.Check, the admitted ones become index entries (poolplacement.Entry) (step_sites.go);
//   - each admitted ConfigMap site's ConfigMaps are mirrored into the pool namespace (poolindex.MirrorName), at most
//     MirrorsPerPass writes a pass: a site whose mirrors do not all exist yet waits out of the index for a later
//     pass, which runs a second later, so a pool of many new sites starts serving the first of them after one
//     batch instead of after every mirror (step_mirrors.go);
//   - every index shard, empty ones included, is rendered (poolindex.Render, canonical) into its ConfigMap in the
//     pool namespace; a shard whose bytes did not change is not written, so a site change costs one shard write
//     (step_index.go); then the mirrors of sites that left the index are deleted (step_mirrors.go);
//   - the server Deployment's replicas: a scale-down first marks the pods it removes and waits until no site's
//     EndpointSlice lists them (step_drain.go); every terminating server pod, which holds its drain (--drain-hold),
//     is released once no slice may send it a new connection (none lists it, or each lists it not ready beside a
//     ready pod), or at once when the pool is deleted (step_release.go, release_rule.go);
//   - the fetcher (ServiceAccount, Role, RoleBinding, Deployment, Service, NetworkPolicy) and the server pods
//     (Deployment, PodDisruptionBudget) are applied from pure builders (desired_*.go) (step_objects.go);
//   - every server pod and the fetcher pod not yet told of the index revision get it in an annotation, which makes
//     their kubelet remount the index at once instead of at its next resync, up to 90 s later (step_deliver.go);
//   - each ready pool pod's (and, for its traffic only, each held pod's) and the fetcher's GET /sites are read once (internal/poolread) and what each site is
//     served with is published to the poolstate.Board the site controller reads (step_served.go), with the
//     traffic of each site placed automatically, measured on the pool's pods and its own (step_traffic.go,
//     internal/pooltraffic);
//   - a pod told of the index revision whose /sites still lacks sites of it 10 s later (its kubelet synced before it
//     had the new ConfigMap) is told again with "<revision>/<n>", at most three times per revision; the pool
//     counts them in hyperstatic_pool_index_retells_total (step_retell.go, retell_rule.go).
//
// The status is derived from the observation in one pure function (status.go) and written only when it changed;
// the events of the pass are recorded after that write (events.go). Every object is applied server-side only when
// the fields the operator owns differ from the desired ones (apply.go): a pass that changes nothing writes
// nothing.
package pool
