package staticsite

import (
	"hyperstatic.dev/hyperstatic/internal/tenancy"
)

// The tenancy policy (internal/tenancy) is checked before any step: a site that breaks it gets no child created or
// changed, whatever the API server admitted (the policy may have been tightened since, or set without the chart's
// admission policy). What already runs is left as it was: it was built from a spec the policy allowed then.

// policy is the Reconciler's policy; nil means the single-tenant one (tests that are not about tenancy).
func (r *Reconciler) policy() tenancy.Policy {
	if r.Policy == nil {
		return tenancy.Unrestricted()
	}
	return *r.Policy
}
