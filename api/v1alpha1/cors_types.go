package v1alpha1

// CORSRule lets pages from other origins read the files under a glob (fonts are the usual case). Origins are
// exact strings, compared byte for byte with the request's Origin header; there are no patterns.
type CORSRule struct {
	// glob over the request path, e.g. "/fonts/**" or "*.woff2".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="!self.contains('=')",message="spec.server.cors[].glob must not contain '='"
	// +kubebuilder:validation:XValidation:rule="self.trim() != ''",message="spec.server.cors[].glob must not be blank"
	// +required
	Glob string `json:"glob"`

	// allowOrigins are the origins (scheme://host[:port]) allowed to read, or ["*"] for any.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.all(o, o == '*' || o.matches('^[A-Za-z][A-Za-z0-9+.-]*://[A-Za-z0-9.\\\\[\\\\]-]+(:[0-9]{1,5})?$'))",message="spec.server.cors[].allowOrigins must hold origins like https://example.com[:port] (no path), or \"*\""
	// +kubebuilder:validation:XValidation:rule="!self.exists(o, o == '*') || self.size() == 1",message="spec.server.cors[].allowOrigins: \"*\" must be the only entry"
	// +listType=atomic
	// +required
	AllowOrigins []string `json:"allowOrigins"`

	// allowMethods a preflight may ask for (default: GET, HEAD).
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Pattern=`^[A-Za-z]+$`
	// +kubebuilder:validation:items:MaxLength=32
	// +listType=atomic
	// +optional
	AllowMethods []string `json:"allowMethods,omitempty"`

	// allowHeaders are the request headers a preflight may ask for (header names).
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:items:Pattern="^[A-Za-z0-9!#$%&'*+.^_`|~-]+$"
	// +kubebuilder:validation:items:MaxLength=128
	// +listType=atomic
	// +optional
	AllowHeaders []string `json:"allowHeaders,omitempty"`

	// maxAge is how long, in seconds, a browser may cache a preflight's answer.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=86400
	// +optional
	MaxAge *int32 `json:"maxAge,omitempty"`
}
