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
	"unicode"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// MaxPaths bounds the file list put in the script ConfigMap (ConfigMaps hold at most 1 MiB).
const MaxPaths = 10000

// ContentLister lists the URL paths a server pod serves (GET /content on its admin port). The operator uses
// HTTPContentLister; the envtest suite, which has no running server, feeds its own.
type ContentLister interface {
	List(ctx context.Context, pod *corev1.Pod) ([]string, error)
}

// HTTPContentLister reads http://<podIP>:<admin>/content: text/plain, one URL path per line.
type HTTPContentLister struct {
	Client *http.Client
	// Port overrides the admin port (tests); zero means v1alpha1.AdminPort.
	Port int
}

// NewHTTPContentLister returns a lister with a short timeout.
func NewHTTPContentLister() *HTTPContentLister {
	return &HTTPContentLister{Client: &http.Client{Timeout: 5 * time.Second}}
}

// List implements ContentLister.
func (l *HTTPContentLister) List(ctx context.Context, pod *corev1.Pod) ([]string, error) {
	if pod.Status.PodIP == "" {
		return nil, fmt.Errorf("pod %s has no IP", pod.Name)
	}
	port := l.Port
	if port == 0 {
		port = v1alpha1.AdminPort
	}
	url := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + "/content"
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := podtext.NoRedirects(l.Client).Do(req) // never where the pod points (internal/podtext)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: HTTP %d", url, resp.StatusCode)
	}
	return ParseContentList(io.LimitReader(resp.Body, 8<<20))
}

// ParseContentList reads the server's admin /content list: one file per line, its URL path first, then
// tab-separated columns this controller does not use (where the file is served from, its encodings; see
// images/server/README.md). Blank lines are skipped; paths must start with "/"; a path holding a control character
// (a file name with a line break could smuggle lines into the k6 script's list) is skipped. The contract test
// (internal/contract) runs it on the real server's output.
func ParseContentList(r io.Reader) ([]string, error) {
	var out []string
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line, _, _ := strings.Cut(strings.TrimSpace(sc.Text()), "\t")
		if line == "" {
			continue
		}
		if !strings.HasPrefix(line, "/") {
			return nil, fmt.Errorf("content list: %q is not a URL path", podtext.Clean(line, 256))
		}
		if strings.ContainsFunc(line, unicode.IsControl) || !utf8.ValidString(line) {
			continue
		}
		out = append(out, line)
		if len(out) > MaxPaths {
			return nil, fmt.Errorf("content list: more than %d files; list the paths to load in spec.paths.list", MaxPaths)
		}
	}
	return out, sc.Err()
}
