package podmetrics

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const exposition = `# HELP hyperstatic_requests_total Requests answered, by status code.
# TYPE hyperstatic_requests_total counter
hyperstatic_requests_total{code="200"} 1200
hyperstatic_requests_total{code="304"} 30
hyperstatic_requests_total{code="404"} 5
# TYPE hyperstatic_worker_cpus gauge
hyperstatic_worker_cpus{cpus="1",pinned="true"} 1
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 12.5
# TYPE process_resident_memory_bytes gauge
process_resident_memory_bytes 4.194304e+06
`

func TestParse(t *testing.T) {
	s, err := Parse(strings.NewReader(exposition))
	if err != nil {
		t.Fatal(err)
	}
	want := Sample{Requests: 1235, CPUSeconds: 12.5, ResidentBytes: 4194304, Workers: 1, CPUs: "1", Pinned: true}
	if s != want {
		t.Fatalf("Parse = %+v, want %+v", s, want)
	}
}

func TestParseRejectsForeignExposition(t *testing.T) {
	_, err := Parse(strings.NewReader("# TYPE up gauge\nup 1\n"))
	if err == nil || !strings.Contains(err.Error(), RequestsTotal) {
		t.Fatalf("want an error naming %s, got %v", RequestsTotal, err)
	}
}

func TestHTTPScraper(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/metrics" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprint(w, exposition)
	}))
	defer srv.Close()
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "site-0"}, Status: corev1.PodStatus{PodIP: host}}

	s := NewHTTPScraper()
	s.Port = p
	got, err := s.Scrape(context.Background(), pod)
	if err != nil {
		t.Fatal(err)
	}
	if got.Pod != "site-0" || got.Requests != 1235 || got.Time.IsZero() {
		t.Fatalf("unexpected sample %+v", got)
	}

	if _, err := s.Scrape(context.Background(), &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pending"}}); err == nil {
		t.Fatal("scraping a pod without an IP must fail")
	}
}
