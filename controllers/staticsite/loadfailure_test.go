package staticsite

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// contentFailed checks the state a site is in while a server refuses its content: ContentAvailable=False
// ContentLoadFailed with a message holding substr, Stalled with the same reason, Ready False.
func contentFailed(substr string) func(*v1alpha1.StaticSite) error {
	return func(s *v1alpha1.StaticSite) error {
		for _, typ := range []string{v1alpha1.ConditionContentAvailable, v1alpha1.ConditionReady} {
			if err := conditionWith(typ, metav1.ConditionFalse, v1alpha1.ReasonContentLoadFailed, substr)(s); err != nil {
				return err
			}
		}
		return conditionWith(v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonContentLoadFailed, substr)(s)
	}
}

// writeFiles writes files into root, as the kubelet projects a ConfigMap's keys.
func writeFiles(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		testenv.Must(t, os.WriteFile(filepath.Join(root, name), []byte(body), 0o644))
	}
}

// waitServerLoad waits until the real server's admin port reports the wanted outcome of its last load.
func waitServerLoad(t *testing.T, srv *serverbin.Process, failed bool) {
	t.Helper()
	s := &podmetrics.HTTPScraper{Client: &http.Client{Timeout: 5 * time.Second}, Port: srv.AdminPort()}
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "server"}, Status: corev1.PodStatus{PodIP: "127.0.0.1"}}
	testenv.Eventually(t, fmt.Sprintf("server load failed=%v", failed), func() error {
		sample, err := s.Scrape(context.Background(), p)
		if err != nil {
			return err
		}
		if sample.LoadFailed != failed {
			return fmt.Errorf("load failed=%v (%q)", sample.LoadFailed, sample.LoadError)
		}
		return nil
	})
}

// touchPod changes a pod's annotations: the pod watch runs a pass now instead of at the next content refresh.
func touchPod(t *testing.T, p *corev1.Pod, value string) {
	t.Helper()
	testenv.Eventually(t, "annotate pod "+p.Name, func() error {
		cur := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		if cur.Annotations == nil {
			cur.Annotations = map[string]string{}
		}
		cur.Annotations["test.hyperstatic.dev/touch"] = value
		return k8s.Update(context.Background(), cur)
	})
}

func httpBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := (&http.Client{Timeout: 5 * time.Second}).Get(url)
	testenv.Must(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	testenv.Must(t, err)
	return string(b)
}

// A ConfigMap edit with a bad _redirects rule reaches a running server, which refuses it and keeps serving the
// previous content: the site says so with the file and line, stalls (someone must fix the rule), warns, and is
// Ready again once the rule is fixed. The server is the real one, run as the pod's container.
func TestAFailedReloadIsReportedUntilTheContentIsFixed(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	files := map[string]string{"index.html": "v1", "_redirects": "/old /index.html\n"}
	testenv.Must(t, k8s.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pages"}, Data: files}))
	createSite(t, ns, "rules", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{ConfigMaps: []v1alpha1.ConfigMapContent{{Name: "pages"}}}})
	d := getDeployment(t, ns, "rules")
	completeRollout(t, d)
	root := t.TempDir()
	writeFiles(t, root, files)
	srv := startRealServer(t, d, root)
	scraper.serve(ns, "rules-a", srv.AdminPort())
	pod := serverPod(t, d, "rules-a", "127.0.0.1")
	waitSite(t, ns, "rules", "ready", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonConfigMapsFound); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})

	// The kubelet updates the volume with a bad rule on line 2 (the rules first: whichever reload the two writes
	// trigger sees them).
	writeFiles(t, root, map[string]string{"_redirects": "/old /index.html\n/x /y 418\n"})
	writeFiles(t, root, map[string]string{"index.html": "v2"})
	waitServerLoad(t, srv, true)
	touchPod(t, pod, "reload-failed")
	got := waitSite(t, ns, "rules", "content load failed", contentFailed("_redirects:2: status 418 is not supported"))
	msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionContentAvailable).Message
	if !strings.Contains(msg, "rules-a") || !strings.Contains(msg, "keeps serving the previous one") {
		t.Errorf("ContentAvailable message %q should name the pod and say the previous content is served", msg)
	}
	if body := httpBody(t, "http://"+srv.HTTPAddr+"/"); body != "v1" {
		t.Errorf("the server serves %q, want the previous content v1", body)
	}
	waitEvent(t, ns, "rules", "Warning ContentLoadFailed Stalled: the server of pod rules-a refused the new content")

	// Fixed: the server loads it, and the stalled site's retry (no edit of the site needed) clears the condition.
	writeFiles(t, root, map[string]string{"_redirects": "/old /index.html 302\n"})
	waitServerLoad(t, srv, false)
	waitSite(t, ns, "rules", "fixed", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonConfigMapsFound); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(s.Status.Conditions, v1alpha1.ConditionStalled); c != nil {
			return fmt.Errorf("still Stalled: %s", c.Message)
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
	if body := httpBody(t, "http://"+srv.HTTPAddr+"/"); body != "v2" {
		t.Errorf("the server serves %q after the fix, want v2", body)
	}
	waitEvent(t, ns, "rules", "Normal ConfigMapsFound Content available again")
}

// crashLooping sets a pod's status as the kubelet does for a server that exited on its first load and waits to be
// restarted: not ready, the last termination's message the server's termination log (envtest runs no kubelet).
func crashLooping(t *testing.T, p *corev1.Pod, message string) {
	t.Helper()
	testenv.Eventually(t, "pod status "+p.Name, func() error {
		cur := &corev1.Pod{}
		if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		cur.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.Now()}}
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: sitechild.ContainerName, Image: cur.Spec.Containers[0].Image, RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
			LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error",
				Message: message}}}}
		return k8s.Status().Update(context.Background(), cur)
	})
}

// A new image whose _headers is bad: its servers exit on their first load, so they are never ready and have no admin
// port to read. Their termination message says why: the site stalls with the file and line, and Ready is False.
// The next image, which starts, clears it; a crash of the old image's pod no longer counts.
func TestServersThatCannotStartOnTheContentStallTheSite(t *testing.T) {
	ctx := context.Background()
	ns := namespace(t)
	site := createSite(t, ns, "crash", v1alpha1.StaticSiteSpec{Content: v1alpha1.ContentSource{Image: "example/crash:v1"}})
	d := getDeployment(t, ns, "crash")
	testenv.Eventually(t, "Deployment status", func() error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
			return err
		}
		d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 1, UpdatedReplicas: 1, UnavailableReplicas: 1}
		return k8s.Status().Update(ctx, d)
	})
	old := serverPod(t, d, "crash-a", "10.0.0.9")
	crashLooping(t, old, TerminationMessagePrefix+"_headers:3: Content-Length is set by the server and cannot be set here")
	waitSite(t, ns, "crash", "stalled on the content", contentFailed("the server of pod crash-a cannot start: content load failed: _headers:3: Content-Length"))
	waitEvent(t, ns, "crash", "Warning ContentLoadFailed Stalled: the server of pod crash-a cannot start")

	// A fixed image: a new template, whose pod starts; the old image's crashing pod says nothing about it.
	updateSite(t, site, func(s *v1alpha1.StaticSite) { s.Spec.Content.Image = "example/crash:v2" })
	testenv.Eventually(t, "template with the new image", func() error {
		d = getDeployment(t, ns, "crash")
		if img := d.Spec.Template.Spec.Containers[0].Image; img != "example/crash:v2" {
			return fmt.Errorf("template image %s", img)
		}
		return nil
	})
	scraper.set(ns, "crash-b", podmetrics.Sample{Workers: 1, CPUs: "1", Pinned: true})
	serverPod(t, d, "crash-b", "10.0.0.10")
	completeRollout(t, d)
	waitSite(t, ns, "crash", "the new image serves", func(s *v1alpha1.StaticSite) error {
		if err := condition(s, v1alpha1.ConditionContentAvailable, metav1.ConditionTrue, v1alpha1.ReasonImageSpecified); err != nil {
			return err
		}
		return condition(s, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonAvailable)
	})
	waitEvent(t, ns, "crash", "Normal ImageSpecified Content available again")
}

// StartFailure is pure logic over a pod's container statuses: only the server container's own termination
// message, with the server's prefix, of a container that is down now, is a content failure.
func TestStartFailureReadsOnlyTheServersContentError(t *testing.T) {
	const msg = TerminationMessagePrefix + "_redirects:2: status 418 is not supported"
	terminated := func(code int32, m string) *corev1.ContainerStateTerminated {
		return &corev1.ContainerStateTerminated{ExitCode: code, Message: m}
	}
	waiting := &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}
	for _, tc := range []struct {
		name string
		cs   corev1.ContainerStatus
		want bool
	}{
		{"terminated now", corev1.ContainerStatus{Name: sitechild.ContainerName, State: corev1.ContainerState{Terminated: terminated(1, msg)}}, true},
		{"waiting to restart", corev1.ContainerStatus{Name: sitechild.ContainerName, State: corev1.ContainerState{Waiting: waiting},
			LastTerminationState: corev1.ContainerState{Terminated: terminated(1, msg)}}, true},
		{"running again: an old message", corev1.ContainerStatus{Name: sitechild.ContainerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
			LastTerminationState: corev1.ContainerState{Terminated: terminated(1, msg)}}, false},
		{"another reason to exit (the log's tail)", corev1.ContainerStatus{Name: sitechild.ContainerName, State: corev1.ContainerState{Waiting: waiting},
			LastTerminationState: corev1.ContainerState{Terminated: terminated(2, `{"level":"error","msg":"--header: invalid"}`)}}, false},
		{"exit 0", corev1.ContainerStatus{Name: sitechild.ContainerName, State: corev1.ContainerState{Terminated: terminated(0, msg)}}, false},
		{"another container", corev1.ContainerStatus{Name: "sidecar", State: corev1.ContainerState{Terminated: terminated(1, msg)}}, false},
	} {
		p := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{tc.cs}}}
		got, ok := StartFailure(p)
		if ok != tc.want || (ok && got != msg) {
			t.Errorf("%s: StartFailure = %q, %v; want %v", tc.name, got, ok, tc.want)
		}
	}
}

// Issue 24, item 2: a termination message is text the pod wrote (up to the kubelet's 4 KiB); in the site's status it
// is bounded and its control characters escaped, whatever the pod wrote after the server's prefix.
func TestStartFailureIsBoundedAndEscaped(t *testing.T) {
	hostile := TerminationMessagePrefix + "x\x1b]0;title\x07\r\nFAKE: line" + strings.Repeat("B", 4000)
	p := &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: sitechild.ContainerName,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: hostile}}}}}}
	got, ok := StartFailure(p)
	if !ok || len(got) > 1024 || strings.ContainsAny(got, "\x1b\x07\r\n") {
		t.Fatalf("StartFailure = %d bytes %q, %v", len(got), got[:min(len(got), 80)], ok)
	}
	if !strings.HasPrefix(got, TerminationMessagePrefix+`x\x1b]0;title\x07  FAKE: line`) {
		t.Errorf("message %q", got[:80])
	}
}
