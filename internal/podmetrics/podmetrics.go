// Package podmetrics reads the Prometheus text exposition of a hyperstatic-server pod's admin port
// (/metrics) into the few numbers the operator acts on: request counts for autoscaling, CPU and memory
// for benchmarks, the CPU set the server pinned its workers to, and how much of its content it holds in memory.
package podmetrics

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// Metric names exported by hyperstatic-server that this package reads.
const (
	RequestsTotal       = "hyperstatic_requests_total"
	WorkerCPUs          = "hyperstatic_worker_cpus"
	ProcessCPUSeconds   = "process_cpu_seconds_total"
	ProcessResidentSize = "process_resident_memory_bytes"

	// The content gauges (images/server/src/admin/metrics.rs), read into Sample.Content.
	ContentFiles               = "hyperstatic_content_files"
	ContentBytes               = "hyperstatic_content_bytes"
	ContentMemoryBytes         = "hyperstatic_content_memory_bytes"
	ContentDiskBytes           = "hyperstatic_content_disk_bytes"
	MemoryLimitBytes           = "hyperstatic_memory_limit_bytes"
	ContentMemoryBudgetBytes   = "hyperstatic_content_memory_budget_bytes"
	ContentFitMemoryLimitBytes = "hyperstatic_content_fit_memory_limit_bytes"
	ContentEncodingsPending    = "hyperstatic_content_encodings_pending"

	// ContentLoadFailed is 1 while the server's last content load or reload failed; LoadErrorPath then says why.
	ContentLoadFailed = "hyperstatic_content_load_failed"

	// SiteValueInfo is 1 with the label revision naming the site value the server serves (docs/design/site-value.md).
	SiteValueInfo = "hyperstatic_site_value_info"
	// SiteValueLoadsTotal counts the site value's loads by result; result="failure" ones left the previous value
	// serving, and LoadErrorPath says why.
	SiteValueLoadsTotal = "hyperstatic_site_value_loads_total"
)

// LoadErrorPath is the admin endpoint with the message of the server's last failed content load (an empty body
// when it succeeded). images/server/src/site/load_error.rs bounds it to 1 KiB; MaxLoadErrorBytes is read at most.
const LoadErrorPath = "/load-error"

// MaxLoadErrorBytes is the most of a /load-error body read (the server sends at most 1 KiB and a newline).
const MaxLoadErrorBytes = 4096

// contentGauges are the families that make up a Content: a server that exports none of them predates them (nil
// Content); one that exports only some is not a server this package understands (an error).
var contentGauges = []string{ContentFiles, ContentBytes, ContentMemoryBytes, ContentDiskBytes, MemoryLimitBytes,
	ContentMemoryBudgetBytes, ContentFitMemoryLimitBytes, ContentEncodingsPending}

// Limits on what one scrape reads. Users choose their pods' image, so whatever answers on the admin port may
// send anything, and the operator that reads it is shared by every site: a body that never ends or a million
// series must fail the scrape, not grow the operator's memory until it is OOM-killed.
//
// A hyperstatic server's /metrics (images/server/src/admin/metrics.rs) is at most about 3.3 KiB in 58 lines: 14
// families with HELP and TYPE, all 16 status codes of hyperstatic_requests_total, every counter at 20 digits.
// TestLimitsAreFarAboveARealServer checks a generous worst case of that shape stays 100× under both limits.
const (
	// MaxBytes is the most of a /metrics body read. The body is buffered before it is parsed, so it is also
	// about the most memory one scrape holds for the text.
	MaxBytes = 1 << 20
	// MaxLines bounds the lines (series, HELP and TYPE) parsed: the parser's memory grows with the series, many
	// times faster than with the bytes, so short lines could otherwise fill it well inside MaxBytes.
	MaxLines = 10_000
)

// ErrTooLarge is wrapped by the error of a scrape or Parse that hit MaxBytes or MaxLines. Nothing of such an
// exposition is used: a truncated one could lack a request counter that exists, and read as a wrong rate.
var ErrTooLarge = errors.New("metrics exposition too large")

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
	// Content is what the server says about the site it serves; nil when the server does not export the content
	// gauges (an image older than them).
	Content *Content
	// LoadFailed: the server's last content load or reload failed, and it keeps serving the content before it.
	LoadFailed bool
	// LoadError is the server's message for that failure (file and line for a bad _redirects or _headers rule),
	// read from LoadErrorPath by HTTPScraper while LoadFailed or SiteValueLoadFailures is not 0; Parse leaves it
	// empty.
	LoadError string
	// SiteValueRevision is the revision of the site value the server serves ("" when it does not export
	// SiteValueInfo: an image older than the site value).
	SiteValueRevision string
	// SiteValueLoadFailures is SiteValueLoadsTotal{result="failure"}: site values the server refused since it
	// started.
	SiteValueLoadFailures float64
}

// Content is the server's content gauges. Bytes are int64: a site is far below 2^53 bytes, where the float the
// exposition carries stops being exact.
type Content struct {
	Files int64
	// Bytes is the size of every file, identity encoding.
	Bytes int64
	// MemoryBytes is the content held in memory, compressed variants included.
	MemoryBytes int64
	// DiskBytes is the size of the files served from disk (over the memory budget or --max-memory-file-size).
	DiskBytes int64
	// MemoryLimitBytes is the memory limit the server works under; 0 means none.
	MemoryLimitBytes int64
	// MemoryBudgetBytes is the budget for content held in memory; 0 means unlimited.
	MemoryBudgetBytes int64
	// FitMemoryLimitBytes is the smallest memory limit under which every file that may be held in memory would be.
	FitMemoryLimitBytes int64
	// EncodingsPending counts files whose compressed variants the background encoder has yet to make.
	EncodingsPending int64
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
	// Never where the pod points: a tenant's pod could send the operator to any address it can reach.
	resp, err := podtext.NoRedirects(s.Client).Do(req)
	if err != nil {
		return Sample{}, fmt.Errorf("scrape %s: %w", pod.Name, err)
	}
	// Closing without draining drops the connection: a hostile body is not read to its end to reuse it.
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return Sample{}, fmt.Errorf("scrape %s: HTTP %d", pod.Name, resp.StatusCode)
	}
	if resp.ContentLength > MaxBytes {
		return Sample{}, fmt.Errorf("scrape %s: %w: Content-Length %d is over the limit of %d bytes",
			pod.Name, ErrTooLarge, resp.ContentLength, MaxBytes)
	}
	sample, err := Parse(resp.Body)
	if err != nil {
		return Sample{}, fmt.Errorf("scrape %s: %w", pod.Name, err)
	}
	if sample.LoadFailed || sample.SiteValueLoadFailures > 0 {
		// A second request, only while a load failed or once a site value was refused: the message is text the exposition should not carry.
		if sample.LoadError, err = s.get(ctx, pod.Status.PodIP, port, LoadErrorPath, MaxLoadErrorBytes); err != nil {
			sample.LoadError = fmt.Sprintf("(the server's message could not be read: %v)", err)
		}
	}
	sample.Pod = pod.Name
	if s.Now != nil {
		sample.Time = s.Now()
	} else {
		sample.Time = time.Now()
	}
	return sample, nil
}

// get reads a short text answer of the admin port, at most limit bytes of it, without its trailing newline, made
// safe for a status (podtext.Clean).
func (s *HTTPScraper) get(ctx context.Context, ip string, port int, path string, limit int64) (string, error) {
	url := "http://" + net.JoinHostPort(ip, strconv.Itoa(port)) + path
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return "", err
	}
	resp, err := podtext.NoRedirects(s.Client).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d", path, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
	if err != nil {
		return "", err
	}
	// The text ends in a status another person reads: bounded, control characters escaped.
	return podtext.Clean(strings.TrimRight(string(b), "\n"), podtext.MaxStatusText), nil
}

// Parse reads a Prometheus text exposition. Metrics it does not know are ignored; a missing
// hyperstatic_requests_total is an error, because a pod without it is not a hyperstatic server. An exposition
// over MaxBytes or MaxLines is an error wrapping ErrTooLarge; Parse reads at most MaxBytes+1 bytes of r.
func Parse(r io.Reader) (Sample, error) {
	text, err := readLimited(r)
	if err != nil {
		return Sample{}, err
	}
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(bytes.NewReader(text))
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
	if s.Content, err = parseContent(families); err != nil {
		return Sample{}, err
	}
	if f, ok := families[ContentLoadFailed]; ok && len(f.GetMetric()) > 0 {
		s.LoadFailed = value(f.GetMetric()[0]) != 0
	}
	parseSiteValue(families, &s)
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

// parseSiteValue reads the site value's revision and its refused loads. The revision is bounded like any text a
// pod writes that ends in a status: a real one is "sha256:" and 16 hex digits.
func parseSiteValue(families map[string]*dto.MetricFamily, s *Sample) {
	if f, ok := families[SiteValueInfo]; ok && len(f.GetMetric()) > 0 {
		for _, l := range f.GetMetric()[0].GetLabel() {
			if l.GetName() == "revision" {
				s.SiteValueRevision = podtext.Clean(l.GetValue(), maxRevisionLength)
			}
		}
	}
	if f, ok := families[SiteValueLoadsTotal]; ok {
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "result" && l.GetValue() == "failure" {
					s.SiteValueLoadFailures += value(m)
				}
			}
		}
	}
}

// maxRevisionLength bounds a site value revision read from a pod.
const maxRevisionLength = 64

// maxGauge bounds a content gauge (8 EiB): above it the float does not convert to int64.
const maxGauge = 1 << 62

// parseContent reads the content gauges: nil when there are none, an error when only some are there.
func parseContent(families map[string]*dto.MetricFamily) (*Content, error) {
	v := make(map[string]int64, len(contentGauges))
	var missing []string
	for _, name := range contentGauges {
		f, ok := families[name]
		if !ok || len(f.GetMetric()) == 0 {
			missing = append(missing, name)
			continue
		}
		x := value(f.GetMetric()[0])
		if math.IsNaN(x) || x < 0 || x > maxGauge {
			return nil, fmt.Errorf("parse metrics: %s is %v, not a size or a count", name, x)
		}
		v[name] = int64(x)
	}
	switch len(missing) {
	case 0:
	case len(contentGauges):
		return nil, nil
	default:
		return nil, fmt.Errorf("parse metrics: content gauges %v are missing", missing)
	}
	return &Content{
		Files:               v[ContentFiles],
		Bytes:               v[ContentBytes],
		MemoryBytes:         v[ContentMemoryBytes],
		DiskBytes:           v[ContentDiskBytes],
		MemoryLimitBytes:    v[MemoryLimitBytes],
		MemoryBudgetBytes:   v[ContentMemoryBudgetBytes],
		FitMemoryLimitBytes: v[ContentFitMemoryLimitBytes],
		EncodingsPending:    v[ContentEncodingsPending],
	}, nil
}

// readLimited reads all of r, failing as soon as it passes MaxBytes or MaxLines: it never reads more than
// MaxBytes+1 bytes, and stops at the first byte of line MaxLines+1.
func readLimited(r io.Reader) ([]byte, error) {
	text, err := io.ReadAll(&limitedReader{r: r})
	if err != nil {
		if errors.Is(err, ErrTooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("read metrics: %w", err)
	}
	return text, nil
}

// limitedReader counts bytes and lines as they pass and fails a Read that crosses a limit.
type limitedReader struct {
	r     io.Reader
	n     int  // bytes read
	lines int  // lines started
	open  bool // the last byte read was inside a line (not its newline)
}

func (l *limitedReader) Read(p []byte) (int, error) {
	// Ask for one byte more than the limit allows, so "exactly MaxBytes" and "more" can be told apart.
	if rest := MaxBytes + 1 - l.n; len(p) > rest {
		p = p[:rest]
	}
	n, err := l.r.Read(p)
	l.n += n
	if l.n > MaxBytes {
		return 0, fmt.Errorf("%w: the body is over the limit of %d bytes", ErrTooLarge, MaxBytes)
	}
	for _, b := range p[:n] {
		if !l.open {
			l.lines++
			if l.lines > MaxLines {
				return 0, fmt.Errorf("%w: more than the limit of %d lines", ErrTooLarge, MaxLines)
			}
		}
		l.open = b != '\n'
	}
	return n, err
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
