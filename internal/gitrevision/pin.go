package gitrevision

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// PinPath is the fetcher's endpoint that pins a deploy of its history (internal/contentagent/pin.go holds the
// contract): POST {"pin": "<commit>"} or {"pin": null} with the site's pin token as a bearer token.
const PinPath = "/pin"

// ErrNotInHistory is the fetcher's refusal of a pin whose commit is not in its history (409).
var ErrNotInHistory = errors.New("the commit is not in the fetcher's history")

// Pinner asks a fetcher to publish a pinned deploy ("" unpins) and returns the revision it then publishes.
type Pinner interface {
	Pin(ctx context.Context, pod *corev1.Pod, port int, token []byte, commit string) (Revision, error)
}

// Pin implements Pinner over HTTP: no redirect followed, the answer bounded and checked like /revision's.
func (h *HTTPReader) Pin(ctx context.Context, pod *corev1.Pod, port int, token []byte, commit string) (Revision, error) {
	if pod.Status.PodIP == "" {
		return Revision{}, fmt.Errorf("pod %s has no IP yet", pod.Name)
	}
	var pin *string
	if commit != "" {
		pin = &commit
	}
	body, err := json.Marshal(map[string]*string{"pin": pin})
	if err != nil {
		return Revision{}, err
	}
	u := "http://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(port)) + PinPath
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return Revision{}, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+string(token))
	resp, err := podtext.NoRedirects(h.Client).Do(req)
	if err != nil {
		return Revision{}, fmt.Errorf("POST %s of pod %s: %w", PinPath, pod.Name, err)
	}
	defer resp.Body.Close() // closed without draining, as /revision's
	switch resp.StatusCode {
	case http.StatusOK:
	case http.StatusConflict:
		return Revision{}, ErrNotInHistory
	default:
		return Revision{}, fmt.Errorf("POST %s of pod %s: HTTP %d", PinPath, pod.Name, resp.StatusCode)
	}
	return readAnswer(resp, "POST "+PinPath, pod)
}
