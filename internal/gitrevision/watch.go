package gitrevision

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Waiter holds a long poll of /revision: it returns what the process publishes once that differs from have (its
// digest, its commit or its last failure), or have's equal when the process's own wait ends first.
type Waiter interface {
	Wait(ctx context.Context, pod *corev1.Pod, port int, have Revision) (Revision, error)
}

// Changed says rev is news to a holder of have: another bundle, another commit, or another failure (a new one, or
// none after one). It is what Waiter.Wait waits for.
func Changed(have, rev Revision) bool {
	return rev.Digest != have.Digest || rev.Commit != have.Commit || failureTime(have.Failure) != failureTime(rev.Failure) ||
		rev.PreviewsTag != have.PreviewsTag // the fetcher's long poll answers a change of the previews too
}

// failureTime names a failure by when it happened ("" for none): what the fetcher's ?failed= compares.
func failureTime(f *Failure) string {
	if f == nil {
		return ""
	}
	return f.Time.UTC().Format(time.RFC3339Nano)
}

// Watch keeps one long poll of each Git site's fetcher open, so that the controller hears of a commit or a failure
// when the fetcher has it (after a webhook, a poll), not at its next refresh: a push's status.content.revision and
// ContentAvailable then follow the content within the pullers' convergence poll.
//
// A poll wakes its site once and ends: the pass it causes reads the fetcher again and calls Follow with what it
// read, which starts the next poll. So a site is woken at most once per pass, and never within MinGap of its last
// wake: a fetcher that answers at once with something new each time (it is the tenant's pod, not trusted) costs
// a pass per MinGap, no more. A fetcher that does not answer is retried with a backoff and wakes nobody; the pod
// watch and the pass's own requeue cover it.
type Watch struct {
	waiter Waiter
	notify func(types.NamespacedName)
	// MinGap is the least time between two wakes of one site (1 s when 0).
	MinGap time.Duration
	// MinBackoff and MaxBackoff bound the wait after a failed poll, doubled on each failure in a row (1 s, 1 min
	// when 0).
	MinBackoff, MaxBackoff time.Duration
	// After is the clock of the gap and the backoff (time.After when nil).
	After func(time.Duration) <-chan time.Time

	mu    sync.Mutex
	sites map[types.NamespacedName]*sitePoll
}

// sitePoll is the poll a site has: what it waits on, and whether it still runs.
type sitePoll struct {
	target   pollTarget
	running  bool
	cancel   context.CancelFunc
	lastWake time.Time
}

// pollTarget is what a poll watches: one pod (a replaced pod, or a new IP, is another target), one port, and the
// revision its site's last pass read.
type pollTarget struct {
	pod          types.UID
	ip           string
	port         int
	digest       string
	commit       string
	failedAtTime string
	previews     string // the previews' tag: a pass that read a new list of previews polls from it
}

// NewWatch returns a watch that reads through waiter and calls notify with the site to wake (notify must not block
// for long: it feeds the controller's queue).
func NewWatch(waiter Waiter, notify func(types.NamespacedName)) *Watch {
	return &Watch{waiter: waiter, notify: notify, sites: map[types.NamespacedName]*sitePoll{}}
}

// Follow makes sure site's fetcher, pod, is polled on port for a change from have, the revision the pass just
// read. A poll already waiting on exactly that goes on; any other is replaced.
func (w *Watch) Follow(site types.NamespacedName, pod *corev1.Pod, port int, have Revision) {
	t := pollTarget{pod: pod.UID, ip: pod.Status.PodIP, port: port, digest: have.Digest, commit: have.Commit, failedAtTime: failureTime(have.Failure),
		previews: have.PreviewsTag}
	w.mu.Lock()
	defer w.mu.Unlock()
	s := w.sites[site]
	if s == nil {
		s = &sitePoll{}
		w.sites[site] = s
	} else if s.running {
		if s.target == t {
			return
		}
		s.cancel()
	}
	ctx, cancel := context.WithCancel(context.Background())
	s.target, s.running, s.cancel = t, true, cancel
	go w.poll(ctx, site, s, pod.DeepCopy(), port, have, s.lastWake)
}

// Forget ends site's poll: the site is deleted or no longer follows a repository.
func (w *Watch) Forget(site types.NamespacedName) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if s := w.sites[site]; s != nil {
		if s.running {
			s.cancel()
		}
		delete(w.sites, site)
	}
}

// Polling is how many sites have a poll running (the tests read it).
func (w *Watch) Polling() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := 0
	for _, s := range w.sites {
		if s.running {
			n++
		}
	}
	return n
}

// poll waits on the fetcher until its revision changes from have, then wakes site once. It runs until then or
// until ctx ends (Follow replaced it, Forget ended it).
func (w *Watch) poll(ctx context.Context, site types.NamespacedName, s *sitePoll, pod *corev1.Pod, port int, have Revision, lastWake time.Time) {
	if !lastWake.IsZero() {
		if gap := orDefault(w.MinGap, time.Second) - time.Since(lastWake); gap > 0 && !w.sleep(ctx, gap) {
			return
		}
	}
	backoff := time.Duration(0)
	for {
		rev, err := w.waiter.Wait(ctx, pod, port, have)
		switch {
		case ctx.Err() != nil:
			return
		case err != nil:
			backoff = min(max(2*backoff, orDefault(w.MinBackoff, time.Second)), orDefault(w.MaxBackoff, time.Minute))
			if !w.sleep(ctx, backoff) {
				return
			}
			continue
		case !Changed(have, rev):
			backoff = 0
			continue // the process's wait ended: ask again
		}
		w.mu.Lock()
		current := w.sites[site] == s && ctx.Err() == nil
		if current {
			s.running, s.lastWake = false, time.Now()
			s.cancel()
		}
		w.mu.Unlock()
		if current {
			w.notify(site)
		}
		return
	}
}

// sleep waits d, false when ctx ends first.
func (w *Watch) sleep(ctx context.Context, d time.Duration) bool {
	after := w.After
	if after == nil {
		after = time.After
	}
	select {
	case <-after(d):
		return true
	case <-ctx.Done():
		return false
	}
}

func orDefault(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}
