package v1alpha1

// Fair share (docs/security.md): what one client address may ask of a site, in the site value (limits.perClient,
// docs/design/site-value.md), so a change applies without a restart. The ranges are the server's
// (images/server/src/fairshare/bucket.rs), so that a limit the API server admits is one the server loads.

// MaxPerClientRequests bounds perClient.requests and perClient.burst.
const MaxPerClientRequests = 1000000

// MaxPerClientPeriodSeconds bounds perClient.periodSeconds (a day).
const MaxPerClientPeriodSeconds = 86400

// ClientLimits bound what one client may ask of the site.
type ClientLimits struct {
	// perClient is a token bucket per client address (IPv4 address, IPv6 /64) on the site's requests: requests
	// per periodSeconds, burst saved up at most. A request without a token gets 429 Too Many Requests with
	// Retry-After. Each server worker keeps its own buckets, so a client whose connections reach several workers
	// may get up to that many times the limit. Default: no limit.
	// +optional
	PerClient *PerClientLimit `json:"perClient,omitempty"`

	// perClientHandshakes is a token bucket per client address on the site's TLS handshakes: handshakes per
	// periodSeconds, burst saved up at most. A connection to the HTTPS port past it is closed as soon as it is
	// accepted, before its handshake begins (no 429: nothing has been read; the client sees the connection
	// closed), which is what keeps one client from spending the server's CPU on key exchanges. Resumed
	// handshakes count like full ones. Per server worker, like perClient. Needs spec.tls. Default: no limit.
	// +optional
	PerClientHandshakes *PerClientHandshakeLimit `json:"perClientHandshakes,omitempty"`
}

// PerClientLimit is a token bucket: requests tokens every periodSeconds, at most burst kept.
type PerClientLimit struct {
	// requests a client may make per periodSeconds, on average.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +required
	Requests int32 `json:"requests"`

	// periodSeconds over which requests are allowed (default 1: requests per second).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`

	// burst is how many requests a client that was quiet may make at once (default: requests).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	Burst int32 `json:"burst,omitempty"`
}

// PerClientHandshakeLimit is a token bucket on TLS handshakes: handshakes tokens every periodSeconds, at most burst
// kept.
type PerClientHandshakeLimit struct {
	// handshakes a client may begin per periodSeconds, on average.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +required
	Handshakes int32 `json:"handshakes"`

	// periodSeconds over which handshakes are allowed (default 1: handshakes per second).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=86400
	// +optional
	PeriodSeconds int32 `json:"periodSeconds,omitempty"`

	// burst is how many handshakes a client that was quiet may begin at once (default: handshakes).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	// +optional
	Burst int32 `json:"burst,omitempty"`
}
