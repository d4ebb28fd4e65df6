// Package desired is what the operator wants a StaticSite's children to be: pure functions from the site, and what
// the reconcile pass decided about it, to the objects package staticsite applies. Nothing here reads the cluster,
// a clock or the Reconciler; the same input always gives the same object, byte for byte, so a pass that finds the
// live object's owned fields equal to it applies nothing (staticsite's apply: server-side apply guarded by
// DeepEqual) and a change here changes every site's object on the next pass (a pod template change rolls pods).
//
// The input: the site; Content, what the content step learned of the source (revision, the roll hash that makes
// new pods, the keys a prefixed ConfigMap projects, a single-attach claim, the content-agent image); the memory
// the pods get (MemoryFor, from the content's size); the server image the site runs (staticsite's queue for a new
// default image decides it); the hostnames the site holds (the hostname step); the rendered site value
// (internal/sitevalue); the operator's namespace (the admin port's NetworkPolicy rule).
//
// The objects, each nil when the spec asks for none:
//
//   - Deployment, with the server pod template: the server container and its arguments (ServerArgs, the process
//     settings only: the operator's half of the command-line contract internal/contract holds against the real
//     server), the content's /site volume, the compression cache, the site value's ConfigMap mount, the TLS
//     listener and HTTP/3's UDP port (http3.go), the pod's identity, placement (spread, zone preference,
//     node-loss tolerations), and for a Git site the puller sidecar and its volume from package gitcontent; the
//     rollout strategy (no surge for a single-attach claim);
//   - Service (and the site's in-cluster URL, HTTPSURL), PodDisruptionBudget, NetworkPolicy, PodMonitor
//     (unstructured: the Prometheus Operator's types are not compiled in);
//   - Ingress or HTTPRoute for spec.route (and PublicURLs);
//   - SiteValueConfigMap, the rendered site value the pods mount and reload without a restart.
//
// Every object carries the labels, owner reference and names of package sitechild, which the Git objects
// (gitcontent) and the capacity measurement (capacitygate) follow too. Defaults the CRD schema also applies are
// applied again here, so objects built from a site that never went through the API server (unit tests, objects
// stored before a default existed) are the same.
package desired
