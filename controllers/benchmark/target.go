package benchmark

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// target is a resolved target.
type target struct {
	baseURL string
	paths   []string
	// pod is the loaded pod when the target is one pod (target.pod), else nil.
	pod *corev1.Pod
}

// findTarget finds the base URL and the paths. A StaticSite is found through its Service (same name, port named
// "http", or "https" for protocol HTTP/2), and, for paths.allFiles, the file list of one of its serving pods; with
// target.pod, that pod is loaded at its IP instead (findPodTarget). A target that is not there yet is returned as a
// *problem (TargetResolved's reason and message); other errors are transient.
func (r *Reconciler) findTarget(ctx context.Context, b *v1alpha1.Benchmark) (target, error) {
	t := target{paths: []string{"/"}}
	if b.Spec.Paths != nil && len(b.Spec.Paths.List) > 0 {
		t.paths = b.Spec.Paths.List
	}
	if b.Spec.Target.URL != "" {
		t.baseURL = strings.TrimRight(b.Spec.Target.URL, "/")
		return t, nil
	}
	site := b.Spec.Target.StaticSite
	scheme, portName := schemeAndPort(b)
	if b.Spec.Target.Pod != "" {
		return r.findPodTarget(ctx, b, t)
	}
	var svc corev1.Service
	if err := r.Get(ctx, client.ObjectKey{Namespace: b.Namespace, Name: site}, &svc); err != nil {
		if apierrors.IsNotFound(err) {
			return t, failWith(v1alpha1.BenchmarkReasonServiceNotFound, "StaticSite %s has no Service %s yet", site, site)
		}
		return t, err
	}
	port := int32(0)
	for _, p := range svc.Spec.Ports {
		if p.Name == portName {
			port = p.Port
		}
	}
	switch {
	case port == 0 && portName == v1alpha1.HTTPSPortName:
		return t, failWith(v1alpha1.BenchmarkReasonNoHTTPSPort,
			"Service %s has no port named %q: protocol HTTP/2 loads the site over TLS, which needs the StaticSite's spec.tls", site, portName)
	case port == 0:
		return t, failWith(v1alpha1.BenchmarkReasonNoHTTPPort, "Service %s has no port named %q", site, portName)
	}
	t.baseURL = fmt.Sprintf("%s://%s.%s.svc:%d", scheme, site, b.Namespace, port)
	if b.Spec.Paths == nil || !b.Spec.Paths.AllFiles {
		return t, nil
	}
	pods, err := r.sitePods(ctx, b.Namespace, site)
	if err != nil {
		return t, err
	}
	return r.listFiles(ctx, site, pods, t)
}

// schemeAndPort are the scheme and the name of the port a StaticSite target is loaded on. HTTP/2 needs TLS (k6 has
// no h2c): that run loads the site's https port, every other its http port.
func schemeAndPort(b *v1alpha1.Benchmark) (scheme, portName string) {
	if b.Spec.Protocol == v1alpha1.ProtocolHTTP2 {
		return "https", v1alpha1.HTTPSPortName
	}
	return "http", v1alpha1.ServerPortName
}

// listFiles sets t.paths to the file list of the first of pods that answers (paths.allFiles).
func (r *Reconciler) listFiles(ctx context.Context, site string, pods []corev1.Pod, t target) (target, error) {
	var lastErr error
	for i := range pods {
		paths, err := r.Content.List(ctx, &pods[i])
		if err != nil {
			lastErr = err
			continue
		}
		if len(paths) == 0 {
			return t, failWith(v1alpha1.BenchmarkReasonNoContent, "StaticSite %s serves no file", site)
		}
		t.paths = paths
		return t, nil
	}
	if lastErr != nil {
		return t, failWith(v1alpha1.BenchmarkReasonContentListFailed, "cannot list the files of StaticSite %s: %v", site, lastErr)
	}
	return t, failWith(v1alpha1.BenchmarkReasonNoReadyPod, "StaticSite %s has no ready pod to list its files", site)
}

// sitePods are the StaticSite's serving pods (running, ready, not being deleted).
func (r *Reconciler) sitePods(ctx context.Context, ns, site string) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(ns), client.MatchingLabels{v1alpha1.LabelSite: site}); err != nil {
		return nil, err
	}
	var out []corev1.Pod
	for _, p := range list.Items {
		if podstate.Serving(&p) {
			out = append(out, p)
		}
	}
	return out, nil
}
