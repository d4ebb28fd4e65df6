package contract

import (
	"context"
	"io"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/controllers/benchmark"
	"hyperstatic.dev/hyperstatic/internal/podmetrics"
	"hyperstatic.dev/hyperstatic/internal/serverbin"
	"hyperstatic.dev/hyperstatic/internal/sitevalue"
)

// The admin-port contract: what the operator reads from a running server pod. The autoscaler and the staticsite
// and benchmark controllers read /metrics through internal/podmetrics, which ignores metrics it cannot find
// (podmetrics.Parse only insists on the request counter), so a renamed gauge would quietly read as zero.

// metricRead is a metric family the operator reads and the labels it reads from it.
type metricRead struct {
	name   string
	labels []string
}

// operatorReads lists every name internal/podmetrics reads (its exported constants) and the label names
// podmetrics.Parse looks up on hyperstatic_worker_cpus ("cpus", "pinned"; string literals there). No other Go
// code reads the server's metrics: they all go through podmetrics.
var operatorReads = []metricRead{
	{name: podmetrics.RequestsTotal},
	{name: podmetrics.WorkerCPUs, labels: []string{"cpus", "pinned"}},
	{name: podmetrics.ProcessCPUSeconds},
	{name: podmetrics.ProcessResidentSize},
	// The content gauges behind status.content and ContentInMemory (controllers/staticsite/servedcontent.go).
	{name: podmetrics.ContentFiles},
	{name: podmetrics.ContentBytes},
	{name: podmetrics.ContentMemoryBytes},
	{name: podmetrics.ContentDiskBytes},
	{name: podmetrics.MemoryLimitBytes},
	{name: podmetrics.ContentMemoryBudgetBytes},
	{name: podmetrics.ContentFitMemoryLimitBytes},
	{name: podmetrics.ContentEncodingsPending},
	// The site value served, behind status.siteValue and SiteValueApplied (controllers/staticsite/step_sitevalue.go).
	{name: podmetrics.SiteValueInfo, labels: []string{"revision"}},
	{name: podmetrics.SiteValueLoadsTotal, labels: []string{"result"}},
	// A failed reload, behind ContentAvailable=False ContentLoadFailed (controllers/staticsite/loadfailure.go).
	{name: podmetrics.ContentLoadFailed},
}

// servedSpec is the StaticSite the metrics tests run: the server starts from the operator's own arguments.
var servedSpec = v1alpha1.ServerSpec{
	NotFoundPage: "/404.html",
	CacheControl: []v1alpha1.CacheControlRule{{Glob: "/assets/**", Value: "public, max-age=31536000, immutable"}},
	Headers:      []v1alpha1.Header{{Name: "X-Frame-Options", Value: "DENY"}},
}

// startSite starts the real server on the operator's arguments for servedSpec, on loopback ports.
func startSite(t *testing.T) *serverbin.Process {
	t.Helper()
	bin := serverbin.Require(t)
	args := operatorArgs(t, bin, site(servedSpec), writeSite(t))
	return serverbin.Start(t, bin, args)
}

// TestContractMetricsOperatorReadsExist scrapes the running server with the operator's own scraper and parser and
// checks that every metric and label the operator reads is there, and that the request counter counts requests.
func TestContractMetricsOperatorReadsExist(t *testing.T) {
	srv := startSite(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	// The operator's scraper (podmetrics.HTTPScraper) against the real admin port, addressed as a pod.
	host, port, err := net.SplitHostPort(srv.AdminAddr)
	if err != nil {
		t.Fatal(err)
	}
	adminPort, _ := strconv.Atoi(port)
	scraper := &podmetrics.HTTPScraper{Client: &http.Client{Timeout: 5 * time.Second}, Port: adminPort}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "contract-0"}, Status: corev1.PodStatus{PodIP: host}}

	before, err := scraper.Scrape(ctx, pod)
	if err != nil {
		t.Fatalf("the operator's scraper cannot read the real server: %v\nstderr:\n%s", err, srv.Stderr.String())
	}

	// Names and labels, from the raw exposition parsed with the same text parser podmetrics uses. podmetrics.Parse
	// alone would not notice a missing gauge: it reads it as zero.
	body := get(t, "http://"+srv.AdminAddr+"/metrics", http.StatusOK)
	var parser expfmt.TextParser
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("the server's /metrics is not valid Prometheus text: %v\n%s", err, body)
	}
	for _, want := range operatorReads {
		f, ok := families[want.name]
		if !ok || len(f.GetMetric()) == 0 {
			t.Errorf("the operator reads %s but the server's /metrics has no such metric; it has: %s",
				want.name, strings.Join(slices.Sorted(maps.Keys(families)), ", "))
			continue
		}
		for _, label := range want.labels {
			for _, m := range f.GetMetric() {
				if !hasLabel(m.GetLabel(), label) {
					t.Errorf("the operator reads label %q of %s but the server's sample has labels %v",
						label, want.name, m.GetLabel())
				}
			}
		}
	}

	// What podmetrics.Parse made of it: values that only come out non-zero when names and labels matched.
	if want := sitevalue.Render(site(servedSpec)).Revision; before.SiteValueRevision != want {
		t.Errorf("podmetrics read site value revision %q from the real server; the operator rendered %s", before.SiteValueRevision, want)
	}
	if before.Workers < 1 || before.CPUs == "" || before.ResidentBytes <= 0 {
		t.Errorf("podmetrics read workers=%d cpus=%q resident=%v from the real server; want >=1, a CPU list, >0\n%s",
			before.Workers, before.CPUs, before.ResidentBytes, body)
	}
	// The site is siteFiles, all of it in memory: the file count and size are exact.
	wantBytes := 0
	for _, b := range siteFiles {
		wantBytes += len(b)
	}
	if c := before.Content; c == nil || c.Files != int64(len(siteFiles)) || c.Bytes != int64(wantBytes) ||
		c.DiskBytes != 0 || c.MemoryBytes < c.Bytes || c.FitMemoryLimitBytes <= 0 {
		t.Errorf("podmetrics read content %+v from the real server; want %d files, %d bytes, none on disk, a fit limit\n%s",
			c, len(siteFiles), wantBytes, body)
	}

	// Requests on the HTTP port move the counter the autoscaler turns into requests per second, by exactly the
	// number made (the admin port's own requests are not counted).
	paths := map[string]int{
		"/":                 http.StatusOK,
		"/assets/app.js":    http.StatusOK,
		"/assets/style.css": http.StatusOK,
		"/no-such-page":     http.StatusNotFound,
	}
	for p, code := range paths {
		get(t, "http://"+srv.HTTPAddr+p, code)
	}
	want := before.Requests + float64(len(paths))
	// The server counts a response when it queues it, before the client can see it, so the first scrape should
	// already agree; polling to a deadline keeps the test correct should counting move after the write.
	var after podmetrics.Sample
	for deadline := time.Now().Add(10 * time.Second); ; {
		after, err = scraper.Scrape(ctx, pod)
		if err != nil {
			t.Fatal(err)
		}
		if after.Requests >= want || time.Now().After(deadline) {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if after.Requests != want {
		t.Fatalf("%s went from %v to %v after %d requests, want %v",
			podmetrics.RequestsTotal, before.Requests, after.Requests, len(paths), want)
	}
}

// TestContractAdminEndpoints checks the other admin paths the operator relies on: the server container's probes
// (controllers/staticsite/desired/deployment.go: startup and liveness GET /healthz, readiness GET /readyz) and the file
// list the benchmark controller reads (controllers/benchmark HTTPContentLister: GET /content, parsed by
// benchmark.ParseContentList; that lister is fixed to port 9090, so this reads the endpoint directly and parses it
// with the same function).
func TestContractAdminEndpoints(t *testing.T) {
	srv := startSite(t)
	get(t, "http://"+srv.AdminAddr+"/healthz", http.StatusOK)
	get(t, "http://"+srv.AdminAddr+"/readyz", http.StatusOK)

	list := get(t, "http://"+srv.AdminAddr+"/content", http.StatusOK)
	paths, err := benchmark.ParseContentList(strings.NewReader(list))
	if err != nil {
		t.Fatalf("the benchmark controller cannot read /content: %v\n%s", err, list)
	}
	for _, p := range []string{"/index.html", "/404.html", "/assets/app.js", "/assets/style.css"} {
		if !slices.Contains(paths, p) {
			t.Errorf("/content as the benchmark controller reads it does not list %s: %q\n%s", p, paths, list)
		}
	}
}

// get fetches url and fails the test unless it answers the wanted status; it returns the body.
func get(t *testing.T, url string, wantStatus int) string {
	t.Helper()
	client := &http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	if resp.StatusCode != wantStatus {
		t.Fatalf("GET %s: HTTP %d, want %d\n%s", url, resp.StatusCode, wantStatus, body)
	}
	return string(body)
}

func hasLabel(labels []*dto.LabelPair, name string) bool {
	for _, l := range labels {
		if l.GetName() == name {
			return true
		}
	}
	return false
}
