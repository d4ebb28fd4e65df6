package contract

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/desired"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// The site value's live path, as the operator reads it (controllers/staticsite/step_sitevalue.go): a running server
// whose site value file is replaced the way the kubelet replaces a mounted ConfigMap (a new file renamed over the
// old name) serves the new value under the operator's revision; one it refuses (a 404 page the content lacks)
// leaves the previous revision serving, counts a failure and says why on /load-error, all read by the operator's
// own scraper; the next good value serves again.
func TestContractSiteValueReloadReadByTheScraper(t *testing.T) {
	bin := serverbin.Require(t)
	serverbin.RequireSiteValue(t, bin)
	dir := t.TempDir()
	file := filepath.Join(dir, sitevalue.Key)
	replace := func(v []byte) {
		t.Helper()
		tmp := filepath.Join(dir, ".next")
		if err := os.WriteFile(tmp, v, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, file); err != nil {
			t.Fatal(err)
		}
	}
	first := site(servedSpec)
	replace(sitevalue.Render(first).Bytes)
	args := serverbin.SetFlag(t, desired.ServerArgs(first), "--root", writeSite(t))
	srv := serverbin.Start(t, bin, serverbin.SetFlag(t, args, "--site", file))
	waitSample := sampler(t, srv)
	r1 := sitevalue.Render(first).Revision
	waitSample("the first value", func(s podmetrics.Sample) bool { return s.SiteValueRevision == r1 })

	second := site(servedSpec)
	second.Spec.Server.Redirects = []v1alpha1.Redirect{{From: "/old", To: "/new", Status: 302}}
	second.Spec.Server.CacheControl = []v1alpha1.CacheControlRule{{Glob: "*.html", Value: "no-store"}}
	r2 := sitevalue.Render(second).Revision
	replace(sitevalue.Render(second).Bytes)
	waitSample("the second value", func(s podmetrics.Sample) bool { return s.SiteValueRevision == r2 })
	resp, err := (&http.Client{Timeout: 5 * time.Second, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).
		Get("http://" + srv.HTTPAddr + "/old")
	if err != nil {
		t.Fatal(err)
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusFound || resp.Header.Get("Location") != "/new" {
		t.Errorf("GET /old after the reload: %s Location %q, want 302 /new", resp.Status, resp.Header.Get("Location"))
	}

	refused := site(servedSpec)
	refused.Spec.Server.NotFoundPage = "/missing.html"
	replace(sitevalue.Render(refused).Bytes)
	s := waitSample("the refused value", func(s podmetrics.Sample) bool { return s.SiteValueLoadFailures > 0 })
	if s.SiteValueRevision != r2 || !strings.Contains(s.LoadError, "/missing.html") || !strings.HasPrefix(s.LoadError, sitevalue.LoadErrorPrefix) {
		t.Errorf("after a refused value: revision %q (want %s still serving), LoadError %q (want the reason naming /missing.html, starting %q)",
			s.SiteValueRevision, r2, s.LoadError, sitevalue.LoadErrorPrefix)
	}
	replace(sitevalue.Render(first).Bytes)
	waitSample("a good value again", func(s podmetrics.Sample) bool { return s.SiteValueRevision == r1 && s.LoadError == "" })
}
