package podmetrics

import (
	"net/http"
	"strings"
	"testing"
)

const siteValueExposition = `# TYPE hyperstatic_site_value_info gauge
hyperstatic_site_value_info{revision="sha256:0123456789abcdef"} 1
# TYPE hyperstatic_site_value_loads_total counter
hyperstatic_site_value_loads_total{result="success"} 3
hyperstatic_site_value_loads_total{result="failure"} 2
`

func TestParseSiteValue(t *testing.T) {
	s, err := Parse(strings.NewReader(exposition + siteValueExposition))
	if err != nil {
		t.Fatal(err)
	}
	if s.SiteValueRevision != "sha256:0123456789abcdef" || s.SiteValueLoadFailures != 2 {
		t.Fatalf("revision %q, failures %v", s.SiteValueRevision, s.SiteValueLoadFailures)
	}
	// A server older than the site value: nothing reported, not an error.
	if s, err = Parse(strings.NewReader(exposition)); err != nil || s.SiteValueRevision != "" || s.SiteValueLoadFailures != 0 {
		t.Fatalf("old server: %+v %v", s, err)
	}
	// A hostile revision label is bounded and escaped before it can reach a status.
	hostile := strings.Replace(siteValueExposition, "sha256:0123456789abcdef", "\\n"+strings.Repeat("A", 500), 1)
	if s, err = Parse(strings.NewReader(exposition + hostile)); err != nil || len(s.SiteValueRevision) > maxRevisionLength || strings.Contains(s.SiteValueRevision, "\n") {
		t.Fatalf("hostile revision kept as %q (%v)", s.SiteValueRevision, err)
	}
}

// A refused site value's reason is read from /load-error even while the content loads fine.
func TestScrapeReadsTheLoadErrorOfARefusedSiteValue(t *testing.T) {
	s, _, pod := serve(t, func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == LoadErrorPath {
			_, _ = w.Write([]byte("site value: notFoundPage: /404.html is not in the content\n"))
			return
		}
		_, _ = w.Write([]byte(exposition + siteValueExposition + "hyperstatic_content_load_failed 0\n"))
	})
	sample, err := s.Scrape(scrapeContext(t), pod)
	if err != nil {
		t.Fatal(err)
	}
	if sample.LoadFailed || sample.LoadError != "site value: notFoundPage: /404.html is not in the content" {
		t.Fatalf("load failed %v, error %q", sample.LoadFailed, sample.LoadError)
	}
}
