package tenancy

import (
	"strings"
	"testing"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Hostname patterns: the namespace variable, "*." suffixes, case and a trailing dot; wildcards only when allowed
// and then only under a pattern. site() is in namespace team-a.
func TestHostnamePatterns(t *testing.T) {
	scoped := HostnameLimits{Patterns: []string{"{namespace}.sites.example.com", "*.{namespace}.Example.com.", "shared.example.org"}}
	withWildcards := scoped
	withWildcards.Wildcards = true
	cases := []struct {
		limits HostnameLimits
		host   string
		ok     bool
	}{
		{scoped, "team-a.sites.example.com", true},
		{scoped, "TEAM-A.Sites.Example.com.", true},
		{scoped, "team-b.sites.example.com", false}, // another namespace's name
		{scoped, "x.team-a.sites.example.com", false},
		{scoped, "www.team-a.example.com", true},
		{scoped, "a.b.team-a.example.com", true},
		{scoped, "team-a.example.com", false}, // "*." needs at least one label before the suffix
		{scoped, "www.team-b.example.com", false},
		{scoped, "www.evilteam-a.example.com", false},
		{scoped, "shared.example.org", true},
		{scoped, "*.team-a.example.com", false}, // a wildcard, not allowed
		{withWildcards, "*.team-a.example.com", true},
		{withWildcards, "*.example.com", false}, // a wildcard over more than the pattern admits
		{withWildcards, "*.sites.example.com", false},
		{Default().Hostnames, "login.bank.example", true},
		{Default().Hostnames, "*.apps.example.com", false},
		{Unrestricted().Hostnames, "*.apps.example.com", true},
		{HostnameLimits{}, "a.example.com", false}, // no patterns: no hostname
	}
	for _, tc := range cases {
		s := site(v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "x"},
			Hostnames: []v1alpha1.Hostname{"team-a.sites.example.com", v1alpha1.Hostname(tc.host)}})
		p := Unrestricted()
		p.Hostnames = tc.limits
		p.Hostnames.Patterns = append(p.Hostnames.Patterns, "team-a.sites.example.com") // the first hostname always passes
		vs := p.CheckSite(s)
		if ok := len(vs) == 0; ok != tc.ok {
			t.Errorf("%+v %q: allowed %v, want %v (%v)", tc.limits, tc.host, ok, tc.ok, vs)
		}
		if !tc.ok && (len(vs) != 1 || vs[0].Field != "spec.hostnames[1]") {
			t.Errorf("%q: violations %v, want one naming spec.hostnames[1]", tc.host, vs)
		}
	}
}

func TestHostnameMessages(t *testing.T) {
	s := site(v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "x"}, Hostnames: []v1alpha1.Hostname{"*.apps.example.com", "team-b.sites.example.com"}})
	p := Unrestricted()
	p.Hostnames = HostnameLimits{Patterns: []string{"{namespace}.sites.example.com"}}
	got := p.CheckSite(s).Error()
	for _, want := range []string{`spec.hostnames[0]: wildcard hostname "*.apps.example.com" is not allowed`,
		`spec.hostnames[1]: hostname "team-b.sites.example.com" is not one namespace team-a may claim (allowed: {namespace}.sites.example.com)`} {
		if !strings.Contains(got, want) {
			t.Errorf("%s\ndoes not contain %s", got, want)
		}
	}
}

func TestParseHostnamePatterns(t *testing.T) {
	for pattern, ok := range map[string]bool{`"*"`: true, `"{namespace}.sites.example.com"`: true, `"*.{namespace}.example.com"`: true,
		`"Sites.Example.com."`: true, `"a.*.example.com"`: false, `"*example.com"`: false, `"{ns}.example.com"`: false, `""`: false} {
		_, err := Parse(`{"hostnames": {"patterns": [` + pattern + `], "wildcards": false}}`)
		if (err == nil) != ok {
			t.Errorf("pattern %s: error %v, want ok=%v", pattern, err, ok)
		}
	}
}
