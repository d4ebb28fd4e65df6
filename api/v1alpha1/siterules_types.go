package v1alpha1

// Site rules of spec.server: redirects and rewrites, clean URLs and error pages. The server applies the
// redirects before the rules in the site's own `_redirects` file (docs/staticsite.md). The validation here is
// the server's rule syntax (images/server/src/rules/parse.rs), so that a rule the API server admits is one the
// server starts with (internal/contract checks the generated arguments against the real binary).

// MaxRedirects bounds spec.server.redirects; larger sets belong in the site's `_redirects` file.
const MaxRedirects = 256

// Redirect is one redirect or rewrite rule, `_redirects` syntax: FROM TO STATUS.
// +kubebuilder:validation:XValidation:rule="self.status != 200 || (self.to.startsWith('/') && !self.to.matches('(^|/)[.][.]?(/|$)|[?#%]'))",message="spec.server.redirects[].to of a 200 rewrite must be a site path without '.', '..', '?', '#' or '%'"
type Redirect struct {
	// from is the request path matched: literal segments, `:name` placeholders (whole segments) and a final `*`
	// splat, e.g. "/blog/*" or "/:year/:slug". A trailing slash is ignored.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/(:[A-Za-z_][A-Za-z0-9_]*|[^\s\\%?#/:*][^\s\\%?#/*]*))*(/\*?)?$`
	// +kubebuilder:validation:XValidation:rule="!self.matches('(^|/)[.][.]?(/|$)')",message="spec.server.redirects[].from must not hold '.' or '..' segments"
	// +kubebuilder:validation:XValidation:rule="!self.matches('(/:[^/]*(/[^:/][^/]*)*){9}')",message="spec.server.redirects[].from must have at most 8 placeholders"
	// +required
	From string `json:"from"`

	// to is where the request goes: a site path or an http(s) URL, with `:name` and `:splat` filled in from
	// from; for status 200, the site file served instead. The request's query string is kept on redirects.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:Pattern=`^(/([!-.0-~][!-~]*)?|https?://[!-~]+)$`
	// +required
	To string `json:"to"`

	// status of the response: 301, 302, 307 or 308 redirect, or 200 for a rewrite.
	// +kubebuilder:validation:Enum=200;301;302;307;308
	// +kubebuilder:default=301
	// +optional
	Status int32 `json:"status,omitempty"`

	// force applies the rule even where a file matches the path (by default a file shadows the rule).
	// +optional
	Force bool `json:"force,omitempty"`
}

// ErrorPage is a site page served, with the error status, for errors under a path prefix.
type ErrorPage struct {
	// status the page answers: 404 (not found), 400 (bad path), 403 (signed in through spec.server.access.sso
	// but not admitted by the path's rule), 405 (method not allowed) or 414 (URI too long).
	// +kubebuilder:validation:Enum=400;403;404;405;414
	// +required
	Status int32 `json:"status"`

	// path of the page in the site, e.g. "/docs/404.html".
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^/\S*$`
	// +kubebuilder:validation:XValidation:rule="!self.split('/').exists(s, s == '..')",message="spec.server.errorPages[].path must be an absolute site path without '..' or spaces"
	// +required
	Path string `json:"path"`

	// pathPrefix of the requests the page is for (default "/"); the longest matching prefix wins.
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^/\S*$`
	// +optional
	PathPrefix string `json:"pathPrefix,omitempty"`
}
