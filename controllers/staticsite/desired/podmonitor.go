package desired

import (
	"maps"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
)

// spec.monitoring: a Prometheus Operator PodMonitor that scrapes the admin port's /metrics of the site's pods.
// The Prometheus Operator's Go module is large and pins its own Kubernetes libraries, so the object is written as
// unstructured: the few fields used here are stable in monitoring.coreos.com/v1.

// PodMonitorGVK is the Prometheus Operator kind the operator creates for spec.monitoring.
var PodMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "PodMonitor"}

// PodMonitor is the site's PodMonitor: the site's pods, their admin port by name, /metrics, with
// spec.monitoring's labels (for the Prometheus' podMonitorSelector) and interval. Nil without spec.monitoring.
func PodMonitor(site *v1alpha1.StaticSite) *unstructured.Unstructured {
	m := site.Spec.Monitoring
	if m == nil {
		return nil
	}
	labels := maps.Clone(m.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	maps.Copy(labels, sitechild.ObjectLabels(site)) // the operator's labels win: its cache selects on them
	endpoint := map[string]any{"port": v1alpha1.AdminPortName, "path": "/metrics"}
	if m.Interval != "" {
		endpoint["interval"] = m.Interval
	}
	return unstructuredChild(site, PodMonitorGVK, labels, map[string]any{
		"selector":            metav1.LabelSelector{MatchLabels: sitechild.SelectorLabels(site)},
		"podMetricsEndpoints": []any{endpoint},
	})
}
