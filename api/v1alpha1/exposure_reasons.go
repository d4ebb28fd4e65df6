package v1alpha1

// Reasons of the exposure conditions (TLSReady, RouteApplied, PodMonitorApplied), all normal-true: True is
// healthy. None of them changes Ready: a site whose certificate, route or PodMonitor has a problem still serves
// (its pods keep the certificate they loaded), and the problem is said here and in a Warning event. They are
// absent while their spec field (spec.tls, spec.route, spec.monitoring) is unset. docs/staticsite.md lists them.

// TLSReady reasons.
const (
	// True: the Secret holds a PEM certificate chain and a matching private key, valid now. The message gives the
	// certificate's DNS names and notAfter.
	ReasonCertificateValid = "CertificateValid"
	// False: the Secret named in spec.tls.secretName does not exist. New pods cannot start until it does (the
	// kubelet waits for the volume); running pods keep serving.
	ReasonSecretNotFound = "SecretNotFound"
	// False: the Secret is not of type kubernetes.io/tls or lacks tls.crt or tls.key.
	ReasonSecretInvalid = "SecretInvalid"
	// False: the certificate or key does not parse, they do not match, or the certificate is expired or not yet
	// valid. The message says which.
	ReasonInvalidCertificate = "InvalidCertificate"
)

// RouteApplied reasons.
const (
	// True: the Ingress (spec.route.ingressClassName) exists as specified.
	ReasonIngressApplied = "IngressApplied"
	// True: the HTTPRoute (spec.route.parentRefs) exists as specified.
	ReasonHTTPRouteApplied = "HTTPRouteApplied"
	// False: the cluster does not serve gateway.networking.k8s.io/v1 HTTPRoutes (the Gateway API CRDs are not
	// installed). Retried periodically; nothing else of the site is affected.
	ReasonHTTPRouteCRDMissing = "HTTPRouteCRDMissing"
	// False: the API server refused the Ingress or HTTPRoute, or an object of that name is not the site's (the
	// message says which; the operator never takes an object over).
	ReasonRouteRejected = "RouteRejected"
	// False: another StaticSite (of any namespace) holds one or more of spec.hostnames, having claimed them first.
	// The route carries the others (no route when none is left); the message names each hostname and the site that
	// holds it, and the site gets them without an edit once the holder gives them up or is deleted.
	ReasonHostnameConflict = "HostnameConflict"
)

// PodMonitorApplied reasons.
const (
	// True: the PodMonitor exists as specified.
	ReasonPodMonitorCreated = "PodMonitorApplied"
	// False: the cluster does not serve monitoring.coreos.com/v1 PodMonitors (the Prometheus Operator's CRDs are
	// not installed). Retried periodically; nothing else of the site is affected.
	ReasonPodMonitorCRDMissing = "PodMonitorCRDMissing"
	// False: the API server refused the PodMonitor, or an object of that name is not the site's.
	ReasonPodMonitorRejected = "PodMonitorRejected"
)

// Stalled=True (and Ready=False) reason for the NetworkPolicy, like the other children's: the API server refused
// it (ReasonNotOwned covers a foreign object with its name).
const ReasonNetworkPolicyRejected = "NetworkPolicyRejected"
