// Package podmetrics reads the Prometheus text exposition of a hyperstatic-server pod's admin port
// (/metrics) into the few numbers the operator acts on: request counts for autoscaling, CPU and memory
// for benchmarks, and the CPU set the server pinned its workers to.
package podmetrics

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// Metric names exported by hyperstatic-server that this package reads.
const (
	RequestsTotal       = "hyperstatic_requests_total"
	WorkerCPUs          = "hyperstatic_worker_cpus"
	ProcessCPUSeconds   = "process_cpu_seconds_total"
	ProcessResidentSize = "process_resident_memory_bytes"
)

// Sample is one scrape of one pod.
type Sample struct {
	// Pod is the pod's name.
	Pod string
	// Time is when the scrape completed.
	Time time.Time
	// Requests is hyperstatic_requests_total summed over every label set.
	Requests float64
	// CPUSeconds is process_cpu_seconds_total.
	CPUSeconds float64
	// ResidentBytes is process_resident_memory_bytes.
	ResidentBytes float64
	// Workers is the number of worker threads (the value of hyperstatic_worker_cpus).
	Workers int
	// CPUs is the CPU list the workers run on, as the server reports it (label "cpus", e.g. "1" or "0,1").
	CPUs string
	// Pinned says whether each worker is pinned to one CPU (label "pinned").
	Pinned bool
}

// Scraper fetches a Sample from a pod. The operator uses HTTPScraper; tests feed their own.
type Scraper interface {
	Scrape(ctx context.Context, pod *corev1.Pod) (Sample, error)
}

// HTTPScraper scrapes http://<podIP>:<admin port>/metrics.
type HTTPScraper struct {
	Client *http.Client
	// Port overrides the admin port; zero means v1alpha1.AdminPort.
	Port int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// NewHTTPScraper returns a scraper with a short per-request timeout, so one stuck pod cannot stall a reconcile.
func NewHTTPScraper() *HTTPScraper {
	return &HTTPScraper{Client: &http.Client{Timeout: 2 * time.Second}}
}

// Scrape implements Scraper.
func (s *HTTPScraper) Scrape(ctx context.Context, pod *corev1.Pod) (Sample, error) {
	if pod.Status.PodIP == "" {
		return Sample{}, fmt.Errorf("pod %s has no IP yet", pod.Name)
	}
	port := s.Port
	if port == 0 {
		port = v1alpha1.AdminPort
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + "/metrics"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return Sample{}, err
	}
	resp, err := s.Client.Do(req)
	if err != nil {
		return Sample{}, fmt.Errorf("scrape %s: %w", pod.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Sample{}, fmt.Errorf("scrape %s: HTTP %d", pod.Name, resp.StatusCode)
	}
	sample, err := Parse(resp.Body)
	if err != nil {
		return Sample{}, fmt.Errorf("scrape %s: %w", pod.Name, err)
	}
	sample.Pod = pod.Name
	if s.Now != nil {
		sample.Time = s.Now()
	} else {
		sample.Time = time.Now()
	}
	return sample, nil
}

// Parse reads a Prometheus text exposition. Metrics it does not know are ignored; a missing
// hyperstatic_requests_total is an error, because a pod without it is not a hyperstatic server.
func Parse(r io.Reader) (Sample, error) {
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(r)
	if err != nil {
		return Sample{}, fmt.Errorf("parse metrics: %w", err)
	}
	var s Sample
	requests, ok := families[RequestsTotal]
	if !ok {
		return Sample{}, fmt.Errorf("parse metrics: %s is missing", RequestsTotal)
	}
	for _, m := range requests.GetMetric() {
		s.Requests += value(m)
	}
	if f, ok := families[ProcessCPUSeconds]; ok && len(f.GetMetric()) > 0 {
		s.CPUSeconds = value(f.GetMetric()[0])
	}
	if f, ok := families[ProcessResidentSize]; ok && len(f.GetMetric()) > 0 {
		s.ResidentBytes = value(f.GetMetric()[0])
	}
	if f, ok := families[WorkerCPUs]; ok && len(f.GetMetric()) > 0 {
		m := f.GetMetric()[0]
		s.Workers = int(value(m))
		for _, l := range m.GetLabel() {
			switch l.GetName() {
			case "cpus":
				s.CPUs = l.GetValue()
			case "pinned":
				s.Pinned = l.GetValue() == "true"
			}
		}
	}
	return s, nil
}

// value returns the number a counter, gauge or untyped metric carries.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetUntyped() != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}
