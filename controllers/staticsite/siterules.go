package staticsite

import (
	"strconv"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// siteRuleArgs are the server flags of spec.server's site rules: one --redirect 'FROM TO STATUS[!]' per rule
// (the server's `_redirects` line syntax; the CRD admits no whitespace in from or to), --clean-urls, and one
// --error-page 'STATUS PATH PREFIX' per page.
func siteRuleArgs(s v1alpha1.ServerSpec) []string {
	var args []string
	for _, r := range s.Redirects {
		status := r.Status
		if status == 0 {
			status = 301
		}
		rule := r.From + " " + r.To + " " + strconv.Itoa(int(status))
		if r.Force {
			rule += "!"
		}
		args = append(args, "--redirect", rule)
	}
	if s.CleanURLs {
		args = append(args, "--clean-urls")
	}
	for _, p := range s.ErrorPages {
		prefix := p.PathPrefix
		if prefix == "" {
			prefix = "/"
		}
		args = append(args, "--error-page", strconv.Itoa(int(p.Status))+" "+p.Path+" "+prefix)
	}
	return args
}
