package gitcontent

// The pin's fast path (docs/design/deploys.md, "The operator's hop"): a rollback must reach every pod within 1 s
// under load, and the site's pass is too slow a road for it. The pass waits in the controller's queue behind the
// pass in flight, then runs every step before the fetcher's (applies, reads of the API server, each under the
// manager's request budget) on an operator of a tenth of a CPU: in kind, beside every e2e scenario, the fetcher
// got the pin 4.4 s after the annotation's write while the fetcher and the pullers took 0.3 s together.
//
// The contract:
//
//   - PinTargets remembers, per site, the fetcher pod its last pass read (name, UID, IP) and the pin token. The
//     pass fills it when it reads the fetcher (deliverPin) and forgets it with the site (Forget).
//   - PinNow delivers the site's wanted pin (or unpin) to that pod at once: one read of the pod from the
//     manager's cache, one POST /pin. No API request, no status write, no event: the pass that the same change
//     queues reads what the fetcher then publishes and says it (DeployPinned, PinServed), as before.
//   - The operator never trusts the remembered address alone: the pod is read again from the cache and must be
//     the same pod (UID), at the same IP, running and not being deleted, or nothing is sent (the token must never
//     reach a pod that took over an address). With no remembered pod (a new operator, a new fetcher), nothing is
//     sent and the pass delivers the pin as it always did.
//   - Two writers send pins (this path and the pass), so each sends the wanted pin of the newest site the cache
//     holds, read just before sending: a pass that started before the change does not undo it (deliverPin).
//     /pin is idempotent (200 when the pin is already taken).

import (
	"context"
	"errors"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
	"hyperstatic.dev/hyperstatic/internal/gitrevision"
)

// PinTargets is what the fast path knows of each Git site's fetcher; the zero value is empty and ready. A nil
// *PinTargets remembers nothing (no fast path).
type PinTargets struct {
	mu    sync.Mutex
	sites map[types.NamespacedName]pinTarget
}

// pinTarget is the fetcher pod the site's last pass read, and the site's pin token.
type pinTarget struct {
	pod   types.NamespacedName
	uid   types.UID
	ip    string
	token []byte
}

// remember records site's fetcher pod p and its pin token (the pass, deliverPin).
func (t *PinTargets) remember(site types.NamespacedName, p *corev1.Pod, token []byte) {
	if t == nil || token == nil || p.Status.PodIP == "" {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.sites == nil {
		t.sites = map[types.NamespacedName]pinTarget{}
	}
	t.sites[site] = pinTarget{pod: types.NamespacedName{Namespace: p.Namespace, Name: p.Name}, uid: p.UID, ip: p.Status.PodIP, token: token}
}

// Forget drops what is known of site (deleted, or no longer a Git site with a fetcher).
func (t *PinTargets) Forget(site types.NamespacedName) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.sites, site)
}

// Len is how many sites are remembered (tests).
func (t *PinTargets) Len() int {
	if t == nil {
		return 0
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sites)
}

func (t *PinTargets) lookup(site types.NamespacedName) (pinTarget, bool) {
	if t == nil {
		return pinTarget{}, false
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	p, ok := t.sites[site]
	return p, ok
}

// ErrNoPinTarget says the fast path knows no fetcher pod it may send the site's pin to: the pass will.
var ErrNoPinTarget = errors.New("no fetcher pod known for the fast path")

// PinNow sends site's wanted pin to the fetcher pod the site's last pass read, through pinner, reading the pod
// from cache first (see the contract above). It returns ErrNoPinTarget when there is none to send to, and nil
// when there is nothing to send (an invalid annotation: the pass reports it). A refusal (not in the history) is
// returned as gitrevision.ErrNotInHistory; the pass says it in the status.
func (t *PinTargets) PinNow(ctx context.Context, cache client.Reader, pinner gitrevision.Pinner, site *v1alpha1.StaticSite) error {
	if site.Spec.Content.Git == nil {
		return ErrNoPinTarget
	}
	want, invalid := WantedPin(site)
	if invalid != "" {
		return nil
	}
	key := client.ObjectKeyFromObject(site)
	target, ok := t.lookup(key)
	if !ok {
		return ErrNoPinTarget
	}
	pod := &corev1.Pod{}
	if err := cache.Get(ctx, target.pod, pod); err != nil || !samePod(pod, target) {
		t.Forget(key)
		return ErrNoPinTarget
	}
	_, err := pinner.Pin(ctx, pod, v1alpha1.GitFetcherPort, target.token, want)
	return err
}

// samePod says p is still the pod a target remembers, where it was, running its fetcher and not being deleted.
func samePod(p *corev1.Pod, target pinTarget) bool {
	if p.UID != target.uid || p.Status.PodIP != target.ip || !p.DeletionTimestamp.IsZero() {
		return false
	}
	for _, s := range p.Status.ContainerStatuses {
		if s.Name == FetchContainerName {
			return s.State.Running != nil
		}
	}
	return false
}
