package tenancy

import (
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// The previews' cap refuses (never clamps) naming spec.previews.max, the default included; their wildcard
// *.<domain> passes the hostname policy as a claimed wildcard hostname would (site() is in namespace team-a).
func TestPreviewLimits(t *testing.T) {
	scoped := HostnameLimits{Patterns: []string{"*.{namespace}.example.com"}, Wildcards: true}
	noWildcards := scoped
	noWildcards.Wildcards = false
	cases := []struct {
		name   string
		limits PreviewLimits
		hosts  HostnameLimits
		domain string
		max    *int32
		field  string // "" when allowed
		msg    string
	}{
		{"under the cap", PreviewLimits{Max: 5}, scoped, "preview.team-a.example.com", ptr.To[int32](5), "", ""},
		{"over the cap", PreviewLimits{Max: 5}, scoped, "preview.team-a.example.com", ptr.To[int32](6), "spec.previews.max", "6 previews is over the limit of 5"},
		{"the default over the cap", PreviewLimits{Max: 5}, scoped, "preview.team-a.example.com", nil, "spec.previews.max", "the default of 10 is over the limit of 5: set it to at most 5"},
		{"no cap", PreviewLimits{}, scoped, "preview.team-a.example.com", ptr.To[int32](50), "", ""},
		{"another namespace's domain", PreviewLimits{}, scoped, "preview.team-b.example.com", nil, "spec.previews.domain",
			`the previews' wildcard hostname "*.preview.team-b.example.com" is not one namespace team-a may claim`},
		{"the pattern's own suffix", PreviewLimits{}, scoped, "team-a.example.com", nil, "", ""},
		{"no wildcards", PreviewLimits{}, noWildcards, "preview.team-a.example.com", nil, "spec.previews.domain",
			`previews need the wildcard hostname "*.preview.team-a.example.com", and wildcard hostnames are not allowed`},
		{"the default policy", Default().Previews, Default().Hostnames, "preview.example.com", ptr.To[int32](10), "spec.previews.domain", "wildcard hostnames are not allowed"},
		{"unrestricted", Unrestricted().Previews, Unrestricted().Hostnames, "preview.example.com", ptr.To[int32](50), "", ""},
	}
	for _, tc := range cases {
		s := site(v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Git: &v1alpha1.GitContent{URL: "https://git.example/x", Ref: "main"}},
			Previews: &v1alpha1.PreviewsSpec{Domain: tc.domain, PullRequests: true, Max: tc.max}})
		p := Unrestricted()
		p.Previews, p.Hostnames = tc.limits, tc.hosts
		vs := p.CheckSite(s)
		if tc.field == "" {
			if len(vs) != 0 {
				t.Errorf("%s: refused: %v", tc.name, vs)
			}
			continue
		}
		if len(vs) != 1 || vs[0].Field != tc.field || !strings.Contains(vs[0].Message, tc.msg) {
			t.Errorf("%s: violations %v, want one naming %s saying %q", tc.name, vs, tc.field, tc.msg)
		}
	}
}

func TestParsePreviewLimits(t *testing.T) {
	p, err := Parse(`{"previews": {"max": 3}}`)
	if err != nil || p.Previews.Max != 3 {
		t.Fatalf("Parse: %+v, %v", p.Previews, err)
	}
	for _, bad := range []string{`{"previews": {"count": 3}}`, `{"previews": {"max": -1}}`, `{"previews": {"max": 51}}`} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("%s was accepted", bad)
		}
	}
}
