// Package statemetrics exports what the operator knows of its objects as Prometheus series on the manager's
// /metrics, so that alerts and dashboards (the chart's PrometheusRule and Grafana dashboard, docs/alerts.md) can
// use what only the API objects hold: a site's latency objective, its measured capacity per pod, the conditions
// of sites and Benchmarks.
//
// Contract:
//   - The series are computed at scrape time from the manager's informer cache (no API request, no state kept
//     between scrapes): a deleted object's series go with it.
//   - Labels: namespace and staticsite (or benchmark) name the object; condition, status and reason are the
//     condition's own fields. The chart's operator PodMonitor scrapes with honorLabels, so namespace stays the
//     object's namespace (as with kube-state-metrics).
//   - One series per condition per object, never per pod or per request: cardinality follows the number of
//     objects, which the API server already bounds.
//   - hyperstatic_staticsite_capacity_rps_per_pod is present only while status.capacity is current (measured
//     against the template the pods serve): a stale or missing measurement says nothing about today's pods.
//     hyperstatic_staticsite_git_pods_behind is present only for a Git site whose fetcher published a commit.
package statemetrics

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// listTimeout bounds one scrape's cache reads: a cache that is not synced yet must not hang the scrape.
const listTimeout = 5 * time.Second

var (
	siteCondition = prometheus.NewDesc("hyperstatic_staticsite_status_condition",
		"1 for each condition of a StaticSite, with its status and reason.",
		[]string{"namespace", "staticsite", "condition", "status", "reason"}, nil)
	latencyObjective = prometheus.NewDesc("hyperstatic_staticsite_latency_objective_seconds",
		"The 99th percentile latency a StaticSite should keep (spec.capacity.latencyObjective, default 100ms).",
		[]string{"namespace", "staticsite"}, nil)
	capacityPerPod = prometheus.NewDesc("hyperstatic_staticsite_capacity_rps_per_pod",
		"Requests per second one server pod of a StaticSite serves at capacity (status.capacity.rpsPerPod), while the measurement is current.",
		[]string{"namespace", "staticsite"}, nil)
	gitPodsBehind = prometheus.NewDesc("hyperstatic_staticsite_git_pods_behind",
		"Ready server pods of a Git site that do not serve the commit its fetcher published (status.content.revision: readyPods - servedBy).",
		[]string{"namespace", "staticsite"}, nil)
	benchmarkCondition = prometheus.NewDesc("hyperstatic_benchmark_status_condition",
		"1 for each condition of a Benchmark, with its status and reason.",
		[]string{"namespace", "benchmark", "condition", "status", "reason"}, nil)
)

// Names are the metric names the collector exports, for tests that check a query's names against them.
func Names() []string {
	return []string{"hyperstatic_staticsite_status_condition", "hyperstatic_staticsite_latency_objective_seconds",
		"hyperstatic_staticsite_capacity_rps_per_pod", "hyperstatic_staticsite_git_pods_behind",
		"hyperstatic_benchmark_status_condition"}
}

// Collector reads StaticSites and Benchmarks from a cache at every scrape.
type Collector struct {
	reader client.Reader
}

// New returns a collector over reader (the manager's cache).
func New(reader client.Reader) *Collector { return &Collector{reader: reader} }

// Describe sends the families' descriptions.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{siteCondition, latencyObjective, capacityPerPod, gitPodsBehind, benchmarkCondition} {
		ch <- d
	}
}

// Collect lists the objects and sends their series. A failed list sends an invalid metric, which the registry
// turns into a scrape error: a silent gap would look like "no site has a problem".
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	ctx, cancel := context.WithTimeout(context.Background(), listTimeout)
	defer cancel()
	var sites v1alpha1.StaticSiteList
	if err := c.reader.List(ctx, &sites); err != nil {
		ch <- prometheus.NewInvalidMetric(siteCondition, err)
	}
	for i := range sites.Items {
		for _, s := range SiteSamples(&sites.Items[i]) {
			ch <- prometheus.MustNewConstMetric(s.Desc, prometheus.GaugeValue, s.Value, s.Labels...)
		}
	}
	var benchmarks v1alpha1.BenchmarkList
	if err := c.reader.List(ctx, &benchmarks); err != nil {
		ch <- prometheus.NewInvalidMetric(benchmarkCondition, err)
	}
	for i := range benchmarks.Items {
		for _, s := range BenchmarkSamples(&benchmarks.Items[i]) {
			ch <- prometheus.MustNewConstMetric(s.Desc, prometheus.GaugeValue, s.Value, s.Labels...)
		}
	}
}

// Sample is one series: its family, label values in the family's order, and value.
type Sample struct {
	Desc   *prometheus.Desc
	Labels []string
	Value  float64
}

// SiteSamples are a StaticSite's series.
func SiteSamples(site *v1alpha1.StaticSite) []Sample {
	ns, name := site.Namespace, site.Name
	out := []Sample{{Desc: latencyObjective, Labels: []string{ns, name}, Value: objective(site).Seconds()}}
	if c := site.Status.Capacity; c != nil && c.Current && c.RPSPerPod > 0 {
		out = append(out, Sample{Desc: capacityPerPod, Labels: []string{ns, name}, Value: float64(c.RPSPerPod)})
	}
	if c := site.Status.Content; c != nil && c.Revision != nil {
		behind := max(c.Revision.ReadyPods-c.Revision.ServedBy, 0)
		out = append(out, Sample{Desc: gitPodsBehind, Labels: []string{ns, name}, Value: float64(behind)})
	}
	return append(out, conditionSamples(siteCondition, ns, name, site.Status.Conditions)...)
}

// BenchmarkSamples are a Benchmark's series.
func BenchmarkSamples(b *v1alpha1.Benchmark) []Sample {
	return conditionSamples(benchmarkCondition, b.Namespace, b.Name, b.Status.Conditions)
}

func conditionSamples(desc *prometheus.Desc, ns, name string, conds []metav1.Condition) []Sample {
	out := make([]Sample, 0, len(conds))
	for _, c := range conds {
		out = append(out, Sample{Desc: desc, Labels: []string{ns, name, c.Type, string(c.Status), c.Reason}, Value: 1})
	}
	return out
}

// objective is spec.capacity.latencyObjective, or the API's default when unset (the value the capacity
// measurement judges p99 by).
func objective(site *v1alpha1.StaticSite) time.Duration {
	if c := site.Spec.Capacity; c != nil && c.LatencyObjective != nil {
		return c.LatencyObjective.Duration
	}
	d, _ := time.ParseDuration(v1alpha1.DefaultCapacityLatencyObj)
	return d
}
