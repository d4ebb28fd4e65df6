package tenancy

import (
	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/hostclaim"
)

// PreviewLimits bound a site's previews (spec.previews): each is a tree on every server pod's disk (the site
// emptyDir grows by two maxSize per preview) and an entry the pods serve, so the count is the platform's to cap.
type PreviewLimits struct {
	// Max caps spec.previews.max (its default, 10, when unset). A site asking for more is refused naming the
	// field, not clamped: a clamped site would say one number and serve another, and the tenant would learn it
	// only when a preview did not appear. 0: no cap beyond the CRD's 50.
	Max int32 `json:"max"`
}

// checkPreviews: max (its default when unset) within the cap; the wildcard *.<domain> the previews' route claims
// allowed as a hostname would be (under a pattern, and wildcards allowed): a tenant gets no preview under a
// domain it could not claim itself.
func (p Policy) checkPreviews(vs *Violations, ns string, pv *v1alpha1.PreviewsSpec) {
	if limit := p.Previews.Max; limit > 0 {
		switch {
		case pv.Max == nil && v1alpha1.DefaultPreviewsMax > limit:
			vs.add("spec.previews.max", "the default of %d is over the limit of %d: set it to at most %d", v1alpha1.DefaultPreviewsMax, limit, limit)
		case pv.Max != nil && *pv.Max > limit:
			vs.add("spec.previews.max", "%d previews is over the limit of %d", *pv.Max, limit)
		}
	}
	wildcard := "*." + hostclaim.Normalize(pv.Domain)
	switch {
	case !p.Hostnames.Wildcards:
		vs.add("spec.previews.domain", "previews need the wildcard hostname %q, and wildcard hostnames are not allowed", wildcard)
	case !p.Hostnames.allowed(ns, wildcard):
		vs.add("spec.previews.domain", "the previews' wildcard hostname %q is not one namespace %s may claim (allowed: %s)",
			wildcard, ns, shown(p.Hostnames.Patterns))
	}
}
