package pool

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The re-tell rule (step_retell.go): a pod told of the index revision whose /sites still lacks part of that index
// after retellAfter is told again, at most maxRetells times per revision.
const (
	// retellAfter is how long a pod that was told of the index may lack part of it before it is told again. An
	// annotation change reaches the kubelet's pod watch at once, its volume manager remounts within a second, and
	// the server reads a swapped index within a quarter of a second (the fetcher within its 2 s --index-interval):
	// a pod still behind after 10 s was synced before its kubelet had the new ConfigMap, and one more sync, at a
	// fraction of the kubelet's 60-90 s resync, brings it.
	retellAfter = 10 * time.Second
	// maxRetells bounds the re-tells of one revision to one pod. A kubelet that lagged its ConfigMap once has it
	// by the first re-tell; a pod still behind after three is behind for a reason an annotation does not fix (a
	// shard its server refused, a pod that says what it likes), and the kubelet's resync remains, as before.
	maxRetells = 3
)

// indexLag is what one pod that reads the index (a ready server pod, the running fetcher) said on /sites this
// pass, against the index: lacking is how many sites of the index its answer lacks (lagging).
type indexLag struct {
	pod     *corev1.Pod
	lacking int
}

// toldMark is what the operator last told a pod of the index: the revision, how many times again (0: told once),
// and since when (the pass that told it, or the first pass that found it told so: after an operator restart, the
// wait starts again, which only delays a re-tell).
type toldMark struct {
	revision string
	retells  int
	since    time.Time
}

// retell is a pod to tell again, with the annotation's new value.
type retell struct {
	pod   *corev1.Pod
	value string
}

// retellPlan is planRetells' decision: the pods to tell again, the marks of the pods read this pass as they are
// after it (the pass merges them into its memory), and how soon the next re-tell falls due (0: none waits).
type retellPlan struct {
	retell []retell
	marks  map[types.UID]toldMark
	wait   time.Duration
}

// planRetells decides from one pass's answers which pods are told index revision again: a pod told of it (by the
// operator's mark, else by its annotation) that lacks sites of it, told at least retellAfter ago and fewer than
// maxRetells times again. A mark of another revision is no evidence (the cache behind the operator's own tell,
// or the pod's annotation read from a cache behind it): the annotation is read again. A pod gets at most one
// re-tell per pass, and only its own annotation is touched: what a pod says decides nothing beyond that.
func planRetells(lags []indexLag, revision string, marks map[types.UID]toldMark, now time.Time) retellPlan {
	plan := retellPlan{marks: make(map[types.UID]toldMark, len(lags))}
	if revision == "" {
		return plan
	}
	for _, l := range lags {
		told, n := parseTold(l.pod.Annotations[annotationIndexRevision])
		m, ok := marks[l.pod.UID]
		switch {
		case !ok || m.revision != revision:
			m = toldMark{revision: told, retells: n, since: now}
		case told == revision && n > m.retells:
			m.retells = n // told more often than this memory knows (another operator's passes): the cap counts them
		}
		if m.revision == revision && l.lacking > 0 && m.retells < maxRetells {
			if due := m.since.Add(retellAfter); now.Before(due) {
				plan.wait = shortest(plan.wait, due.Sub(now))
			} else {
				m = toldMark{revision: revision, retells: m.retells + 1, since: now}
				plan.retell = append(plan.retell, retell{pod: l.pod, value: toldValue(revision, m.retells)})
				if m.retells < maxRetells {
					plan.wait = shortest(plan.wait, retellAfter)
				}
			}
		}
		plan.marks[l.pod.UID] = m
	}
	return plan
}

// lacking counts the sites of the index (entry revisions by id) a pod's /sites lacks: absent, or at another entry
// revision than the one rendered. A site reported with no entry revision is not counted: the pod read its entry and
// is still publishing it (or does not report revisions), which a remount does not hasten.
func lacking[S any](entries map[string]string, sites map[string]S, entryOf func(S) string) int {
	n := 0
	for id, want := range entries {
		s, ok := sites[id]
		if !ok {
			n++
			continue
		}
		if got := entryOf(s); got != "" && got != want {
			n++
		}
	}
	return n
}

// toldValue is annotationIndexRevision's value for revision told n times again: the revision alone the first
// time, "<revision>/<n>" after, so each re-tell is a change of the pod (a patch that changes nothing makes the
// kubelet sync nothing).
func toldValue(revision string, n int) string {
	if n == 0 {
		return revision
	}
	return fmt.Sprintf("%s/%d", revision, n)
}

// parseTold reads annotationIndexRevision's value: the revision told, and how many times again. A value that is
// not toldValue's is a revision told once (a revision has no "/"; it then names none the operator renders).
func parseTold(v string) (revision string, retells int) {
	if i := strings.LastIndexByte(v, '/'); i >= 0 {
		if n, err := strconv.Atoi(v[i+1:]); err == nil && n > 0 && toldValue(v[:i], n) == v {
			return v[:i], n
		}
	}
	return v, 0
}

// shortest is the shorter of two waits, 0 being none.
func shortest(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}
