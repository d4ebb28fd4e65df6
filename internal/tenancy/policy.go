// Package tenancy is the platform team's policy on what a StaticSite or a Benchmark may ask of the cluster beyond
// serving or loading its own site: server flags, images, the pods' identity and scheduling, annotations on the
// objects the operator creates, and how much load a Benchmark may make. The chart sets it (values "tenancy",
// passed as the operator flag --tenancy-policy); docs/security.md says what each setting allows.
//
// The operator checks every object against it on every pass and never creates or changes a child of one that
// breaks it (the object's status names the field). What the policy cannot loosen is refused by the CRD's own rules
// (e.g. extraArgs that move the root, listeners, TLS files, termination log or cache).
package tenancy

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Any in a list allows every value.
const Any = "*"

// Policy is the tenancy policy. Its JSON form is the chart's values.tenancy.
type Policy struct {
	// ExtraArgs are the server flag names (without "--") spec.server.extraArgs may set; Any: every flag the CRD
	// admits. An argument that does not start with "--" is the value of the flag before it.
	ExtraArgs []string `json:"extraArgs"`
	// Images are the image references spec.content.image, spec.content.imageVolume.reference,
	// spec.server.image and a Benchmark's spec.image may name: an entry ending in "/" allows every reference that
	// starts with it (a registry or a repository path), another entry a repository exactly (any tag or digest);
	// Any: every image. The operator's own default server and k6 images are not checked: the tenant did not
	// choose them, and AllowingImages adds their repositories, so an empty list allows exactly those.
	Images []string `json:"images"`
	// ServiceTypes are the spec.service.type values allowed (ClusterIP, NodePort, LoadBalancer); Any: every one.
	// A NodePort opens a port on every node, a LoadBalancer buys a cloud address: both reach past the cluster.
	// ClusterIP, the CRD's default, is always allowed (a policy that leaves the list out still serves sites).
	ServiceTypes []string `json:"serviceTypes"`
	// ServiceAccountName allows podTemplate.serviceAccountName (a Benchmark's serviceAccountName).
	ServiceAccountName bool `json:"serviceAccountName"`
	// ServiceAccountToken allows automountServiceAccountToken: true.
	ServiceAccountToken bool `json:"serviceAccountToken"`
	// PriorityClasses are the priorityClassName values allowed; Any: every one.
	PriorityClasses []string `json:"priorityClasses"`
	// TolerationKeys are the toleration keys allowed; Any: every one, and a toleration with no key (which
	// tolerates every taint) only then.
	TolerationKeys []string `json:"tolerationKeys"`
	// AnnotationKeys are the annotation keys allowed on the pods, the Service and the Ingress or HTTPRoute: a key
	// exactly, or a prefix ending in "*"; Any: every key.
	AnnotationKeys []string `json:"annotationKeys"`
	// Benchmark bounds the load a Benchmark may make.
	Benchmark BenchmarkLimits `json:"benchmark"`
	// Git bounds content from Git (spec.content.git).
	Git GitLimits `json:"git"`
	// Hostnames bounds the hostnames a site may claim (spec.hostnames). Who holds a hostname that several sites
	// claim is not the policy's business but the operator's (internal/hostclaim: the first to claim keeps it).
	Hostnames HostnameLimits `json:"hostnames"`
	// Certificates bound the cert-manager issuers spec.tls.issuerRef may name (certificates.go).
	Certificates CertificateLimits `json:"certificates"`
	// Previews bound spec.previews (previews.go); their wildcard domain is checked against Hostnames.
	Previews PreviewLimits `json:"previews"`
	// SSO bounds single sign-on's identity providers (spec.server.access.sso; sso.go).
	SSO SSOLimits `json:"sso"`
}

// HostnameLimits say which hostnames a namespace's sites may claim. spec.hostnames go into an Ingress or HTTPRoute
// the operator creates with its own ClusterRole, so they are the tenant's way into the cluster's route
// controllers: without a limit a site could claim another team's host or a wildcard over a whole domain.
type HostnameLimits struct {
	// Patterns are the hostnames a site may claim, "{namespace}" standing for the site's namespace: a name exactly
	// ("{namespace}.sites.example.com"), or "*." and a suffix, which admits every name of one or more labels under
	// it ("*.{namespace}.example.com" admits "a.team.example.com" and, when Wildcards allows, "*.team.example.com");
	// Any: every hostname. Compared case-insensitively, a trailing dot ignored. Empty: no hostname at all.
	Patterns []string `json:"patterns"`
	// Wildcards allows wildcard hostnames ("*.example.com"): one site receiving every name under a domain that no
	// other site claims exactly. Even then a wildcard must fall under a pattern.
	Wildcards bool `json:"wildcards"`
}

// GitLimits bound a site's content from Git. The fetcher pod connects to the URL from the site's namespace (the
// namespace's egress policies apply, not the operator's), so the list is about which forges a tenant may make the
// cluster fetch from and how much disk and memory a fetch may take, not about the operator's network.
type GitLimits struct {
	// URLs are the repository URL prefixes spec.content.git.url may start with. Each ends in "/" or ":" (Parse
	// refuses others), so "https://github.com/" never admits "https://github.com.evil.example/x"; Any admits
	// every URL the CRD admits. Empty: no Git content.
	URLs []string `json:"urls"`
	// MaxSize caps spec.content.git.maxSize (its default, 512Mi, when unset), e.g. "1Gi". Empty: no cap beyond
	// the CRD's 16Gi.
	MaxSize string `json:"maxSize"`
	// RequireCredentialsLabel: spec.content.git.secretRef may name only a Secret labelled
	// v1alpha1.LabelGitCredentials="true", so a tenant cannot hand the fetcher a Secret of their namespace that
	// they may not read themselves (a platform's deploy key) and have it fetch and publish what that key opens.
	// A pointer so that a policy leaving it out gets the restrictive true; false is the single-tenant opt-out.
	RequireCredentialsLabel *bool `json:"requireCredentialsLabel"`
}

// CredentialsLabelRequired says whether a credentials Secret must carry v1alpha1.LabelGitCredentials (true unless
// the policy says false).
func (g GitLimits) CredentialsLabelRequired() bool {
	return g.RequireCredentialsLabel == nil || *g.RequireCredentialsLabel
}

// BenchmarkLimits bound a Benchmark. A zero number or an empty duration is no limit.
type BenchmarkLimits struct {
	// URLTargets allows target.url (any address the k6 pods reach); without it a Benchmark may only load a
	// StaticSite of its own namespace (target.staticSite).
	URLTargets bool `json:"urlTargets"`
	// MaxParallelism bounds spec.parallelism (k6 pods).
	MaxParallelism int32 `json:"maxParallelism"`
	// MaxVUs bounds the virtual users over all pods (sweep.to, constant.vus, arrivalRate.maxVUs).
	MaxVUs int32 `json:"maxVUs"`
	// MaxRate bounds arrivalRate.rate (requests started per second over all pods).
	MaxRate int32 `json:"maxRate"`
	// MaxDuration bounds the planned run (every sweep step, or the constant or arrival-rate duration), e.g. "30m".
	MaxDuration string `json:"maxDuration"`
}

// Unrestricted is the single-tenant policy: everything the CRDs admit.
func Unrestricted() Policy {
	all := []string{Any}
	return Policy{ExtraArgs: all, Images: all, ServiceTypes: all, ServiceAccountName: true, ServiceAccountToken: true,
		PriorityClasses: all, TolerationKeys: all, AnnotationKeys: all, Benchmark: BenchmarkLimits{URLTargets: true},
		Git: GitLimits{URLs: all, RequireCredentialsLabel: ptr.To(false)}, Hostnames: HostnameLimits{Patterns: all, Wildcards: true},
		Certificates: CertificateLimits{ClusterIssuers: all, ExternalIssuers: all}, SSO: SSOLimits{Issuers: all}}
}

// DefaultGitURLs are the public forges over HTTPS and SSH (both SSH spellings): a platform adds its own forge.
var DefaultGitURLs = []string{
	"https://github.com/", "https://gitlab.com/", "https://codeberg.org/", "https://bitbucket.org/",
	"ssh://git@github.com/", "git@github.com:", "ssh://git@gitlab.com/", "git@gitlab.com:",
	"ssh://git@codeberg.org/", "git@codeberg.org:",
}

// DefaultPreviewsMax caps spec.previews.max under the default policy: the API's default, so a site that leaves
// max unset passes.
const DefaultPreviewsMax = 10

// DefaultGitMaxSize caps a site's spec.content.git.maxSize under the default policy.
const DefaultGitMaxSize = "1Gi"

// Default is the multi-tenant policy the operator runs with when no policy is given, the same as the chart's
// default values: tuning flags only, no image but the operator's own server and k6 images (the exact images the
// chart installs for tenants' pods, added by AllowingImages: never a prefix such as "hyperstatic/", which would
// admit every image of that public namespace, the operator's own included), ClusterIP Services only, no
// ServiceAccount, no priority class, no tolerations, only Prometheus scrape annotations, Benchmarks of the
// namespace's own sites within bounds that a shared cluster survives, Git content from the public forges
// (DefaultGitURLs) of at most 1Gi with credentials only from Secrets labelled for it, any exact hostname but no
// wildcard (a hostname another site already holds is refused anyway: internal/hostclaim), certificates from the
// namespace's own cert-manager Issuers only (the platform lists the ClusterIssuers it offers), at most
// DefaultPreviewsMax previews a site (whose wildcard domain the hostname policy refuses until it allows wildcards),
// single sign-on through the public identity providers of DefaultSSOIssuers only.
func Default() Policy {
	return Policy{
		ExtraArgs: []string{"access-log", "access-log-sample", "workers", "header-timeout", "keepalive-timeout",
			"max-memory-file-size", "memory-budget", "memory-limit", "compress"},
		Images:          []string{},
		ServiceTypes:    []string{string(corev1.ServiceTypeClusterIP)},
		PriorityClasses: []string{},
		TolerationKeys:  []string{},
		AnnotationKeys:  []string{"prometheus.io/*"},
		Benchmark:       BenchmarkLimits{MaxParallelism: 4, MaxVUs: 1000, MaxRate: 10000, MaxDuration: "30m"},
		Git:             GitLimits{URLs: slices.Clone(DefaultGitURLs), MaxSize: DefaultGitMaxSize, RequireCredentialsLabel: ptr.To(true)},
		Hostnames:       HostnameLimits{Patterns: []string{Any}},
		Certificates:    CertificateLimits{ClusterIssuers: []string{}, ExternalIssuers: []string{}},
		Previews:        PreviewLimits{Max: DefaultPreviewsMax},
		SSO:             SSOLimits{Issuers: slices.Clone(DefaultSSOIssuers)},
	}
}

// AllowingImages is the policy that also allows the repositories of refs: the operator's own default server and k6
// images, which a tenant may name explicitly (to pin them) whatever the list says.
func (p Policy) AllowingImages(refs ...string) Policy {
	p.Images = slices.Clone(p.Images)
	for _, r := range refs {
		if r != "" {
			p.Images = append(p.Images, repository(r))
		}
	}
	return p
}

// Parse reads a policy's JSON form. Fields it does not know are an error, so a typo in the chart's values does not
// silently leave the default in place; fields left out take the restrictive zero value.
func Parse(s string) (Policy, error) {
	var p Policy
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Policy{}, fmt.Errorf("tenancy policy: %w", err)
	}
	if _, err := p.Benchmark.maxDuration(); err != nil {
		return Policy{}, err
	}
	if err := p.Git.validate(); err != nil {
		return Policy{}, err
	}
	if err := p.Hostnames.validate(); err != nil {
		return Policy{}, err
	}
	if err := p.SSO.validate(); err != nil {
		return Policy{}, err
	}
	if m := p.Previews.Max; m < 0 || m > v1alpha1.MaxPreviewsMax {
		return Policy{}, fmt.Errorf("tenancy policy: previews.max %d is not within 0-%d (0: no cap)", m, v1alpha1.MaxPreviewsMax)
	}
	return p, nil
}

// validate refuses URL prefixes that would match more than their host (no "/" or ":" at the end) and a maxSize
// that is not a positive quantity.
func (g GitLimits) validate() error {
	for _, u := range g.URLs {
		if u != Any && !strings.HasSuffix(u, "/") && !strings.HasSuffix(u, ":") {
			return fmt.Errorf("tenancy policy: git.urls entry %q must end in \"/\" or \":\" (a prefix without it would admit "+
				"other hosts, e.g. %q)", u, u+".evil.example/")
		}
	}
	if _, err := g.maxSize(); err != nil {
		return err
	}
	return nil
}

// maxSize is the cap (nil: none).
func (g GitLimits) maxSize() (*resource.Quantity, error) {
	if g.MaxSize == "" {
		return nil, nil
	}
	q, err := resource.ParseQuantity(g.MaxSize)
	if err != nil || q.Sign() <= 0 {
		return nil, fmt.Errorf("tenancy policy: git.maxSize %q is not a positive quantity", g.MaxSize)
	}
	return &q, nil
}

// gitURLAllowed: an entry is a prefix of the URL (or Any).
func (g GitLimits) gitURLAllowed(url string) bool {
	for _, e := range g.URLs {
		if e == Any || (e != "" && strings.HasPrefix(url, e)) {
			return true
		}
	}
	return false
}

func (b BenchmarkLimits) maxDuration() (time.Duration, error) {
	if b.MaxDuration == "" {
		return 0, nil
	}
	d, err := time.ParseDuration(b.MaxDuration)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("tenancy policy: benchmark.maxDuration %q is not a duration", b.MaxDuration)
	}
	return d, nil
}

// Violation is one field that breaks the policy.
type Violation struct {
	Field   string // the field's path, e.g. spec.server.extraArgs[2]
	Message string
}

func (v Violation) String() string { return v.Field + ": " + v.Message }

// Violations is every field of an object that breaks the policy, in field order.
type Violations []Violation

// Error joins them for a condition message; the first few only, so the message stays readable.
func (vs Violations) Error() string {
	const shown = 5
	parts := make([]string, 0, min(len(vs), shown))
	for i, v := range vs {
		if i == shown {
			parts = append(parts, fmt.Sprintf("and %d more", len(vs)-shown))
			break
		}
		parts = append(parts, v.String())
	}
	return "the tenancy policy refuses " + strings.Join(parts, "; ")
}

func (vs *Violations) add(field, format string, args ...any) {
	*vs = append(*vs, Violation{Field: field, Message: fmt.Sprintf(format, args...)})
}

func listed(list []string, v string) bool {
	for _, e := range list {
		if e == Any || e == v {
			return true
		}
	}
	return false
}

// imageAllowed: an entry ending in "/" is a prefix; another is a repository, matched without tag or digest.
func (p Policy) imageAllowed(ref string) bool {
	repo := repository(ref)
	for _, e := range p.Images {
		switch {
		case e == Any:
			return true
		case strings.HasSuffix(e, "/") && strings.HasPrefix(ref, e):
			return true
		case e == repo:
			return true
		}
	}
	return false
}

// repository is a reference without its digest and tag ("host:5000/a/b:tag@sha256:..." → "host:5000/a/b").
func repository(ref string) string {
	ref, _, _ = strings.Cut(ref, "@")
	if i := strings.LastIndex(ref, ":"); i > strings.LastIndex(ref, "/") {
		ref = ref[:i]
	}
	return ref
}

func (p Policy) annotationAllowed(key string) bool {
	for _, e := range p.AnnotationKeys {
		if e == Any || e == key || (strings.HasSuffix(e, "*") && strings.HasPrefix(key, strings.TrimSuffix(e, "*"))) {
			return true
		}
	}
	return false
}
