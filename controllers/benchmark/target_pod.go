package benchmark

import (
	"context"
	"net"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/benchresults"
	"hyperstatic.dev/hyperstatic/internal/podstate"
)

// findPodTarget resolves target.pod: one pod of target.staticSite, loaded at its own IP rather than through the
// Service, so that one pod's capacity is measured (a capacity probe the Service does not select, a canary, or one
// serving pod). The pod must be the site's (podOfSite) and serving; paths.allFiles lists that pod's files. A pod
// that is missing, not the site's, or not ready is a wait (TargetResolved=False), under the usual timeout: the
// operator creates a probe and its Benchmark together, and the probe becomes Ready a little later.
func (r *Reconciler) findPodTarget(ctx context.Context, b *v1alpha1.Benchmark, t target) (target, error) {
	site, name := b.Spec.Target.StaticSite, b.Spec.Target.Pod
	pod := &corev1.Pod{}
	// Around the cache too: the operator's pod cache holds only pods it labelled as its own, and a pod outside it
	// must be refused by name (PodNotOfSite), not reported missing.
	if err := r.getFresh(ctx, client.ObjectKey{Namespace: b.Namespace, Name: name}, pod); err != nil {
		if apierrors.IsNotFound(err) {
			return t, failWith(v1alpha1.BenchmarkReasonPodNotFound, "pod %s (target.pod) does not exist in namespace %s", name, b.Namespace)
		}
		return t, err
	}
	if !podOfSite(pod, site) {
		return t, failWith(v1alpha1.BenchmarkReasonPodNotOfSite,
			"pod %s is not a pod of StaticSite %s: it needs the label %s=%s, or %s=%s and a controller owner reference to the StaticSite",
			name, site, v1alpha1.LabelSite, site, v1alpha1.LabelCapacityProbeOf, site)
	}
	if !podstate.Serving(pod) || pod.Status.PodIP == "" {
		return t, failWith(v1alpha1.BenchmarkReasonPodNotReady, "pod %s of StaticSite %s is not running and Ready (phase %s)", name, site, pod.Status.Phase)
	}
	scheme, portName := schemeAndPort(b)
	port := podPort(pod, portName)
	if port == 0 {
		return t, failWith(v1alpha1.BenchmarkReasonNoHTTPSPort,
			"pod %s has no container port named %q: protocol HTTP/2 loads the pod over TLS, which needs the StaticSite's spec.tls", name, portName)
	}
	// JoinHostPort brackets an IPv6 address: the cluster may be IPv6-only.
	t.baseURL = scheme + "://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(int(port)))
	t.pod = pod
	if b.Spec.Paths == nil || !b.Spec.Paths.AllFiles {
		return t, nil
	}
	return r.listFiles(ctx, site, []corev1.Pod{*pod}, t)
}

// staticSiteKind is the group and kind of a StaticSite owner reference.
var staticSiteKind = schema.GroupKind{Group: v1alpha1.GroupVersion.Group, Kind: "StaticSite"}

// podOfSite says whether pod belongs to the StaticSite site: a serving pod (label hyperstatic.dev/site=site), or a
// measurement pod the operator made for it (label hyperstatic.dev/capacity-probe-of=site AND the site as its
// controller). The owner reference keeps a pod a tenant labelled as a probe, which nothing else vouches for, from
// passing for one: its figures would become the site's capacity.
func podOfSite(pod *corev1.Pod, site string) bool {
	if pod.Labels[v1alpha1.LabelSite] == site {
		return true
	}
	if pod.Labels[v1alpha1.LabelCapacityProbeOf] != site {
		return false
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Controller == nil || !*ref.Controller {
			continue
		}
		gv, err := schema.ParseGroupVersion(ref.APIVersion)
		return err == nil && gv.Group == staticSiteKind.Group && ref.Kind == staticSiteKind.Kind && ref.Name == site
	}
	return false
}

// podPort is the port of pod's container port named name; for "http" a pod that does not declare it is loaded on
// v1alpha1.ServerPort, where the server always listens. 0: none (a pod without TLS has no https listener).
func podPort(pod *corev1.Pod, name string) int32 {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == name && p.ContainerPort > 0 {
				return p.ContainerPort
			}
		}
	}
	if name == v1alpha1.ServerPortName {
		return v1alpha1.ServerPort
	}
	return 0
}

// serverCPULimit is the CPU limit, in cores, of pod's server container (the one declaring the "http" port), e.g.
// "0.05"; "" when it has none.
func serverCPULimit(pod *corev1.Pod) string {
	for _, c := range pod.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name != v1alpha1.ServerPortName {
				continue
			}
			if q, ok := c.Resources.Limits[corev1.ResourceCPU]; ok && !q.IsZero() {
				return benchresults.FormatCores(float64(q.MilliValue()) / 1000)
			}
			return ""
		}
	}
	return ""
}
