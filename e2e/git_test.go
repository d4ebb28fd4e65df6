//go:build e2e

package e2e

import (
	"context"
	"fmt"
	mathrand "math/rand/v2"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/go-git/go-git/v5/plumbing"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/contentagent"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
)

// Bounds of the push scenarios. The webhook goal is the (a push served by every pod within 10 s); the
// polling bound is the interval plus a margin for the fetch, the pullers and the reload on a loaded machine.
const (
	gitWebhookBound  = 10 * time.Second
	gitPollInterval  = 10 * time.Second
	gitPollBound     = gitPollInterval + 20*time.Second
	gitPydocsBound   = 120 * time.Second // see gitScenario.pydocs
	gitStatusLag     = 10 * time.Second  // the status after the pods (measurePushServed)
	gitSmallSiteCPU  = "100m"
	gitPydocsSiteCPU = "250m"
)

// gitScenario is what the steps of scenario 14 share: one Git server, one private repository (branch main for
// the webhook site "www", branch poll for the polling site "poll"), one namespace.
type gitScenario struct {
	srv   *gitServer
	repo  *gitRepo
	ns    string
	token []byte   // the webhook Secret's token
	hook  *webhook // to www's fetcher: its forward starts in step b, once the fetcher runs
	pods  map[types.UID]int32
	// rollbackCommit and rollbackTo are step d's good commit and its home page: the deploy step h pins.
	rollbackCommit string
	rollbackTo     siteFile
}

// testContentFromGit: scenario 14, content from Git (issue 30), on the real operator, fetcher, pullers and server,
// against the Git server in kind (gitserver_test.go). The steps run in order and build on each other; a first step
// that fails ends the scenario.
func testContentFromGit(t *testing.T) {
	requireOperator(t)
	srv := deployGitServer(t)
	sc := &gitScenario{srv: srv, repo: srv.repo(t, "site.git"), ns: newNamespace(t, "git", false), token: []byte(randomToken(t))}
	ctx := ctxFor(t, time.Minute)
	sc.hook = &webhook{pf: &portForward{ns: sc.ns, target: "svc/www-git-webhook", remotePort: 80}, secret: sc.token}
	t.Cleanup(sc.hook.pf.stop)

	v1 := smallTree("v1")
	sc.repo.push(t, "main", "v1", v1)
	sc.repo.push(t, "poll", "v1 on the polled branch", v1)
	gitCredentials(t, sc.ns, "git-https", srv.httpsCredentials())
	gitSecret(t, sc.ns, "git-webhook", map[string][]byte{"token": sc.token})
	// Both sites are created at once: their fetchers and pods start side by side.
	www := gitSite(sc.ns, "www", gitSource(httpsURL("site.git"), "main", "git-https", "git-webhook", 0), 2, gitSmallSiteCPU)
	poll := gitSite(sc.ns, "poll", gitSource(httpsURL("site.git"), "poll", "git-https", "", gitPollInterval), 1, gitSmallSiteCPU)
	for _, s := range []*v1alpha1.StaticSite{www, poll} {
		s.Spec.Memory = &smallMemory
		if err := k8s.Create(ctx, s); err != nil {
			t.Fatalf("create StaticSite %s: %v", s.Name, err)
		}
	}
	if !t.Run("a-private-https-2-pods", sc.privateHTTPS) {
		t.FailNow()
	}
	t.Run("b-push-webhook", sc.pushWebhook)
	t.Run("c-push-polling", sc.pushPolling)
	t.Run("d-invalid-commit-kept-out", sc.invalidCommit)
	t.Run("e-ssh", sc.overSSH)
	t.Run("f-credentials-rotated", sc.credentialsRotated)
	t.Run("h-rollback-under-load", sc.rollbackUnderLoad)
	t.Run("i-skew-protection", sc.skewProtection)
	t.Run("j-previews", sc.previews) // gitpreviews_test.go: rolls www's pods into --sites mode, so last of www's steps
	// The small sites' pods go before the real site's start: the node has about 1 CPU to spare.
	deleteNamespace(t, sc.ns)
	t.Run("g-pydocs", sc.pydocs)
}

// smallTree is the small site at version v: pages, a stylesheet, a binary file, a 40 KiB page (bodies over 16 KiB
// take the server's other write path) and a valid _redirects (read by the server, never served).
func smallTree(v string) map[string]gittestserver.File {
	rng := mathrand.New(mathrand.NewPCG(30, 1))
	logo := make([]byte, 3000)
	for i := range logo {
		logo[i] = byte(rng.Uint32())
	}
	big := strings.Repeat("<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit.</p>\n", 640)
	return map[string]gittestserver.File{
		"index.html":            gittestserver.Regular(page("home", v)),
		"docs/guide/index.html": gittestserver.Regular(page("guide", v)),
		"css/site.css":          gittestserver.Regular("body { font: 16px/1.5 sans-serif; color: #223344 }\n"),
		"img/logo.bin":          gittestserver.Regular(string(logo)),
		"big.html":              gittestserver.Regular("<!doctype html><title>big</title>\n" + big),
		"_redirects":            gittestserver.Regular("/old /index.html 301\n"),
	}
}

// page is a small HTML page that names its version.
func page(name, v string) string {
	return fmt.Sprintf("<!doctype html><title>%s %s</title><p>The %s page, version %s.</p>\n", name, v, name, v)
}

// servedFiles are the files of a tree a server serves (not _redirects nor _headers), as URL paths and bytes.
func servedFiles(tree map[string]gittestserver.File) []siteFile {
	var out []siteFile
	for p, f := range tree {
		if p == "_redirects" || p == "_headers" {
			continue
		}
		out = append(out, siteFile{path: "/" + p, data: []byte(f.Data)})
	}
	return out
}

func fileOf(tree map[string]gittestserver.File, p string) siteFile {
	return siteFile{path: "/" + p, data: []byte(tree[p].Data)}
}

// privateHTTPS (a): a private repository over HTTPS, basic auth and the test CA's ca.crt in a Flux-format
// Secret, served by 2 pods: every file's exact bytes from each pod, status.content.revision naming the pushed
// commit served 2/2, the Commit and Served columns, ContentAvailable True GitRevisionFetched; the Git Secret is
// in no server pod; a URL outside the tenancy policy's prefixes is refused.
func (sc *gitScenario) privateHTTPS(t *testing.T) {
	commit := sc.repo.heads["main"].String()
	site := waitGitRevision(t, sc.ns, "www", commit, 4*time.Minute)
	t.Logf("www: %s after its creation, %s", time.Since(site.CreationTimestamp.Time).Round(time.Second), revisionString(revisionOf(site)))
	if site.Status.ContentSource != v1alpha1.ContentSourceGit {
		t.Errorf("status.contentSource = %q, want git", site.Status.ContentSource)
	}
	if rev := site.Status.ContentRevision; !strings.HasSuffix(rev, "@sha1:"+commit) || !strings.Contains(rev, "main") {
		t.Errorf("status.contentRevision = %q, want main's ref @sha1:%s", rev, commit)
	}
	rev := revisionOf(site)
	if rev.ShortCommit != commit[:12] || rev.Ref != "refs/heads/main" || rev.Served != "2/2" || rev.CommitTime == nil {
		t.Errorf("status.content.revision = %+v, want shortCommit %s, ref refs/heads/main, served 2/2, a commit time", *rev, commit[:12])
	}
	pods := gitServerPods(ctxFor(t, time.Minute), t, site)
	if len(pods) != 2 {
		t.Fatalf("%d running server pods, want 2", len(pods))
	}
	sc.pods = map[types.UID]int32{}
	for i := range pods {
		sc.pods[pods[i].UID] = restarts(&pods[i])
		requireNoSecret(t, &pods[i], "git-https", "git-webhook")
	}
	requirePodsRevision(t, pods, commit)
	checkBytesOnPods(t, sc.ns, "fetch-v1", pods, servedFiles(sc.repo.trees["main"]))

	out, err := kubectl(t, 30*time.Second, "-n", sc.ns, "get", "hss", "www")
	if err != nil {
		t.Fatalf("kubectl get hss: %v: %s", err, out)
	}
	t.Logf("kubectl get hss www:\n%s", out)
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "COMMIT") || !strings.Contains(lines[0], "SERVED") ||
		!strings.Contains(lines[1], commit[:12]) || !strings.Contains(lines[1], "2/2") {
		t.Errorf("kubectl get hss does not show the Commit %s and Served 2/2 columns", commit[:12])
	}
	requireOutsideURLRefused(t, sc.ns)
}

// requireNoSecret fails if the pod mounts or reads any of the Secrets: the Git credentials and the webhook token
// belong to the fetcher only, never to the internet-facing server pods.
func requireNoSecret(t *testing.T, p *corev1.Pod, names ...string) {
	t.Helper()
	uses := map[string]bool{}
	for _, v := range p.Spec.Volumes {
		if v.Secret != nil {
			uses[v.Secret.SecretName] = true
		}
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					uses[s.Secret.Name] = true
				}
			}
		}
	}
	for _, c := range append(append([]corev1.Container{}, p.Spec.InitContainers...), p.Spec.Containers...) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				uses[e.ValueFrom.SecretKeyRef.Name] = true
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				uses[e.SecretRef.Name] = true
			}
		}
	}
	for _, n := range names {
		if uses[n] {
			t.Errorf("server pod %s uses the Secret %s", p.Name, n)
		}
	}
}

// requireOutsideURLRefused: a site whose URL is not under the tenancy policy's Git prefixes (the chart allows the
// test server's only, helmInstallArgs) gets no fetcher and says why.
func requireOutsideURLRefused(t *testing.T, ns string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	s := gitSite(ns, "outside", gitSource("https://git.example.invalid/site.git", "main", "", "", 0), 1, gitSmallSiteCPU)
	if err := k8s.Create(ctx, s); err != nil {
		t.Fatalf("create StaticSite outside: %v", err)
	}
	c := waitCondition(t, ns, "outside", v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonPolicyViolation, time.Minute)
	if !strings.Contains(c.Message, "spec.content.git.url") {
		t.Errorf("the policy violation does not name spec.content.git.url: %s", c.Message)
	}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: "outside-git"}, &appsv1.Deployment{}); err == nil {
		t.Errorf("a fetcher Deployment exists for a site the policy refuses")
	}
	if err := k8s.Delete(ctx, s); err != nil {
		t.Errorf("delete StaticSite outside: %v", err)
	}
}

// pushWebhook (b): a push changing a page, then the forge's signed webhook: every pod serves the new page within
// gitWebhookBound of the push (each pod read directly), and the status says every ready pod serves the commit.
// A delivery signed with another key is refused first and fetches nothing.
func (sc *gitScenario) pushWebhook(t *testing.T) {
	site := getSite(t, sc.ns, "www")
	pods := gitServerPods(ctxFor(t, time.Minute), t, site)
	pages := newPodPages(t, pods)
	sc.hook.pf.restart(t) // kept for steps d and f; stopped when the scenario ends

	head := sc.repo.heads["main"]
	if st := sc.hook.sendSigned(t, githubPush("site.git", "main", head, head, "forged"), []byte("not the token")); st != 401 {
		t.Errorf("a delivery signed with another key got %d, want 401", st)
	}
	v2 := page("home", "v2")
	commit, start := pushAndNotify(t, sc.repo, sc.hook, "main", "v2: home page", map[string]gittestserver.File{"index.html": gittestserver.Regular(v2)})
	served := measurePushServed(t, site, pages, siteFile{"/index.html", []byte(v2)}, commit.String(), start, time.Minute)
	t.Logf("MEASURED git push -> served by every pod (webhook): %.1f s", served.Seconds())
	if served > gitWebhookBound {
		t.Errorf("push -> served by every pod took %s, want at most %s", served.Round(100*time.Millisecond), gitWebhookBound)
	}
	requirePodsRevision(t, pods, commit.String())
	sc.requireSamePods(t, site)
}

// requireSamePods fails if www's pods are not the ones of step a, or restarted: a new commit is swapped in live.
func (sc *gitScenario) requireSamePods(t *testing.T, site *v1alpha1.StaticSite) {
	t.Helper()
	now := gitServerPods(ctxFor(t, time.Minute), t, site)
	if len(now) != len(sc.pods) {
		t.Errorf("%d server pods, %d before", len(now), len(sc.pods))
	}
	for i := range now {
		r, existed := sc.pods[now[i].UID]
		if !existed {
			t.Errorf("pod %s is new: the change replaced a pod", now[i].Name)
		} else if restarts(&now[i]) != r {
			t.Errorf("pod %s restarted (%d -> %d)", now[i].Name, r, restarts(&now[i]))
		}
	}
}

// pushPolling (c): a site with no webhook and interval 10s takes a push by its next poll: every pod serves it
// within the interval plus a margin.
func (sc *gitScenario) pushPolling(t *testing.T) {
	site := waitGitRevision(t, sc.ns, "poll", sc.repo.heads["poll"].String(), 3*time.Minute)
	pages := newPodPages(t, gitServerPods(ctxFor(t, time.Minute), t, site))
	v2 := page("home", "polled v2")
	start := time.Now()
	commit, _ := sc.repo.change(t, "poll", "polled v2", map[string]gittestserver.File{"index.html": gittestserver.Regular(v2)})
	served := measurePushServed(t, site, pages, siteFile{"/index.html", []byte(v2)}, commit.String(), start, 2*time.Minute)
	t.Logf("MEASURED git push -> served by every pod (polling, interval %s): %.1f s", gitPollInterval, served.Seconds())
	if served > gitPollBound {
		t.Errorf("push -> served by every pod took %s, want at most %s (interval + margin)", served.Round(100*time.Millisecond), gitPollBound)
	}
	// Its pods go: the next steps need the CPU.
	if err := k8s.Delete(ctxFor(t, 30*time.Second), site); err != nil {
		t.Errorf("delete StaticSite poll: %v", err)
	}
}

// invalidCommit (d): a commit whose _redirects fails the server's --check is never served: the previous commit
// keeps serving its exact bytes on every pod, ContentAvailable False GitInvalidContent names the file and line, a
// Warning event says so, Ready stays True; the next good commit is taken with no edit of the site.
func (sc *gitScenario) invalidCommit(t *testing.T) {
	site := getSite(t, sc.ns, "www")
	pods := gitServerPods(ctxFor(t, time.Minute), t, site)
	pages := newPodPages(t, pods)
	good := sc.repo.heads["main"].String()
	goodIndex := fileOf(sc.repo.trees["main"], "index.html")

	bad, _ := pushAndNotify(t, sc.repo, sc.hook, "main", "v3: a broken _redirects", map[string]gittestserver.File{
		"index.html": gittestserver.Regular(page("home", "v3, never served")),
		"_redirects": gittestserver.Regular("/old /index.html 301\n/lonely\n"),
	})
	c := waitCondition(t, sc.ns, "www", v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, v1alpha1.ReasonGitInvalidContent, time.Minute)
	t.Logf("ContentAvailable: %s", c.Message)
	if !strings.Contains(c.Message, "_redirects:2") {
		t.Errorf("the condition does not name the file and line (_redirects:2): %s", c.Message)
	}
	t.Logf("Warning event: %s", requireWarning(t, sc.ns, "www", v1alpha1.ReasonGitInvalidContent, "_redirects:2"))
	site = getSite(t, sc.ns, "www")
	requireReady(t, site)
	if rev := revisionOf(site); rev == nil || rev.Commit != good || rev.Served != "2/2" {
		t.Errorf("status.content.revision = %s, want %s still served 2/2 (the bad commit is %s)", revisionString(rev), good[:12], bad.String()[:12])
	}
	pages.requireServe(t, goodIndex)
	requirePodsRevision(t, pods, good)

	fixed := page("home", "v4")
	commit, start := pushAndNotify(t, sc.repo, sc.hook, "main", "v4: _redirects fixed", map[string]gittestserver.File{
		"index.html": gittestserver.Regular(fixed),
		"_redirects": gittestserver.Regular("/old /index.html 301\n/lonely /index.html 302\n"),
	})
	served := measurePushServed(t, site, pages, siteFile{"/index.html", []byte(fixed)}, commit.String(), start, time.Minute)
	t.Logf("the next good commit served by every pod %.1f s after its push, with no edit of the site", served.Seconds())
	sc.rollbackCommit, sc.rollbackTo = commit.String(), siteFile{"/index.html", []byte(fixed)}
	sc.requireSamePods(t, site)
}

// overSSH (e): a site following the same repository over SSH (the test's client key as identity, the server's host
// key pinned in known_hosts) serves main's commit, every file's exact bytes.
func (sc *gitScenario) overSSH(t *testing.T) {
	ctx := ctxFor(t, time.Minute)
	gitCredentials(t, sc.ns, "git-ssh", sc.srv.sshCredentials())
	site := gitSite(sc.ns, "ssh", gitSource(sshURL("site.git"), "main", "git-ssh", "", 0), 1, gitSmallSiteCPU)
	site.Spec.Memory = &smallMemory
	if err := k8s.Create(ctx, site); err != nil {
		t.Fatalf("create StaticSite ssh: %v", err)
	}
	commit := sc.repo.heads["main"].String()
	site = waitGitRevision(t, sc.ns, "ssh", commit, 3*time.Minute)
	t.Logf("ssh: serving %s %s after its creation", commit[:12], time.Since(site.CreationTimestamp.Time).Round(time.Second))
	pods := gitServerPods(ctx, t, site)
	checkBytesOnPods(t, sc.ns, "fetch-ssh", pods, servedFiles(sc.repo.trees["main"]))
	if err := k8s.Delete(ctx, site); err != nil {
		t.Errorf("delete StaticSite ssh: %v", err)
	}
}

// credentialsRotated (f): the Git server restarts with a new password. A push the fetcher cannot fetch with the old
// one shows as ContentAvailable False GitAuthFailed (a Warning event) while the last good commit keeps serving
// and Ready stays True. Then the site's Secret gets the new password and nothing else changes: the next push is
// served. How long the kubelet took to update the fetcher's Secret volume is measured by resending the push's
// webhook every 2 s (each delivery makes the fetcher read its credentials and fetch) until a fetch succeeds.
func (sc *gitScenario) credentialsRotated(t *testing.T) {
	site := getSite(t, sc.ns, "www")
	pages := newPodPages(t, gitServerPods(ctxFor(t, time.Minute), t, site))
	good := sc.repo.heads["main"].String()
	goodIndex := fileOf(sc.repo.trees["main"], "index.html")

	password := randomToken(t)
	sc.srv.restartWithPassword(t, password)
	sc.repo.auth.Password = password
	sc.repo.repush(t, "main") // the restarted server's repositories are empty
	refused, _ := pushAndNotify(t, sc.repo, sc.hook, "main", "v5: pushed after the password change",
		map[string]gittestserver.File{"index.html": gittestserver.Regular(page("home", "v5"))})
	// The fetcher reaches the restarted server through its Service, which may still lead nowhere for a moment
	// (GitUnreachable): the webhook is delivered again until a fetch is refused for its credentials.
	sc.resendUntil(t, refused.String(), time.Now(), time.Minute, "a fetch refused for its credentials", func(r contentagent.Revision) bool {
		return r.LastError != nil && r.LastError.Reason == "AuthFailed"
	})
	c := waitCondition(t, sc.ns, "www", v1alpha1.ConditionContentAvailable, metav1.ConditionFalse, v1alpha1.ReasonGitAuthFailed, time.Minute)
	t.Logf("ContentAvailable: %s", c.Message)
	t.Logf("Warning event: %s", requireWarning(t, sc.ns, "www", v1alpha1.ReasonGitAuthFailed))
	site = getSite(t, sc.ns, "www")
	requireReady(t, site)
	if rev := revisionOf(site); rev == nil || rev.Commit != good {
		t.Errorf("status.content.revision = %s, want %s still served (%s cannot be fetched)", revisionString(rev), good[:12], refused.String()[:12])
	}
	pages.requireServe(t, goodIndex)

	sec := &corev1.Secret{}
	ctx := ctxFor(t, 5*time.Minute)
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: sc.ns, Name: "git-https"}, sec); err != nil {
		t.Fatal(err)
	}
	sec.Data["password"] = []byte(password)
	if err := k8s.Update(ctx, sec); err != nil {
		t.Fatalf("update the site's Secret: %v", err)
	}
	updated := time.Now()
	v6 := page("home", "v6")
	commit, start := pushAndNotify(t, sc.repo, sc.hook, "main", "v6: after the Secret update",
		map[string]gittestserver.File{"index.html": gittestserver.Regular(v6)})
	fetched := sc.resendUntil(t, commit.String(), updated, 4*time.Minute, "the fetch of "+commit.String()[:12]+" with the new credentials",
		func(r contentagent.Revision) bool { return r.Commit == commit.String() })
	t.Logf("MEASURED git Secret update -> fetched with the new credentials (kubelet Secret volume update; webhook resent every 2 s): %.1f s", fetched.Seconds())
	served := measurePushServed(t, site, pages, siteFile{"/index.html", []byte(v6)}, commit.String(), start, time.Minute)
	t.Logf("the push after the Secret update served by every pod %.1f s after it, with no edit of the site", served.Seconds())
	sc.requireSamePods(t, site)
}

// resendUntil delivers main's push webhook for commit every 2 s until the fetcher's /revision (read through the
// pod proxy every 500 ms) satisfies done, and returns the time from since.
func (sc *gitScenario) resendUntil(t *testing.T, commit string, since time.Time, timeout time.Duration, what string, done func(contentagent.Revision) bool) time.Duration {
	t.Helper()
	fetcher := fetcherPod(t, sc.ns, "www")
	body := githubPush("site.git", "main", plumbing.ZeroHash, plumbing.NewHash(commit), "resent")
	ctx := ctxFor(t, timeout)
	lastSend, last := time.Now(), ""
	for {
		r, err := agentRevision(ctx, fetcher, fetcherPort)
		if err == nil && done(r) {
			return time.Since(since)
		}
		if err != nil {
			last = err.Error()
		} else if r.LastError != nil {
			last = r.LastError.Reason + ": " + r.LastError.Message
		}
		if time.Since(lastSend) >= 2*time.Second {
			sc.hook.send(t, body)
			lastSend = time.Now()
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no %s within %s (last: %s)", what, timeout, last)
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// fetcherPod is the running pod of a site's fetcher Deployment (<site>-git).
func fetcherPod(t *testing.T, ns, site string) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	eventually(t, time.Minute, "fetcher pod of "+site, func(ctx context.Context) (bool, string, error) {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: site + "-git"}, d); err != nil {
			return false, err.Error(), nil
		}
		sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
		if err != nil {
			return false, "", err
		}
		pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, err.Error(), nil
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				found = p
				return true, "", nil
			}
		}
		return false, fmt.Sprintf("%d pods, none running", len(pods.Items)), nil
	})
	return found
}
