//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// skewProtection (i): issue 41's skew protection in kind. www turns it on live (spec.server.skewProtection, a
// site value change: no rollout), then a deploy renames its stylesheet, as a build with hashed asset names does.
// A page loaded before the deploy still asks for the old name: every pod answers it from the previous deploy's tree
// on its disk, 200 with the old bytes, X-Hyperstatic-Deploy naming that deploy and Cache-Control private; a
// navigation to the same path is never answered stale (404). The window then shrinks to 1 s: the old name is a
// 404 on every pod, with the same pods throughout.
func (sc *gitScenario) skewProtection(t *testing.T) {
	ctx := ctxFor(t, 5*time.Minute)
	changeServerSpec(ctx, t, sc.ns, "www", func(s *v1alpha1.ServerSpec) {
		s.SkewProtection = &v1alpha1.SkewProtection{Window: metav1.Duration{Duration: time.Hour}}
	})
	waitSiteValueCondition(t, sc.ns, "www", metav1.ConditionTrue, "")

	site := getSite(t, sc.ns, "www")
	pods := gitServerPods(ctxFor(t, time.Minute), t, site)
	pages := newPodPages(t, pods)
	before := sc.repo.heads["main"]
	oldCSS := fileOf(sc.repo.trees["main"], "css/site.css")

	// The deploy: css/site.css becomes css/site.2.css and the home page links the new name.
	files := maps.Clone(sc.repo.trees["main"])
	delete(files, "css/site.css")
	files["css/site.2.css"] = gittestserver.Regular(string(oldCSS.data) + "a { color: #884400 }\n")
	home := page("home", "skew") + `<link rel="stylesheet" href="/css/site.2.css">` + "\n"
	files["index.html"] = gittestserver.Regular(home)
	start := time.Now()
	commit, _ := sc.repo.push(t, "main", "skew: the stylesheet renamed", files)
	if st := sc.hook.send(t, githubPush(sc.repo.name, "main", before, commit, "skew")); st/100 != 2 {
		t.Fatalf("the fetcher answered the push webhook with %d, want 2xx", st)
	}
	measurePushServed(t, site, pages, siteFile{"/index.html", []byte(home)}, commit.String(), start, 2*time.Minute)

	for _, p := range pods {
		code, body, h := pages.getWith(ctx, t, p.Name, oldCSS.path, map[string]string{"Accept": "text/css,*/*;q=0.1", "Sec-Fetch-Dest": "style"})
		if code != http.StatusOK || string(body) != string(oldCSS.data) || h.Get("X-Hyperstatic-Deploy") != before.String() ||
			h.Get("Cache-Control") != "private, max-age=60" {
			t.Errorf("pod %s: the old page's stylesheet in the window: %d (%d bytes, want the previous deploy's %d), X-Hyperstatic-Deploy %q (want %s), Cache-Control %q",
				p.Name, code, len(body), len(oldCSS.data), h.Get("X-Hyperstatic-Deploy"), before.String()[:12], h.Get("Cache-Control"))
		}
		if code, _, h := pages.getWith(ctx, t, p.Name, oldCSS.path, map[string]string{"Sec-Fetch-Dest": "document", "Accept": "text/html"}); code != http.StatusNotFound {
			t.Errorf("pod %s: a navigation to %s answered %d (X-Hyperstatic-Deploy %q), want 404: a navigation is never served stale",
				p.Name, oldCSS.path, code, h.Get("X-Hyperstatic-Deploy"))
		}
	}
	t.Logf("skew protection: %s served from deploy %s by %d pods in the window; a navigation to it 404", oldCSS.path, before.String()[:12], len(pods))

	// The window shrinks below the time since the deploy: the old name is gone everywhere.
	changeServerSpec(ctx, t, sc.ns, "www", func(s *v1alpha1.ServerSpec) {
		s.SkewProtection = &v1alpha1.SkewProtection{Window: metav1.Duration{Duration: time.Second}}
	})
	waitSiteValueCondition(t, sc.ns, "www", metav1.ConditionTrue, "")
	eventually(t, time.Minute, "the old stylesheet 404 on every pod after the window", func(ctx context.Context) (bool, string, error) {
		for _, p := range pods {
			if code, _, h := pages.getWith(ctx, t, p.Name, oldCSS.path, map[string]string{"Accept": "text/css"}); code != http.StatusNotFound {
				return false, fmt.Sprintf("pod %s: %d (X-Hyperstatic-Deploy %q)", p.Name, code, h.Get("X-Hyperstatic-Deploy")), nil
			}
		}
		return true, "", nil
	})
	sc.requireSamePods(t, site)
}

// getWith reads path from pod with the given request headers and returns the status, the body and the headers
// (0 and the error's text in the body when the request failed).
func (pp *podPages) getWith(ctx context.Context, t *testing.T, pod, path string, headers map[string]string) (int, []byte, http.Header) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pp.fwd[pod].addr()+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := pp.client.Do(req)
	if err != nil {
		return 0, []byte(err.Error()), http.Header{}
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, body, resp.Header
}
