//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/andybalholm/brotli"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"

	"hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// pydocs (14g): the real site (the Python 3.11 docs, 1,065 files, 67 MB, _out/pydocs as scenario 10 reads
// it) pushed as a repository and served from Git by 2 pods: the time from the StaticSite's creation to Ready, a
// sample of files byte for byte from each pod, a one-page change (the v2 page of `make e2e-pydocs-images`) pushed
// with its webhook and the time until every pod serves it, and brotli for an HTML page once the server's background
// encoder has made it (a Git site carries no precompressed siblings).
//
// The push bound (gitPydocsBound) is a guard against a regression, not the goal: the goal is the 10 s,
// which the log line's figure is compared with in docs/bench; the fetcher then fetches the whole 67 MB pack (depth
// 1), writes the changed page (the others are linked from the tree before), checks and bundles the tree, and each
// puller (100m of CPU) reads the bundle's file list and the page and links the rest (internal/contentagent/
// filesinstall.go; before, it downloaded and extracted all 67 MB, about 3 s at 100m), on a shared 2-core machine.
// It was 60 s until CI's run
// of 3d64b6d (2026-12-03) failed this step after 95.6 s with every other scenario beside it, the time the steps
// take with a push of just over 60 s; the same step took 17.9 s with two scenarios beside it. 120 s still catches
// a pipeline that stalls or refetches in a loop.
func (sc *gitScenario) pydocs(t *testing.T) {
	srv := sc.srv
	files := filesOf(t, cfg.pydocsDir)
	v2 := filesOf(t, cfg.pydocsV2Dir)
	if len(v2) != 1 {
		t.Fatalf("%s holds %d files, want the one changed page (make e2e-pydocs-images)", cfg.pydocsV2Dir, len(v2))
	}
	changed := v2[0]
	tree := map[string]gittestserver.File{}
	for _, f := range files {
		tree[strings.TrimPrefix(f.path, "/")] = gittestserver.Regular(string(f.data))
	}
	repo := srv.repo(t, "pydocs.git")
	first, took := repo.push(t, "main", "Python 3.11 docs", tree)
	t.Logf("pushed the docs (%d files) in %s", len(tree), took.Round(100*time.Millisecond))

	ns := newNamespace(t, "gitdocs", false)
	token := []byte(randomToken(t))
	gitCredentials(t, ns, "git-https", srv.httpsCredentials())
	gitSecret(t, ns, "git-webhook", map[string][]byte{"token": token})
	site := gitSite(ns, "pydocs", gitSource(httpsURL("pydocs.git"), "main", "git-https", "git-webhook", 0), 2, gitPydocsSiteCPU)
	mem := resource.MustParse("256Mi") // what scenario 10a's baked site gets: the docs and their variants in memory
	site.Spec.Memory = &mem
	created := time.Now()
	if err := k8s.Create(ctxFor(t, 30*time.Second), site); err != nil {
		t.Fatalf("create StaticSite pydocs: %v", err)
	}
	waitSiteReady(t, ns, "pydocs", 5*time.Minute)
	t.Logf("MEASURED pydocs git apply -> Ready: %.0f s (StaticSite created with the repository pushed; status read every 1 s; 2 pods of %s)",
		time.Since(created).Seconds(), gitPydocsSiteCPU)
	site = waitGitRevision(t, ns, "pydocs", first.String(), time.Minute)
	pods := gitServerPods(ctxFor(t, time.Minute), t, site)
	if len(pods) != 2 {
		t.Fatalf("%d running server pods, want 2", len(pods))
	}
	checkBytesOnPods(t, ns, "fetch-sample", pods, pydocsSample(files, changed.path))

	hook := &webhook{pf: startPortForward(t, ns, "svc/pydocs-git-webhook", 80), secret: token}
	commit, start := pushAndNotify(t, repo, hook, "main", "one page changed", map[string]gittestserver.File{
		strings.TrimPrefix(changed.path, "/"): gittestserver.Regular(string(changed.data))})
	pages := newPodPages(t, pods)
	served := measurePushServed(t, site, pages, changed, commit.String(), start, 3*time.Minute)
	t.Logf("MEASURED pydocs git push -> served by every pod (webhook): %.1f s (one page of %d files changed)", served.Seconds(), len(files))
	if served > gitPydocsBound {
		t.Errorf("push -> served by every pod took %s, want at most %s", served.Round(100*time.Millisecond), gitPydocsBound)
	}

	// The encoder works smallest file first: the smallest HTML page it encodes (>= 1 KiB) is among its first.
	brPage := smallestPage(files)
	start = time.Now()
	pages.waitBrotli(t, brPage, 3*time.Minute)
	t.Logf("%s (%d bytes) served as brotli by every pod %s after the check started", brPage.path, len(brPage.data), time.Since(start).Round(100*time.Millisecond))
	for i := range pods {
		checkBrotli(t, ns, fmt.Sprintf("fetch-br-%d", i), podBase(&pods[i]), []siteFile{brPage})
	}
	pydocsPreview(t, srv, ns, repo, hook, siteFile{changed.path, []byte(repo.trees["main"][strings.TrimPrefix(changed.path, "/")].Data)})
}

// gitPydocsPreviewsDomain is the docs site's spec.previews.domain: www holds gitPreviewsDomain's wildcard, and a
// domain's wildcard belongs to one site.
const gitPydocsPreviewsDomain = "docs-preview.e2e.test"

// gitPydocsPreviewGoal is issue 41's: a pull request's preview of the Python docs served by every pod within 10 s of
// its push, with the webhook. The MEASURED line says whether it was met; the step fails past gitPydocsBound only,
// as the push does (a loaded CI run).
const gitPydocsPreviewGoal = 10 * time.Second

// pydocsPreview (end of 14g): previews turned on for the docs site (its pods roll into the server's --sites mode),
// then a GitHub pull request changing one page: pushed, its event delivered, and the time until every pod serves
// the page's new bytes under pr-1--pydocs.<domain> (MEASURED, goal gitPydocsPreviewGoal). The pods hold production's
// tree, so a preview's tree links every file it shares with it and reads only the changed page (the fetcher's and
// the pullers' file lists, docs/design/git-content.md). Production still serves the page's bytes of main. Closed,
// the preview answers 404 on every pod and leaves status.previews; with E2E_MANY_PREVIEWS=1 (opt-in: see
// manyPydocsPreviews), then
// manyPydocsPreviews: 20 at once, every file of each checked, with the pods' memory.
func pydocsPreview(t *testing.T, srv *gitServer, ns string, repo *gitRepo, hook *webhook, page siteFile) {
	t.Helper()
	ctx := ctxFor(t, 5*time.Minute)
	site := getSite(t, ns, "pydocs")
	orig := site.DeepCopy()
	site.Spec.Previews = &v1alpha1.PreviewsSpec{Domain: gitPydocsPreviewsDomain, PullRequests: true, Max: ptr.To[int32](gitManyPreviews)}
	if err := k8s.Patch(ctx, site, client.MergeFrom(orig)); err != nil {
		t.Fatalf("patch spec.previews: %v", err)
	}
	rolled := time.Now()
	pods := waitPodsWithArg(t, site, "--sites")
	waitGitRevision(t, ns, "pydocs", repo.heads["main"].String(), 3*time.Minute)
	pp := newPodPages(t, pods)
	prodHost := "pydocs." + ns + ".svc"
	pp.requireServeAs(t, prodHost, page)
	t.Logf("previews on: both pods in --sites mode, serving production, %.1f s after the patch", time.Since(rolled).Seconds())

	files := maps.Clone(repo.trees["main"])
	pr := siteFile{page.path, append(bytes.Clone(page.data), "\n<!-- pull request 1 -->\n"...)}
	files[strings.TrimPrefix(page.path, "/")] = gittestserver.Regular(string(pr.data))
	start := time.Now()
	commit, _ := repo.push(t, "feature", "a pull request's change to one page", files)
	deliverPull(t, srv, repo.name, hook, gittestserver.Opened, 1, commit, "feature")
	host := "pr-1--pydocs." + gitPydocsPreviewsDomain
	perPod := pp.servedAs(t, host, pr, start, 3*time.Minute)
	served := maxDuration(perPod)
	t.Logf("MEASURED pydocs git pull request opened (push + webhook) -> preview %s served by every pod: %.1f s (goal %s: %s; %v; one page of 1065 files changed)",
		host, served.Seconds(), gitPydocsPreviewGoal, goalWord(served <= gitPydocsPreviewGoal), roundAll(perPod))
	if served > gitPydocsBound {
		t.Errorf("pull request -> preview served by every pod took %s, want at most %s", served.Round(100*time.Millisecond), gitPydocsBound)
	}
	pp.requireServeAs(t, prodHost, page)

	closed := time.Now()
	deliverPull(t, srv, repo.name, hook, gittestserver.Closed, 1, commit, "feature")
	waitPreviewsGone(t, pp, ns, "pydocs", []string{host}, page.path, time.Minute)
	pp.requireServeAs(t, prodHost, page)
	t.Logf("closed: %s 404 on every pod, status.previews empty %.1f s after the close", host, time.Since(closed).Seconds())

	if os.Getenv("E2E_MANY_PREVIEWS") == "1" {
		manyPydocsPreviews(t, srv, ns, repo, hook, pp, page)
	}
}

// smallestPage is the smallest HTML file of at least 1 KiB (the encoder's threshold).
func smallestPage(files []siteFile) siteFile {
	var pages []siteFile
	for _, f := range files {
		if strings.HasSuffix(f.path, ".html") && len(f.data) >= 1024 {
			pages = append(pages, f)
		}
	}
	sort.Slice(pages, func(i, j int) bool { return len(pages[i].data) < len(pages[j].data) })
	return pages[0]
}

// waitBrotli polls every pod (asking for br) until each answers with Content-Encoding br and a body that decodes to
// the page's exact bytes; identity bytes mean the variant is not made yet.
func (pp *podPages) waitBrotli(t *testing.T, page siteFile, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, "brotli "+page.path+" from every pod", func(ctx context.Context) (bool, string, error) {
		var waiting []string
		for _, p := range pp.pods {
			body, enc, err := pp.get(ctx, p.Name, page.path, "br")
			switch {
			case err != nil:
				waiting = append(waiting, p.Name+": "+err.Error())
			case enc == "" && bytes.Equal(body, page.data):
				waiting = append(waiting, p.Name+": identity")
			case enc != "br":
				return false, "", fmt.Errorf("pod %s: Content-Encoding %q to a client asking for br only", p.Name, enc)
			default:
				dec, err := io.ReadAll(brotli.NewReader(bytes.NewReader(body)))
				if err != nil || !bytes.Equal(dec, page.data) {
					return false, "", fmt.Errorf("pod %s: brotli of %d bytes that does not decode to the page (%w)", p.Name, len(body), err)
				}
			}
		}
		return len(waiting) == 0, strings.Join(waiting, "; "), nil
	})
}
