//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
	"hyperstatic.dev/hyperstatic/internal/gitwebhook"
)

// gitPreviewsDomain is www's spec.previews.domain; the suite's policy allows wildcard hostnames (helpers_test.go).
const gitPreviewsDomain = "preview.e2e.test"

// previews (j): issue 41's previews in kind, on www (the small site, 2 pods) after its other steps. Turning
// spec.previews on rolls the pods into the server's --sites mode; production then answers its Service's names
// byte for byte. A GitHub pull request is opened on the real Git server (its refs/pull/1/head moved by the
// server's /-/pulls, its webhook event delivered to the fetcher): within gitWebhookBound of the push every pod
// answers pr-1--www.<domain> with the request's commit, status.previews lists it ready with its URL, and
// production is unchanged byte for byte. Closed (the event; the forge keeps the ref): the preview host is 404 on
// every pod and status.previews is empty. With E2E_MANY_PREVIEWS=1, then manyPreviews: 20 at once (opt-in: about
// 70 s more in a loaded kind run; the fetcher fetches, checks and bundles them one after the other).
func (sc *gitScenario) previews(t *testing.T) {
	ctx := ctxFor(t, 5*time.Minute)
	site := getSite(t, sc.ns, "www")
	orig := site.DeepCopy()
	site.Spec.Previews = &v1alpha1.PreviewsSpec{Domain: gitPreviewsDomain, PullRequests: true, Max: ptr.To[int32](gitManyPreviews)}
	if err := k8s.Patch(ctx, site, client.MergeFrom(orig)); err != nil {
		t.Fatalf("patch spec.previews: %v", err)
	}
	head := sc.repo.heads["main"]
	pods := waitPodsWithArg(t, site, "--sites")
	waitGitRevision(t, sc.ns, "www", head.String(), 3*time.Minute)
	pp := newPodPages(t, pods)
	prodHost := "www." + sc.ns + ".svc"
	production := servedFiles(sc.repo.trees["main"])
	pp.requireServeAs(t, prodHost, production...)
	if code, _ := pp.getAs(ctx, pods[0].Name, "pr-1--www."+gitPreviewsDomain, "/index.html"); code != http.StatusNotFound {
		t.Fatalf("the preview host before any pull request: %d, want 404", code)
	}

	files := maps.Clone(sc.repo.trees["main"])
	prPage := page("home", "pull request 1")
	files["index.html"] = gittestserver.Regular(prPage)
	start := time.Now()
	commit, _ := sc.repo.push(t, "feature", "a pull request's change", files)
	sc.pull(t, gittestserver.Opened, 1, commit, "feature")
	host := "pr-1--www." + gitPreviewsDomain
	perPod := pp.servedAs(t, host, siteFile{"/index.html", []byte(prPage)}, start, 2*time.Minute)
	served := maxDuration(perPod)
	t.Logf("MEASURED git pull request opened (push + webhook) -> preview %s served by every pod: %.1f s (%v)", host, served.Seconds(), roundAll(perPod))
	if served > gitWebhookBound {
		t.Errorf("pull request -> preview served by every pod took %s, want at most %s", served.Round(100*time.Millisecond), gitWebhookBound)
	}
	want := "http://" + host + "/"
	eventually(t, time.Minute, "status.previews: pr-1 ready", func(ctx context.Context) (bool, string, error) {
		s := &v1alpha1.StaticSite{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: sc.ns, Name: "www"}, s); err != nil {
			return false, err.Error(), nil
		}
		p := s.Status.Previews
		ok := len(p) == 1 && p[0].Name == "pr-1" && p[0].URL == want && p[0].Commit == commit.String() && p[0].Ready
		return ok, fmt.Sprintf("%+v", p), nil
	})
	t.Logf("status.previews ready %.1f s after the push", time.Since(start).Seconds())
	pp.requireServeAs(t, host, fileOf(files, "docs/guide/index.html"), fileOf(files, "big.html"))
	pp.requireServeAs(t, prodHost, production...)

	sc.pull(t, gittestserver.Closed, 1, commit, "feature")
	waitPreviewsGone(t, pp, sc.ns, "www", []string{host}, "/index.html", time.Minute)
	pp.requireServeAs(t, prodHost, production...)
	t.Logf("closed: %s 404 on every pod, status.previews empty, production byte for byte %.1f s after the push", host, time.Since(start).Seconds())

	if os.Getenv("E2E_MANY_PREVIEWS") == "1" {
		sc.manyPreviews(t, pp, files, prodHost, production)
	}
}

// gitManyPreviews is how many pull requests manyPreviews opens at once (www's spec.previews.max, and the suite's
// tenancy.previews.max).
const gitManyPreviews = 20

// manyPreviews opens gitManyPreviews pull requests at once (2 to 21, each its own index.html over www's tree) and
// waits until every pod serves each one's exact bytes under its host and status.previews lists them all ready;
// production is unchanged byte for byte; each pod's containers' memory (the kubelet's working set) is logged.
func (sc *gitScenario) manyPreviews(t *testing.T, pp *podPages, base map[string]gittestserver.File, prodHost string, production []siteFile) {
	t.Helper()
	start := time.Now()
	want := map[string]siteFile{} // host -> its index.html
	for n := 2; n < 2+gitManyPreviews; n++ {
		files := maps.Clone(base)
		body := page("home", "pull request "+strconv.Itoa(n))
		files["index.html"] = gittestserver.Regular(body)
		branch := "pr-" + strconv.Itoa(n)
		commit, _ := sc.repo.push(t, branch, "pull request "+strconv.Itoa(n), files)
		sc.pull(t, gittestserver.Opened, n, commit, branch)
		want[fmt.Sprintf("pr-%d--www.%s", n, gitPreviewsDomain)] = siteFile{"/index.html", []byte(body)}
	}
	opened := time.Since(start)
	eventually(t, 3*time.Minute, fmt.Sprintf("%d previews served by every pod", gitManyPreviews), func(ctx context.Context) (bool, string, error) {
		for _, p := range pp.pods {
			for host, f := range want {
				if code, body := pp.getAs(ctx, p.Name, host, f.path); code != http.StatusOK || !bytes.Equal(body, f.data) {
					return false, fmt.Sprintf("pod %s, %s: %d (%d bytes)", p.Name, host, code, len(body)), nil
				}
			}
		}
		s := &v1alpha1.StaticSite{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: sc.ns, Name: "www"}, s); err != nil {
			return false, err.Error(), nil
		}
		ready := 0
		for _, p := range s.Status.Previews {
			if p.Ready {
				ready++
			}
		}
		return ready == gitManyPreviews && len(s.Status.Previews) == gitManyPreviews, fmt.Sprintf("%d of %d previews ready in status", ready, len(s.Status.Previews)), nil
	})
	t.Logf("MEASURED git %d pull requests opened one after the other in %.1f s -> all served byte for byte by every pod and ready in status: %.1f s after the first push",
		gitManyPreviews, opened.Seconds(), time.Since(start).Seconds())
	for host := range want {
		pp.requireServeAs(t, host, fileOf(base, "big.html"), fileOf(base, "img/logo.bin"))
	}
	pp.requireServeAs(t, prodHost, production...)
	for _, p := range pp.pods {
		t.Logf("MEASURED memory of pod %s with production and %d previews (kubelet working set): %s", p.Name, gitManyPreviews, podMemory(t, &p))
	}
}

// podMemory is each container's working set as the kubelet's summary API reports it (node proxy), e.g.
// "server 12.3 MiB, content 8.1 MiB"; the error's text when it cannot be read.
func podMemory(t *testing.T, pod *corev1.Pod) string {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	raw, err := cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/nodes/" + pod.Spec.NodeName + "/proxy/stats/summary").DoRaw(ctx)
	if err != nil {
		return "unreadable: " + err.Error()
	}
	var summary struct {
		Pods []struct {
			PodRef struct {
				Name, Namespace string
			} `json:"podRef"`
			Containers []struct {
				Name   string `json:"name"`
				Memory struct {
					WorkingSetBytes *uint64 `json:"workingSetBytes"`
				} `json:"memory"`
			} `json:"containers"`
		} `json:"pods"`
	}
	if err := json.Unmarshal(raw, &summary); err != nil {
		return "unreadable: " + err.Error()
	}
	for _, p := range summary.Pods {
		if p.PodRef.Name != pod.Name || p.PodRef.Namespace != pod.Namespace {
			continue
		}
		var parts []string
		for _, c := range p.Containers {
			if c.Memory.WorkingSetBytes != nil {
				parts = append(parts, fmt.Sprintf("%s %.1f MiB", c.Name, float64(*c.Memory.WorkingSetBytes)/(1<<20)))
			}
		}
		return strings.Join(parts, ", ")
	}
	return "not in the node's summary"
}

// pull opens, updates or closes pull request number of sc.repo at head (branch) on the Git server (/-/pulls
// moves refs/pull/<number>/head as GitHub does) and delivers the request's GitHub event to www's fetcher.
func (sc *gitScenario) pull(t *testing.T, action gittestserver.Action, number int, head plumbing.Hash, branch string) {
	t.Helper()
	deliverPull(t, sc.srv, sc.repo.name, sc.hook, action, number, head, branch)
}

// deliverPull moves repo's refs/pull/<number>/head on the Git server (its /-/pulls) and delivers the pull request
// event to the site's fetcher through hook, signed with the hook's secret.
func deliverPull(t *testing.T, srv *gitServer, repo string, hook *webhook, action gittestserver.Action, number int, head plumbing.Hash, branch string) {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(srv.caPEM)
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	form := url.Values{"repo": {repo}, "forge": {string(gitwebhook.GitHub)}, "number": {strconv.Itoa(number)},
		"action": {string(action)}, "head": {head.String()}, "branch": {branch}}
	req, err := http.NewRequest(http.MethodPost, fmt.Sprintf("https://localhost:%d/-/pulls", srv.https.localPort), strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(gitUsername, srv.password)
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("/-/pulls: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/-/pulls %s #%d: %d %s", action, number, resp.StatusCode, body)
	}
	ev := gittestserver.PullEvent{Forge: gitwebhook.GitHub, Action: action, Number: number, Head: head, Branch: branch,
		RepoURL: httpsURL(repo)}
	var status int
	err = withForward(t, hook.pf, func(ctx context.Context) error {
		var err error
		status, err = ev.Deliver(ctx, &http.Client{Timeout: 10 * time.Second},
			gittestserver.Hook{URL: "http://" + hook.pf.addr() + "/hooks", Secret: hook.secret})
		return err
	})
	if err != nil || status/100 != 2 {
		t.Fatalf("the fetcher answered the pull request's %s event with %d (%v), want 2xx", action, status, err)
	}
}

// waitPodsWithArg waits (3 min) until the site's running server pods are its replicas and all of them run the
// server with arg (a rollout done), and returns them.
func waitPodsWithArg(t *testing.T, site *v1alpha1.StaticSite, arg string) []corev1.Pod {
	t.Helper()
	var pods []corev1.Pod
	eventually(t, 3*time.Minute, "every server pod running with "+arg, func(ctx context.Context) (bool, string, error) {
		pods = gitServerPods(ctx, t, site)
		var with int
		for _, p := range pods {
			for _, c := range p.Spec.Containers {
				if c.Name == "server" && strings.Contains(strings.Join(c.Args, " "), arg+" ") {
					with++
				}
			}
		}
		want := int(*site.Spec.Replicas)
		return with == want && len(pods) == want, fmt.Sprintf("%d of %d pods with %s", with, len(pods), arg), nil
	})
	return pods
}

// getAs reads path from pod asking for host (a site with previews chooses production or a preview by Host) and
// returns the status and body (0 and the error's text when the request failed).
func (pp *podPages) getAs(ctx context.Context, pod, host, path string) (int, []byte) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pp.fwd[pod].addr()+path, nil)
	if err != nil {
		return 0, []byte(err.Error())
	}
	req.Host = host
	resp, err := pp.client.Do(req)
	if err != nil {
		return 0, []byte(err.Error())
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	return resp.StatusCode, body
}

// requireServeAs fails unless every pod answers host with each file's exact bytes now.
func (pp *podPages) requireServeAs(t *testing.T, host string, files ...siteFile) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	for _, p := range pp.pods {
		for _, f := range files {
			if code, body := pp.getAs(ctx, p.Name, host, f.path); code != http.StatusOK || !bytes.Equal(body, f.data) {
				t.Errorf("pod %s, Host %s, %s: %d, %d bytes; want 200 and the %d bytes of the commit", p.Name, host, f.path, code, len(body), len(f.data))
			}
		}
	}
}

// servedAs is podPages.servedTimes for host: when each pod first answered want's exact bytes, from start (every
// 100 ms).
func (pp *podPages) servedAs(t *testing.T, host string, want siteFile, start time.Time, timeout time.Duration) map[string]time.Duration {
	t.Helper()
	got := map[string]time.Duration{}
	last := map[string]string{}
	ctx := ctxFor(t, timeout)
	for len(got) < len(pp.pods) {
		for _, p := range pp.pods {
			if _, seen := got[p.Name]; seen {
				continue
			}
			code, body := pp.getAs(ctx, p.Name, host, want.path)
			if code == http.StatusOK && bytes.Equal(body, want.data) {
				got[p.Name] = time.Since(start)
			}
			last[p.Name] = fmt.Sprintf("%d (%d bytes)", code, len(body))
		}
		select {
		case <-ctx.Done():
			t.Fatalf("Host %s %s not served by every pod within %s: %v", host, want.path, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
	return got
}
