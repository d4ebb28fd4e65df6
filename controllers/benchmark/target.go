package benchmark

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// MaxPaths bounds the file list put in the script ConfigMap (ConfigMaps hold at most 1 MiB).
const MaxPaths = 10000

// ContentLister lists the URL paths a server pod serves (GET /content on its admin port). The operator uses
// HTTPContentLister; the envtest suite, which has no running server, feeds its own.
type ContentLister interface {
	List(ctx context.Context, pod *corev1.Pod) ([]string, error)
}

// HTTPContentLister reads http://<podIP>:<admin>/content: text/plain, one URL path per line.
type HTTPContentLister struct{ Client *http.Client }

// NewHTTPContentLister returns a lister with a short timeout.
func NewHTTPContentLister() *HTTPContentLister {
	return &HTTPContentLister{Client: &http.Client{Timeout: 5 * time.Second}}
}

// List implements ContentLister.
func (l *HTTPContentLister) List(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("pod %s has no IP", pod.Name)
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(v1alpha1.AdminPort)) + "/content"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := l.Client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return parseContent(io.LimitReader(resp.Body, 8<<20))
}

// parseContent reads one URL path per line, skipping blank lines; paths must start with "/".
func parseContent(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "/") {
			return nil, fmt.Errorf("content list: %q is not a URL path", line)
		}
		out = append(out, line)
		if len(out) > MaxPaths {
			return nil, fmt.Errorf("content list: more than %d files; list the paths to load in spec.paths.list", MaxPaths)
		}
	}
	return out, sc.Err()
}

// target is a resolved target.
type target struct {
	baseURL string
	paths   []string
	// site is the StaticSite's name ("" for a plain URL): its pods are sampled for the server columns.
	site string
}

// targetProblem is a reason a target cannot be resolved yet (the condition says which).
type targetProblem struct{ reason, message string }

func (p *targetProblem) Error() string { return p.reason + ": " + p.message }

// resolveTarget finds the base URL and the paths. A StaticSite is found through its Service (same name, port named
// "http"), and, for paths.allFiles, the file list of one of its ready pods.
func (r *Reconciler) resolveTarget(ctx context.Context, b *v1alpha1.Benchmark) (target, error) {
	t := target{paths: []string{"/"}}
	if b.Spec.Paths != nil && len(b.Spec.Paths.List) > 0 {
		t.paths = b.Spec.Paths.List
	}
	if b.Spec.Target.URL != "" {
		t.baseURL = strings.TrimRight(b.Spec.Target.URL, "/")
		return t, nil
	}
	site := b.Spec.Target.StaticSite
	t.site = site
	var svc corev1.Service
	if err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: site}, &svc); err != nil {
		if client.IgnoreNotFound(err) == nil {
			return t, &targetProblem{"ServiceNotFound", fmt.Sprintf("StaticSite %s has no Service %s yet", site, site)}
		}
		return t, err
	}
	port := int32(0)
	for _, p := range svc.Spec.Ports {
		if p.Name == v1alpha1.ServerPortName {
			port = p.Port
		}
	}
	if port == 0 {
		return t, &targetProblem{"NoHTTPPort", fmt.Sprintf("Service %s has no port named %q", site, v1alpha1.ServerPortName)}
	}
	t.baseURL = fmt.Sprintf("http://%s.%s.svc:%d", site, b.Namespace, port)
	if b.Spec.Paths == nil || !b.Spec.Paths.AllFiles {
		return t, nil
	}
	pods, err := r.sitePods(ctx, b.Namespace, site)
	if err != nil {
		return t, err
	}
	var lastErr error
	for i := range pods {
		paths, err := r.Content.List(ctx, &pods[i])
		if err != nil {
			lastErr = err
			continue
		}
		if len(paths) == 0 {
			return t, &targetProblem{"NoContent", fmt.Sprintf("StaticSite %s serves no file", site)}
		}
		t.paths = paths
		return t, nil
	}
	if lastErr != nil {
		return t, &targetProblem{"ContentListFailed", fmt.Sprintf("cannot list the files of StaticSite %s: %v", site, lastErr)}
	}
	return t, &targetProblem{"NoReadyPod", fmt.Sprintf("StaticSite %s has no ready pod to list its files", site)}
}

// sitePods are the StaticSite's ready, running pods.
func (r *Reconciler) sitePods(ctx context.Context, ns, site string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelSite: site}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podReady(&p) {
			out = append(out, p)
		}
	}
	return out, nil
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
