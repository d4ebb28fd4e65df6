package v1alpha1

// The site value (docs/design/site-value.md): the site's rules, headers, cache-control, CORS, error pages, https
// redirect and HSTS rendered into one JSON document, delivered to the pods in the ConfigMap <site>.site-value and
// reloaded by the running servers: a change of them rolls no pod.

// ConditionSiteValueApplied is True when every ready server pod serves the site value rendered from the current
// spec; False when a pod refused it (it keeps serving the previous value; reason SiteValueRefused, also Stalled) or
// the ConfigMap's name is taken by an object the site does not own; Unknown while pods catch up, no pod is ready or
// a pod cannot be read.
const ConditionSiteValueApplied = "SiteValueApplied"

// SiteValueApplied reasons.
const (
	// ReasonSiteValueServed (True): every ready pod reports the rendered revision.
	ReasonSiteValueServed = "Served"
	// ReasonSiteValuePending (Unknown, and Reconciling=True with Ready unchanged): some ready pods still serve an
	// older value; the kubelet refreshes their mount after the operator annotates them, within seconds.
	ReasonSiteValuePending = "Pending"
	// ReasonSiteValueRefused (False, and Stalled=True): a pod's server refused the rendered value (a page the
	// content lacks, typically) and keeps serving the previous one; the message has the server's reason.
	ReasonSiteValueRefused = "Refused"
	// ReasonSiteValueNotReported (Unknown): a ready pod's server does not export hyperstatic_site_value_info (an
	// image older than the site value).
	ReasonSiteValueNotReported = "NotReported"
	// ReasonSiteValueConfigMapNotOwned (False, and Stalled=True with reason NotOwned): a ConfigMap named
	// <site>.site-value exists and is not the site's; the operator leaves it and the Deployment alone.
	ReasonSiteValueConfigMapNotOwned = "ConfigMapNotOwned"
)

// SiteValueStatus is which site value the spec renders to and how many ready pods serve it.
type SiteValueStatus struct {
	// revision of the site value rendered from the current spec: "sha256:" and 16 hex digits (the server's
	// hyperstatic_site_value_info{revision}).
	// +optional
	Revision string `json:"revision,omitempty"`
	// servedBy is the number of ready server pods that report serving that revision.
	// +optional
	ServedBy int32 `json:"servedBy"`
	// readyPods is the number of ready server pods that mount the site value (servedBy of them serve it).
	// +optional
	ReadyPods int32 `json:"readyPods"`
}

// ReasonSiteRuleFlagInExtraArgs (Stalled=True, SiteValueApplied=False): spec.server.extraArgs of a site stored
// before the CRD refused it sets a site-rule flag; the Deployment is left as it is until the spec is fixed.
const ReasonSiteRuleFlagInExtraArgs = "SiteRuleFlagInExtraArgs"

// ReasonSiteValueConfigMapRejected (Stalled=True, SiteValueApplied=False): the API server refused the site value's
// ConfigMap (quota, admission webhook); the message has its answer. The Deployment is left as it is.
const ReasonSiteValueConfigMapRejected = "SiteValueConfigMapRejected"
