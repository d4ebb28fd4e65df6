package podmetrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A tenant chooses its pods' image, so whatever answers on the admin port may be hostile or broken. These tests
// serve bodies no hyperstatic server produces and check the scrape stops at the limits, with an error that names
// the pod and the limit, after reading no more than the limit (plus one read).

// countingTransport counts the response body bytes the scraper actually read.
type countingTransport struct{ read atomic.Int64 }

func (c *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	resp.Body = &countingBody{ReadCloser: resp.Body, n: &c.read}
	return resp, nil
}

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}

// serve starts handler and returns a scraper for it that counts what it read, and a pod addressed at it.
func serve(t *testing.T, handler http.HandlerFunc) (*HTTPScraper, *countingTransport, *corev1.Pod) {
	t.Helper()
	srv := httptest.NewServer(handler)
	t.Cleanup(srv.Close)
	host, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	p, _ := strconv.Atoi(port)
	ct := &countingTransport{}
	s := &HTTPScraper{Client: &http.Client{Transport: ct}, Port: p}
	return s, ct, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "tenant-0"}, Status: corev1.PodStatus{PodIP: host}}
}

// stream writes line until the client goes away (an endless body).
func stream(line string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat(line, 4096/len(line)+1))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
}

func wantLimitError(t *testing.T, err error, limit string) {
	t.Helper()
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("want ErrTooLarge, got %v", err)
	}
	for _, want := range []string{"tenant-0", limit} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("error %q does not name %q", err, want)
		}
	}
}

func TestScrapeStopsAnEndlessBodyAtMaxBytes(t *testing.T) {
	// One endless comment line: no line limit can catch it, only the byte limit.
	s, ct, pod := serve(t, stream("#"))
	_, err := s.Scrape(scrapeContext(t), pod)
	wantLimitError(t, err, strconv.Itoa(MaxBytes)+" bytes")
	// io.ReadAll-style reads are up to 32 KiB past what was asked; the reader asks for at most MaxBytes+1.
	if n := ct.read.Load(); n > MaxBytes+1 {
		t.Fatalf("read %d body bytes, want at most MaxBytes+1 = %d", n, MaxBytes+1)
	}
}

func TestScrapeStopsMillionsOfSeriesAtMaxLines(t *testing.T) {
	// Short series lines: 10,001 lines are ~80 KiB, far under MaxBytes, so the line limit is what stops it.
	s, ct, pod := serve(t, stream("x{a=\"b\"} 1\n"))
	_, err := s.Scrape(scrapeContext(t), pod)
	wantLimitError(t, err, strconv.Itoa(MaxLines)+" lines")
	if n := ct.read.Load(); n > int64(MaxLines*len("x{a=\"b\"} 1\n")+64<<10) {
		t.Fatalf("read %d body bytes for a %d-line limit", n, MaxLines)
	}
}

func TestScrapeRejectsAnOversizedContentLengthWithoutReading(t *testing.T) {
	s, ct, pod := serve(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.Itoa(MaxBytes+1))
		w.WriteHeader(http.StatusOK)
		w.(http.Flusher).Flush()
		// Send nothing and hold the response open: a scraper that tried to read would wait for the client timeout.
		<-r.Context().Done()
	})
	_, err := s.Scrape(scrapeContext(t), pod)
	wantLimitError(t, err, strconv.Itoa(MaxBytes)+" bytes")
	if n := ct.read.Load(); n != 0 {
		t.Fatalf("read %d body bytes of a response announced over the limit", n)
	}
}

func TestParseLimits(t *testing.T) {
	// Exactly at the limits is fine; one past is an error, never a partial read.
	atLines := exposition + strings.Repeat("# filler\n", MaxLines-strings.Count(exposition, "\n"))
	if _, err := Parse(strings.NewReader(atLines)); err != nil {
		t.Fatalf("%d lines: %v", MaxLines, err)
	}
	if _, err := Parse(strings.NewReader(atLines + "x 1")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%d lines (the last unterminated): want ErrTooLarge, got %v", MaxLines+1, err)
	}
	atBytes := exposition + "#" + strings.Repeat(" ", MaxBytes-len(exposition)-2) + "\n"
	if _, err := Parse(strings.NewReader(atBytes)); err != nil {
		t.Fatalf("%d bytes: %v", MaxBytes, err)
	}
	if _, err := Parse(strings.NewReader(atBytes + "\n")); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("%d bytes: want ErrTooLarge, got %v", MaxBytes+1, err)
	}
}

// The limits leave room: the largest exposition a hyperstatic server writes (every status code counted, every
// family with its HELP and TYPE; images/server/src/admin/metrics.rs) is a few KiB and a few dozen lines.
func TestLimitsAreFarAboveARealServer(t *testing.T) {
	var b strings.Builder
	b.WriteString("# HELP hyperstatic_requests_total HTTP responses sent, by status code.\n# TYPE hyperstatic_requests_total counter\n")
	for _, code := range []int{200, 206, 301, 304, 400, 404, 405, 408, 412, 414, 416, 431, 500, 501, 503, 505} {
		fmt.Fprintf(&b, "hyperstatic_requests_total{code=\"%d\"} 18446744073709551615\n", code)
	}
	// 14 more families, each with a long HELP, a TYPE and one or two samples with 20-digit values.
	for i := range 14 {
		fmt.Fprintf(&b, "# HELP hyperstatic_family_%02d_with_a_long_name %s\n# TYPE hyperstatic_family_%02d_with_a_long_name gauge\n",
			i, strings.Repeat("h", 80), i)
		fmt.Fprintf(&b, "hyperstatic_family_%02d_with_a_long_name{result=\"success\",cpus=\"0-255\"} 18446744073709551615\n", i)
		fmt.Fprintf(&b, "hyperstatic_family_%02d_with_a_long_name{result=\"failure\",cpus=\"0-255\"} 18446744073709551615\n", i)
	}
	lines, size := strings.Count(b.String(), "\n"), b.Len()
	t.Logf("a generous worst case of the server's exposition: %d bytes, %d lines", size, lines)
	if size*100 > MaxBytes || lines*100 > MaxLines {
		t.Fatalf("%d bytes / %d lines is within 100× of the limits (%d bytes, %d lines)", size, lines, MaxBytes, MaxLines)
	}
	if _, err := Parse(strings.NewReader(b.String())); err != nil {
		t.Fatal(err)
	}
}

// scrapeContext is a failsafe, not part of what is tested: should a limit stop working, the scrape fails at this
// deadline instead of hanging the test binary.
func scrapeContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}
