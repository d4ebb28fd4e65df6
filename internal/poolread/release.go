package poolread

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	corev1 "k8s.io/api/core/v1"

	"hyperstatic.dev/hyperstatic/internal/podtext"
)

// ReleasePath is where a pool server pod's held drain is released (its admin port, `--drain-hold`): the one
// thing the operator tells a pool pod rather than reads from it (internal/poolplacement/drain.go, step 5).
const ReleasePath = "/drain/release"

// ErrNotDraining is a release the pod refused because its drain has not begun (409: its SIGTERM not come yet);
// the caller tries again.
var ErrNotDraining = errors.New("not draining yet")

// Releaser releases the held drain of a terminating pool server pod.
type Releaser interface {
	ReleaseDrain(ctx context.Context, pod *corev1.Pod) error
}

// ReleaseDrain implements Releaser: POST http://<podIP>:<admin port>/drain/release, no redirect followed, the
// answer's body not read (only its status says anything).
func (h *HTTPReader) ReleaseDrain(ctx context.Context, pod *corev1.Pod) error {
	addr, err := h.addr(pod, h.AdminPort)
	if err != nil {
		return err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+addr+ReleasePath, http.NoBody)
	if err != nil {
		return err
	}
	resp, err := podtext.NoRedirects(h.Client).Do(req)
	if err != nil {
		return fmt.Errorf("release the drain of pod %s: %w", pod.Name, err)
	}
	defer resp.Body.Close()
	switch resp.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusConflict:
		return fmt.Errorf("release the drain of pod %s: %w", pod.Name, ErrNotDraining)
	}
	return fmt.Errorf("release the drain of pod %s: HTTP %d", pod.Name, resp.StatusCode)
}
