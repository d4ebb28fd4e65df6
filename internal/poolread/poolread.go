// Package poolread reads what a pool's processes say about its sites on GET /sites (docs/design/pools.md): each
// pool server pod's admin port (which index entry, site value and content revision it serves, per site) and the pool fetcher
// (the bundle it serves, per site). The pool controller reads each once per pass, whatever the number of sites.
//
// A pool pod serves the internet and the fetcher follows tenants' repositories: nothing they answer is trusted
// (internal/podtext). No redirect is followed, the body is bounded (MaxBytes) and so is the number of entries
// (MaxSites), each field is checked (a revision has its contract's shape) and error text is escaped and bounded
// before a status or event can hold it. Entries for ids the caller does not know are dropped (Keep), so a pod
// cannot make the operator hold or publish sites that are not in the index.
package poolread

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// Path is the endpoint both processes answer.
const Path = "/sites"

// Bounds on one answer. A real answer is about 250 bytes per site; an index holds about 30,000 sites at 16 shards
// (docs/design/pools.md): 16 MiB and 100,000 entries are well above that and bound the operator's memory.
const (
	MaxBytes = 16 << 20
	MaxSites = 100_000
	// maxError bounds a site's error text kept from a pod (podtext.Clean).
	maxError = 512
)

// ServerSite is one site as a pool server pod reports it.
type ServerSite struct {
	ID string
	// State: unloaded, disk, memory, refused or missing.
	State string
	// EntryRevision names the whole index entry the pod has in effect, hostnames included ("sha256:" + 16 hex
	// digits, poolindex.EntryRevision), "" for none.
	EntryRevision string
	// ValueRevision is the site value it serves ("sha256:" + 16 hex digits), "" for none.
	ValueRevision string
	// ContentRevision is the tree it serves (16 hex digits of the bundle), "" for none.
	ContentRevision string
	// Error is the pod's last error for the site, escaped and bounded.
	Error string
	// Requests is the pod's count of the site's responses since the site entered the pod's index (or the pod
	// started); Counted says the pod reported one that is a whole number in [0, 2^64). A counter that is not is
	// left out (Counted false: this pod's share of the site's traffic is unknown), the rest of the answer is kept.
	Requests uint64
	Counted  bool
}

// FetcherSite is one site as the pool fetcher reports it.
type FetcherSite struct {
	ID string
	// Bundle is the sha256 hex of the bundle served now, "" while none.
	Bundle string
	// Commit is the Git commit (or, for ConfigMap sites, the sha256 of the mirrors' data), "" while none.
	Commit string
	// Error is the last failure, escaped and bounded; the last good bundle keeps being served.
	Error string
}

// ContentRevision is the name a pool pod gives the tree of bundle: its first 16 hex digits ("" for none).
func ContentRevision(bundle string) string {
	if len(bundle) < 16 {
		return ""
	}
	return bundle[:16]
}

// Keep says whether an id is one the caller asked about (a site of the index).
type Keep func(id string) bool

// Reader reads /sites of a pool server pod (its admin port) and of the pool fetcher pod.
type Reader interface {
	ServerSites(ctx context.Context, pod *corev1.Pod, keep Keep) (map[string]ServerSite, error)
	FetcherSites(ctx context.Context, pod *corev1.Pod, keep Keep) (map[string]FetcherSite, error)
}

// HTTPReader reads http://<podIP>:<port>/sites.
type HTTPReader struct {
	Client *http.Client
	// AdminPort and FetcherPort are the ports of the server's admin listener and of the fetcher.
	AdminPort, FetcherPort int
	// Addr overrides where a pod's port is reached (tests: a loopback listener per pod); nil: podIP:port.
	Addr func(pod *corev1.Pod, port int) string
}

// NewHTTPReader is a reader with a short timeout, so one stuck pod cannot stall a pass.
func NewHTTPReader(adminPort, fetcherPort int) *HTTPReader {
	return &HTTPReader{Client: &http.Client{Timeout: 5 * time.Second}, AdminPort: adminPort, FetcherPort: fetcherPort}
}

type serverAnswer struct {
	Sites []struct {
		ID              string      `json:"id"`
		State           string      `json:"state"`
		EntryRevision   string      `json:"entryRevision"`
		ValueRevision   string      `json:"valueRevision"`
		ContentRevision string      `json:"contentRevision"`
		Error           string      `json:"error"`
		Requests        json.Number `json:"requests"`
	} `json:"sites"`
}

type fetcherAnswer struct {
	Sites []struct {
		ID     string `json:"id"`
		Commit string `json:"commit"`
		Bundle string `json:"bundle"`
		Error  string `json:"error"`
	} `json:"sites"`
}

// ServerSites implements Reader.
func (h *HTTPReader) ServerSites(ctx context.Context, pod *corev1.Pod, keep Keep) (map[string]ServerSite, error) {
	var a serverAnswer
	if err := h.get(ctx, pod, h.AdminPort, &a); err != nil {
		return nil, err
	}
	return parseServer(a, keep)
}

// FetcherSites implements Reader.
func (h *HTTPReader) FetcherSites(ctx context.Context, pod *corev1.Pod, keep Keep) (map[string]FetcherSite, error) {
	var a fetcherAnswer
	if err := h.get(ctx, pod, h.FetcherPort, &a); err != nil {
		return nil, err
	}
	return parseFetcher(a, keep)
}

// parseServer checks a server's answer, keeping the sites keep asks about.
func parseServer(a serverAnswer, keep Keep) (map[string]ServerSite, error) {
	if len(a.Sites) > MaxSites {
		return nil, fmt.Errorf("%d sites, over %d", len(a.Sites), MaxSites)
	}
	out := make(map[string]ServerSite, len(a.Sites))
	for _, s := range a.Sites {
		if !keep(s.ID) {
			continue
		}
		site := ServerSite{ID: s.ID, State: podtext.Clean(s.State, 16), Error: podtext.Clean(strings.TrimSpace(s.Error), maxError)}
		if s.EntryRevision != "" && !validRevision(s.EntryRevision) {
			return nil, fmt.Errorf("site %s: entryRevision %q is not sha256: and 16 hex digits", s.ID, podtext.Clean(s.EntryRevision, 80))
		}
		if s.ValueRevision != "" && !validRevision(s.ValueRevision) {
			return nil, fmt.Errorf("site %s: valueRevision %q is not sha256: and 16 hex digits", s.ID, podtext.Clean(s.ValueRevision, 80))
		}
		if s.ContentRevision != "" && !hex(s.ContentRevision, 16) {
			return nil, fmt.Errorf("site %s: contentRevision %q is not 16 hex digits", s.ID, podtext.Clean(s.ContentRevision, 80))
		}
		site.EntryRevision, site.ValueRevision, site.ContentRevision = s.EntryRevision, s.ValueRevision, s.ContentRevision
		if n, err := strconv.ParseUint(string(s.Requests), 10, 64); err == nil {
			site.Requests, site.Counted = n, true
		}
		out[s.ID] = site
	}
	return out, nil
}

// parseFetcher checks a fetcher's answer, keeping the sites keep asks about.
func parseFetcher(a fetcherAnswer, keep Keep) (map[string]FetcherSite, error) {
	if len(a.Sites) > MaxSites {
		return nil, fmt.Errorf("%d sites, over %d", len(a.Sites), MaxSites)
	}
	out := make(map[string]FetcherSite, len(a.Sites))
	for _, s := range a.Sites {
		if !keep(s.ID) {
			continue
		}
		if s.Bundle != "" && !hex(s.Bundle, 64) {
			return nil, fmt.Errorf("site %s: bundle %q is not 64 hex digits", s.ID, podtext.Clean(s.Bundle, 80))
		}
		if s.Commit != "" && !hex(s.Commit, 40) && !hex(s.Commit, 64) {
			return nil, fmt.Errorf("site %s: commit %q is not 40 or 64 hex digits", s.ID, podtext.Clean(s.Commit, 80))
		}
		out[s.ID] = FetcherSite{ID: s.ID, Bundle: s.Bundle, Commit: s.Commit, Error: podtext.Clean(strings.TrimSpace(s.Error), maxError)}
	}
	return out, nil
}

// get reads and decodes one bounded answer.
func (h *HTTPReader) get(ctx context.Context, pod *corev1.Pod, port int, into any) error {
	addr, err := h.addr(pod, port)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+Path, nil)
	if err != nil {
		return err
	}
	resp, err := podtext.NoRedirects(h.Client).Do(req)
	if err != nil {
		return fmt.Errorf("read %s of pod %s: %w", Path, pod.Name, err)
	}
	// Closing without draining drops the connection: a hostile body is not read to its end.
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("read %s of pod %s: HTTP %d", Path, pod.Name, resp.StatusCode)
	}
	if resp.ContentLength > MaxBytes {
		return fmt.Errorf("read %s of pod %s: Content-Length %d over %d bytes", Path, pod.Name, resp.ContentLength, MaxBytes)
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxBytes+1))
	if err != nil {
		return fmt.Errorf("read %s of pod %s: %w", Path, pod.Name, err)
	}
	if len(body) > MaxBytes {
		return fmt.Errorf("read %s of pod %s: the answer is over %d bytes", Path, pod.Name, MaxBytes)
	}
	if err := json.Unmarshal(body, into); err != nil {
		return fmt.Errorf("read %s of pod %s: %s", Path, pod.Name, podtext.Clean(err.Error(), 200))
	}
	return nil
}

// addr is where port of pod is reached.
func (h *HTTPReader) addr(pod *corev1.Pod, port int) (string, error) {
	if h.Addr != nil {
		return h.Addr(pod, port), nil
	}
	if pod.Status.PodIP == "" {
		return "", fmt.Errorf("pod %s has no IP yet", pod.Name)
	}
	return net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)), nil
}

// validRevision: "sha256:" and 16 lower-case hex digits (sitevalue.Revision, poolindex.EntryRevision).
func validRevision(s string) bool {
	rest, ok := strings.CutPrefix(s, "sha256:")
	return ok && hex(rest, 16)
}

// hex says s is n lower-case hex digits.
func hex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for i := range len(s) {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
