package staticsite

import (
	"reflect"
	"testing"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

func TestSiteRuleArgs(t *testing.T) {
	if got := siteRuleArgs(v1alpha1.ServerSpec{}); len(got) != 0 {
		t.Errorf("no rules: %q", got)
	}
	got := siteRuleArgs(v1alpha1.ServerSpec{
		Redirects: []v1alpha1.Redirect{
			{From: "/blog/*", To: "/news/:splat", Status: 302},
			{From: "/old", To: "/new"},
			{From: "/app/*", To: "/index.html", Status: 200, Force: true},
		},
		CleanURLs:  true,
		ErrorPages: []v1alpha1.ErrorPage{{Status: 404, Path: "/docs/404.html", PathPrefix: "/docs/"}, {Status: 405, Path: "/405.html"}},
	})
	want := []string{
		"--redirect", "/blog/* /news/:splat 302",
		"--redirect", "/old /new 301",
		"--redirect", "/app/* /index.html 200!",
		"--clean-urls",
		"--error-page", "404 /docs/404.html /docs/",
		"--error-page", "405 /405.html /",
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got  %q\nwant %q", got, want)
	}
}
