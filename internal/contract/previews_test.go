package contract

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/gitcontent"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
)

// The fetcher's command line of a site with spec.previews (issue 41) is accepted by the real content-agent, each
// --previews-* flag one `content-agent fetch` defines, at the CRD's bounds.
func TestContractContentAgentAcceptsThePreviewsArguments(t *testing.T) {
	bin := serverbin.ContentAgent(t)
	for _, c := range []struct {
		name string
		p    v1alpha1.PreviewsSpec
	}{
		{"pull requests", v1alpha1.PreviewsSpec{Domain: "preview.example.com", PullRequests: true}},
		{"branches, ttl, max at the bounds", v1alpha1.PreviewsSpec{Domain: "p.example.com", Branches: []string{"feature/*", "-draft-*", "release/[0-9]*"},
			TTL: &metav1.Duration{Duration: 720 * time.Hour}, Max: ptr.To[int32](50)}},
		{"smallest", v1alpha1.PreviewsSpec{Domain: "p.example.com", PullRequests: true, TTL: &metav1.Duration{Duration: time.Minute}, Max: ptr.To[int32](1)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			site := gitSite(v1alpha1.GitContent{URL: "https://github.com/example/docs.git", Ref: "main"})
			site.Spec.Previews = &c.p
			args := gitcontent.FetchArgs(site)
			if !strings.Contains(strings.Join(args, " "), "--previews-max") {
				t.Fatalf("no --previews-max in %q", args)
			}
			code, out := parseOnly(t, bin, args)
			if code != 0 || !strings.Contains(out, "Usage of fetch") {
				t.Fatalf("content-agent refuses the operator's arguments (exit %d)\nargs: %s\noutput: %s", code, serverbin.QuoteArgs(args), out)
			}
		})
	}
}
