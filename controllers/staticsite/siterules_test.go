package staticsite

import (
	"os"
	"slices"
	"strings"
	"testing"

	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// The site rules are the site value's, never arguments: a rule change must not change the pod template. The pod
// template mounts the value's ConfigMap (by name: no revision, no hash of it) and the server reads it with --site.
func TestSiteRulesAreNotInThePodTemplate(t *testing.T) {
	site := newSite(v1alpha1.ContentSource{Image: "x"})
	before := deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template
	site.Spec.Server = v1alpha1.ServerSpec{
		CacheControl:        []v1alpha1.CacheControlRule{{Glob: "*.css", Value: "public, max-age=600"}},
		DefaultCacheControl: "no-store",
		Headers:             []v1alpha1.Header{{Name: "X-Frame-Options", Value: "DENY"}},
		SecurityHeaders:     ptr.To(false),
		CORS:                []v1alpha1.CORSRule{{Glob: "/fonts/**", AllowOrigins: []string{"*"}}},
		SPAFallback:         true,
		NotFoundPage:        "/404.html",
		Redirects:           []v1alpha1.Redirect{{From: "/old", To: "/new"}},
		CleanURLs:           true,
		ErrorPages:          []v1alpha1.ErrorPage{{Status: 404, Path: "/404.html"}},
	}
	site.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s", HTTPRedirect: true, HSTS: &v1alpha1.HSTSSpec{MaxAgeSeconds: 60}}
	withTLS := newSite(v1alpha1.ContentSource{Image: "x"})
	withTLS.Spec.TLS = &v1alpha1.TLSSpec{SecretName: "s"}
	if got, want := desired.ServerArgs(site), desired.ServerArgs(withTLS); !slices.Equal(got, want) {
		t.Errorf("site rules changed the arguments:\n%q\n%q", got, want)
	}
	after := deploymentFor(t, site, desired.ImageContent(v1alpha1.ContentSourceImage, "x", "")).Spec.Template
	if len(after.Annotations) != len(before.Annotations) {
		t.Errorf("site rules changed the template's annotations: %v → %v", before.Annotations, after.Annotations)
	}
	for _, a := range desired.ServerArgs(site) {
		for _, f := range sitevalue.SiteRuleFlags {
			if f != "site" && (a == "--"+f || strings.HasPrefix(a, "--"+f+"=")) {
				t.Errorf("argument %s is a site-rule flag", a)
			}
		}
	}
	var mounted, volume bool
	for _, m := range after.Spec.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == desired.SiteValueVolumeName && m.MountPath == sitevalue.MountDir && m.ReadOnly && m.SubPath == "")
	}
	for _, v := range after.Spec.Volumes {
		volume = volume || (v.Name == desired.SiteValueVolumeName && v.ConfigMap != nil && v.ConfigMap.Name == "docs.site-value")
	}
	if !mounted || !volume {
		t.Errorf("the site value is not mounted read-only at %s from docs.site-value (mount %v, volume %v)", sitevalue.MountDir, mounted, volume)
	}
}

// The CRD's extraArgs rule refuses exactly the flags the server refuses beside --site.
func TestExtraArgsRuleNamesEverySiteRuleFlag(t *testing.T) {
	crd, err := os.ReadFile("../../config/crd/bases/hyperstatic.dev_staticsites.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rule := "^--(" + strings.Join(sitevalue.SiteRuleFlags, "|") + ")(=.*)?$"
	if !strings.Contains(string(crd), rule) {
		t.Errorf("the CRD has no extraArgs rule %s", rule)
	}
}
