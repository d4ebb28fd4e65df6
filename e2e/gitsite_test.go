//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/contentagent"
)

// The puller sidecar of every server pod of a Git site (docs/design/git-content.md): its container name, and the
// port where GET /revision says which commit the pod serves; the fetcher's port, where it says what it publishes.
const (
	pullerContainer = "content"
	pullerPort      = v1alpha1.ContentPort
	fetcherPort     = v1alpha1.GitFetcherPort
)

// gitSite is a StaticSite following a repository of the test's Git server.
func gitSite(ns, name string, git v1alpha1.GitContent, replicas int32, cpu string) *v1alpha1.StaticSite {
	site := newSite(ns, name, v1alpha1.ContentSource{Git: &git}, cpu)
	site.Spec.Replicas = ptr.To(replicas)
	return site
}

// gitSource is spec.content.git with a Secret and an optional webhook Secret and interval.
func gitSource(url, ref, secret, webhookSecret string, interval time.Duration) v1alpha1.GitContent {
	g := v1alpha1.GitContent{URL: url, Ref: ref}
	if secret != "" {
		g.SecretRef = &v1alpha1.LocalObjectReference{Name: secret}
	}
	if webhookSecret != "" {
		g.WebhookSecretRef = &v1alpha1.LocalObjectReference{Name: webhookSecret}
	}
	if interval > 0 {
		g.Interval = &metav1.Duration{Duration: interval}
	}
	return g
}

// gitServerPods are a site's running server pods: those of its selector (status.selector) that carry the
// puller sidecar. The fetcher pod is not one of them, even if it shares a label.
func gitServerPods(ctx context.Context, t *testing.T, site *v1alpha1.StaticSite) []corev1.Pod {
	t.Helper()
	sel := site.Status.Selector
	if sel == "" {
		sel = v1alpha1.LabelSite + "=" + site.Name
	}
	pods, err := cs.CoreV1().Pods(site.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		t.Fatalf("list pods: %v", err)
	}
	var out []corev1.Pod
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && hasInitContainer(&p, pullerContainer) {
			out = append(out, p)
		}
	}
	return out
}

func hasInitContainer(p *corev1.Pod, name string) bool {
	for _, c := range p.Spec.InitContainers {
		if c.Name == name {
			return true
		}
	}
	return false
}

// gitRevisionState says whether the site's status shows commit served by every wanted ready pod, with
// ContentAvailable True (GitRevisionFetched) and Ready True.
func gitRevisionState(site *v1alpha1.StaticSite, commit string) (bool, string) {
	ready, why, _ := siteReady(site)
	rev := revisionOf(site)
	ca := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionContentAvailable)
	want := ptr.Deref(site.Spec.Replicas, 1)
	ok := ready && rev != nil && rev.Commit == commit && rev.ServedBy == want && rev.ReadyPods == want &&
		ca != nil && ca.Status == metav1.ConditionTrue && ca.Reason == v1alpha1.ReasonGitRevisionFetched
	return ok, fmt.Sprintf("%s; revision %s; ContentAvailable %s", why, revisionString(rev), condString(ca))
}

func revisionOf(site *v1alpha1.StaticSite) *v1alpha1.ContentRevision {
	if site.Status.Content == nil {
		return nil
	}
	return site.Status.Content.Revision
}

func revisionString(r *v1alpha1.ContentRevision) string {
	if r == nil {
		return "<none>"
	}
	return fmt.Sprintf("%s (ref %s) served %s (servedBy %d of %d ready)", r.ShortCommit, r.Ref, r.Served, r.ServedBy, r.ReadyPods)
}

// waitGitRevision waits until the site serves commit on every pod by its status, and returns the site.
func waitGitRevision(t *testing.T, ns, name, commit string, timeout time.Duration) *v1alpha1.StaticSite {
	t.Helper()
	site := &v1alpha1.StaticSite{}
	eventually(t, timeout, fmt.Sprintf("StaticSite %s serving %s on every pod", name, commit[:12]), func(ctx context.Context) (bool, string, error) {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, site); err != nil {
			return false, err.Error(), nil
		}
		ok, why := gitRevisionState(site, commit)
		return ok, why, nil
	})
	return site
}

// getSite reads a site.
func getSite(t *testing.T, ns, name string) *v1alpha1.StaticSite {
	t.Helper()
	site := &v1alpha1.StaticSite{}
	if err := k8s.Get(ctxFor(t, 30*time.Second), client.ObjectKey{Namespace: ns, Name: name}, site); err != nil {
		t.Fatal(err)
	}
	return site
}

// podGet reads path from one of a pod's ports through the API server's pod proxy (the test process talks to the
// API server on loopback only). A non-2xx answer is an error. For JSON only: the proxy may rewrite HTML and
// fails a brotli HTML answer, so pages are read through podPages.
func podGet(ctx context.Context, pod *corev1.Pod, port int, path string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	return cs.CoreV1().Pods(pod.Namespace).ProxyGet("http", pod.Name, strconv.Itoa(port), path, nil).DoRaw(ctx)
}

// podRevision is what a pod's puller says it serves (GET /revision on its content port).
func podRevision(ctx context.Context, pod *corev1.Pod) (contentagent.Revision, error) {
	return agentRevision(ctx, pod, pullerPort)
}

// agentRevision is GET /revision of the content-agent process on port of pod: a puller's, or a fetcher's
// (fetcherPort).
func agentRevision(ctx context.Context, pod *corev1.Pod, port int) (contentagent.Revision, error) {
	var r contentagent.Revision
	raw, err := podGet(ctx, pod, port, "/revision")
	if err != nil {
		return r, err
	}
	return r, json.Unmarshal(raw, &r)
}

// podBase is the http base URL of a server pod, for in-cluster clients (the fetch image).
func podBase(p *corev1.Pod) string {
	return "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(v1alpha1.ServerPort))
}

// checkBytesOnPods runs one fetch pod over every file of every pod (each pod's IP, not the Service: every replica
// must serve the commit) and compares status, size and SHA-256 with the expected bytes.
func checkBytesOnPods(t *testing.T, ns, job string, pods []corev1.Pod, files []siteFile) {
	t.Helper()
	bases := make([]string, len(pods))
	for i := range pods {
		bases[i] = podBase(&pods[i])
	}
	fetchFiles(t, ns, job, bases, files, nil, exactBytes(t))
	t.Logf("fetched each of %d files from each of %d pods: the exact bytes", len(files), len(pods))
}

// podPages reads pages from each server pod directly, through one loopback port-forward per pod: the bytes the
// pod sends, headers included, which the API server's pod proxy does not promise for HTML.
type podPages struct {
	pods   []corev1.Pod
	fwd    map[string]*portForward
	client *http.Client
}

// newPodPages forwards a port to each pod's http port for the length of the test (step).
func newPodPages(t *testing.T, pods []corev1.Pod) *podPages {
	t.Helper()
	pp := &podPages{pods: pods, fwd: map[string]*portForward{},
		// No transparent decompression: the test asks for encodings itself and checks the raw bytes.
		client: &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableCompression: true}}}
	for _, p := range pods {
		pp.fwd[p.Name] = startPortForward(t, p.Namespace, "pod/"+p.Name, v1alpha1.ServerPort)
	}
	return pp
}

// get reads path from pod with the given Accept-Encoding ("" for none) and returns the body and its
// Content-Encoding; a status other than 200 is an error.
func (pp *podPages) get(ctx context.Context, pod, path, acceptEncoding string) ([]byte, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+pp.fwd[pod].addr()+path, nil)
	if err != nil {
		return nil, "", err
	}
	if acceptEncoding != "" {
		req.Header.Set("Accept-Encoding", acceptEncoding)
	}
	resp, err := pp.client.Do(req)
	if err != nil {
		return nil, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 64<<20))
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %d", resp.StatusCode)
	}
	return body, resp.Header.Get("Content-Encoding"), err
}

// servedTimes watches every pod (want's path, every 100 ms) from start until each serves want's exact bytes, and
// returns when each did, measured from start. A pod that serves want and then anything else (the old page
// again: a mix of two commits over time) fails the test.
func (pp *podPages) servedTimes(t *testing.T, want siteFile, start time.Time, timeout time.Duration) map[string]time.Duration {
	t.Helper()
	got := map[string]time.Duration{}
	ctx := ctxFor(t, timeout)
	last := map[string]string{}
	for {
		for _, p := range pp.pods {
			body, _, err := pp.get(ctx, p.Name, want.path, "")
			switch {
			case err != nil:
				last[p.Name] = err.Error()
			case bytes.Equal(body, want.data):
				if _, seen := got[p.Name]; !seen {
					got[p.Name] = time.Since(start)
				}
				last[p.Name] = "new"
			default:
				if _, seen := got[p.Name]; seen {
					t.Fatalf("pod %s served %s's new bytes, then other bytes again (%d bytes)", p.Name, want.path, len(body))
				}
				last[p.Name] = fmt.Sprintf("old (%d bytes)", len(body))
			}
		}
		if len(got) == len(pp.pods) {
			return got
		}
		select {
		case <-ctx.Done():
			t.Fatalf("%s not served with its new bytes by every pod within %s: %v", want.path, timeout, last)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// requireServe fails unless every pod serves each file's exact bytes now.
func (pp *podPages) requireServe(t *testing.T, files ...siteFile) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	for _, p := range pp.pods {
		for _, f := range files {
			body, _, err := pp.get(ctx, p.Name, f.path, "")
			if err != nil || !bytes.Equal(body, f.data) {
				t.Errorf("pod %s %s: %d bytes (err %v), want the %d bytes of the served commit", p.Name, f.path, len(body), err, len(f.data))
			}
		}
	}
}

// maxDuration is the largest value of m.
func maxDuration(m map[string]time.Duration) time.Duration {
	var d time.Duration
	for _, v := range m {
		d = max(d, v)
	}
	return d
}

// measurePushServed measures a push from start (the push began) until every pod serves page's new bytes, and
// until the site's status says every ready pod serves commit; it returns the first. The status must follow the
// content within gitStatusLag: the controller hears of the commit from its long poll of the fetcher, then reads
// the pullers every 2 s until they all serve it.
func measurePushServed(t *testing.T, site *v1alpha1.StaticSite, pp *podPages, page siteFile, commit string, start time.Time, timeout time.Duration) time.Duration {
	t.Helper()
	perPod := pp.servedTimes(t, page, start, timeout)
	served := maxDuration(perPod)
	waitGitRevision(t, site.Namespace, site.Name, commit, timeout)
	status := time.Since(start)
	t.Logf("push -> %s served by each pod: %v", page.path, roundAll(perPod))
	t.Logf("MEASURED git push -> status.content.revision %s served by every ready pod: %.1f s", commit[:12], status.Seconds())
	if status > served+gitStatusLag {
		t.Errorf("the status said every pod serves %s %s after the push, %s after they did: want at most %s later",
			commit[:12], status.Round(100*time.Millisecond), (status - served).Round(100*time.Millisecond), gitStatusLag)
	}
	return served
}

func roundAll(m map[string]time.Duration) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = v.Round(10 * time.Millisecond).String()
	}
	return out
}

// requirePodsRevision fails unless every pod's puller says it serves commit.
func requirePodsRevision(t *testing.T, pods []corev1.Pod, commit string) {
	t.Helper()
	ctx := ctxFor(t, time.Minute)
	for i := range pods {
		r, err := podRevision(ctx, &pods[i])
		if err != nil || r.Commit != commit {
			t.Errorf("pod %s /revision: commit %q (err %v), want %s", pods[i].Name, r.Commit, err, commit)
		}
	}
}

// waitCondition waits for the site's condition typ to have status and reason, and returns it.
func waitCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	eventually(t, timeout, fmt.Sprintf("%s %s/%s", typ, status, reason), func(ctx context.Context) (bool, string, error) {
		site := &v1alpha1.StaticSite{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, site); err != nil {
			return false, err.Error(), nil
		}
		c := meta.FindStatusCondition(site.Status.Conditions, typ)
		if c != nil {
			got = *c
		}
		return c != nil && c.Status == status && c.Reason == reason, condString(c), nil
	})
	return got
}

// requireWarning fails unless the site has a Warning event whose reason and message together contain all of
// words; it returns the event's reason and message.
func requireWarning(t *testing.T, ns, name string, words ...string) string {
	t.Helper()
	var found string
	eventually(t, 30*time.Second, "Warning event naming "+strings.Join(words, ", "), func(ctx context.Context) (bool, string, error) {
		evs, err := cs.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",type=Warning"})
		if err != nil {
			return false, err.Error(), nil
		}
		var seen []string
	events:
		for _, e := range evs.Items {
			for _, w := range words {
				if !strings.Contains(e.Reason+" "+e.Message, w) {
					seen = append(seen, e.Reason)
					continue events
				}
			}
			found = e.Reason + ": " + e.Message
			return true, "", nil
		}
		return false, "Warning events: " + strings.Join(seen, ","), nil
	})
	return found
}

// requireReady fails unless the site is Ready=True now.
func requireReady(t *testing.T, site *v1alpha1.StaticSite) {
	t.Helper()
	if c := meta.FindStatusCondition(site.Status.Conditions, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("Ready is not True: %s", condString(c))
	}
}

// smallMemory is the small Git sites' memory: their files are a few KiB.
var smallMemory = resource.MustParse("64Mi")
