package pool

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/internal/poolread"
)

// podTold is a pod whose annotation says value ("": none).
func podTold(uid, value string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: uid, UID: types.UID(uid)}}
	if value != "" {
		p.Annotations = map[string]string{annotationIndexRevision: value}
	}
	return p
}

// The re-tell rule, one pass at a time: who is told again, the marks after the pass, and when the next re-tell
// falls due.
func TestPlanRetells(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	due := t0.Add(retellAfter)
	mark := func(rev string, n int, since time.Time) toldMark {
		return toldMark{revision: rev, retells: n, since: since}
	}
	cases := []struct {
		name   string
		pod    *corev1.Pod
		mark   *toldMark // nil: none in memory
		lack   int
		now    time.Time
		retell string // the annotation's new value, "" for none
		after  toldMark
		wait   time.Duration
	}{
		{"lagging, told long enough ago", podTold("p", "r2"), &toldMark{"r2", 0, t0}, 1, due, "r2/1", mark("r2", 1, due), retellAfter},
		{"lagging, told too recently", podTold("p", "r2"), &toldMark{"r2", 0, t0}, 1, t0.Add(4 * time.Second), "", mark("r2", 0, t0), 6 * time.Second},
		{"has the whole index", podTold("p", "r2"), &toldMark{"r2", 0, t0}, 0, due, "", mark("r2", 0, t0), 0},
		{"the last re-tell of the revision", podTold("p", "r2/2"), &toldMark{"r2", 2, t0}, 5, due, "r2/3", mark("r2", 3, due), 0},
		{"re-told as often as allowed", podTold("p", "r2/3"), &toldMark{"r2", 3, t0}, 5, due.Add(time.Hour), "", mark("r2", 3, t0), 0},
		// What deliverIndex does: a pod told of another revision is not re-told.
		{"told of an older revision", podTold("p", "r1/1"), nil, 1, due, "", mark("r1", 1, due), 0},
		{"never told", podTold("p", ""), nil, 1, due, "", mark("", 0, due), 0},
		// An operator restart: the annotation gives the count, the wait starts again.
		{"no memory, told again twice", podTold("p", "r2/2"), nil, 1, due, "", mark("r2", 2, due), retellAfter},
		{"no memory, at the cap", podTold("p", "r2/3"), nil, 1, due, "", mark("r2", 3, due), 0},
		// The cache behind the operator's own tell: the mark is the operator's, newer than the annotation read.
		{"cache behind a re-tell", podTold("p", "r2"), &toldMark{"r2", 1, t0}, 1, due, "r2/2", mark("r2", 2, due), retellAfter},
		{"cache behind the first tell", podTold("p", "r1"), &toldMark{"r2", 0, t0}, 1, due, "r2/1", mark("r2", 1, due), retellAfter},
		// A mark of an older revision (the annotation was read from a cache behind): the annotation now says more.
		{"a mark of another revision", podTold("p", "r2"), &toldMark{"r1", 2, t0}, 1, due, "", mark("r2", 0, due), retellAfter},
		// Told more often than this memory knows (another operator's passes): the count is the annotation's.
		{"told again elsewhere", podTold("p", "r2/3"), &toldMark{"r2", 1, t0}, 1, due, "", mark("r2", 3, t0), 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			marks := map[types.UID]toldMark{}
			if c.mark != nil {
				marks[c.pod.UID] = *c.mark
			}
			plan := planRetells([]indexLag{{pod: c.pod, lacking: c.lack}}, "r2", marks, c.now)
			var got string
			if len(plan.retell) > 1 {
				t.Fatalf("%d re-tells of one pod in one pass", len(plan.retell))
			}
			if len(plan.retell) == 1 {
				if plan.retell[0].pod != c.pod {
					t.Fatalf("re-told %s", plan.retell[0].pod.Name)
				}
				got = plan.retell[0].value
			}
			if got != c.retell {
				t.Errorf("re-tell %q, want %q", got, c.retell)
			}
			if m := plan.marks[c.pod.UID]; m != c.after {
				t.Errorf("mark %+v, want %+v", m, c.after)
			}
			if plan.wait != c.wait {
				t.Errorf("wait %v, want %v", plan.wait, c.wait)
			}
		})
	}
	if plan := planRetells([]indexLag{{pod: podTold("p", "r2"), lacking: 1}}, "", nil, due); len(plan.retell) != 0 || len(plan.marks) != 0 {
		t.Errorf("no index revision: %+v", plan)
	}
}

// Passes every second for ten minutes over three pods, one that catches up after its first re-tell, one that
// always says it lacks the index (broken or lying) and one that has it: the first is told again once, the second
// maxRetells times retellAfter apart, then never, the third never; the next revision starts the count again. Only
// the pods read are in the plan's marks, and the waits say when the next re-tell falls due.
func TestRetellsAreBounded(t *testing.T) {
	t0 := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	pods := []*corev1.Pod{podTold("healing", "r1"), podTold("lying", "r1"), podTold("current", "r1")}
	marks := map[types.UID]toldMark{}
	for _, p := range pods {
		marks[p.UID] = toldMark{revision: "r1", since: t0}
	}
	retold := map[string][]time.Time{}
	revision := "r1"
	healingLacks := 1 // until its re-tell lands
	var due time.Time // the wait the last plan asked for
	for s := 1; s <= 600; s++ {
		now := t0.Add(time.Duration(s) * time.Second)
		if s == 300 { // a new index: deliverIndex tells every pod
			revision = "r2"
			for _, p := range pods {
				p.Annotations[annotationIndexRevision] = toldValue(revision, 0)
				marks[p.UID] = toldMark{revision: revision, since: now}
			}
			healingLacks = 1
		}
		lags := []indexLag{
			{pod: pods[0], lacking: healingLacks},
			{pod: pods[1], lacking: 2},
			{pod: pods[2]},
		}
		plan := planRetells(lags, revision, marks, now)
		if !due.IsZero() && len(plan.retell) > 0 && now.Before(due) {
			t.Errorf("at %ds a re-tell before the wait asked for ended (%v)", s, due.Sub(t0))
		}
		if plan.wait > 0 {
			due = now.Add(plan.wait)
		} else {
			due = time.Time{}
		}
		if len(plan.marks) != len(lags) {
			t.Fatalf("marks %v", plan.marks)
		}
		for _, r := range plan.retell {
			r.pod.Annotations[annotationIndexRevision] = r.value // the patch lands
			retold[r.pod.Name] = append(retold[r.pod.Name], now)
			if r.pod == pods[0] {
				healingLacks = 0
			}
		}
		marks = plan.marks
	}
	at := func(secs ...int) []time.Time {
		var out []time.Time
		for _, s := range secs {
			out = append(out, t0.Add(time.Duration(s)*time.Second))
		}
		return out
	}
	want := map[string][]time.Time{"healing": at(10, 310), "lying": at(10, 20, 30, 310, 320, 330)}
	if !reflect.DeepEqual(retold, want) {
		t.Errorf("re-told at %v, want %v", retold, want)
	}
	if got := pods[1].Annotations[annotationIndexRevision]; got != fmt.Sprintf("r2/%d", maxRetells) {
		t.Errorf("the lying pod's annotation %q", got)
	}
}

// lacking: the sites of the index a pod's answer lacks, absent or at another entry revision; a site reported with
// no entry revision, or one outside the index, does not count.
func TestLacking(t *testing.T) {
	entries := map[string]string{"t.a": "sha256:aaaa", "t.b": "sha256:bbbb", "t.c": "sha256:cccc", "t.d": "sha256:dddd"}
	server := map[string]poolread.ServerSite{
		"t.a": {ID: "t.a", EntryRevision: "sha256:aaaa"},
		"t.b": {ID: "t.b", EntryRevision: "sha256:0000"}, // an older entry
		"t.d": {ID: "t.d"},                               // its entry read, not yet published
		"t.x": {ID: "t.x", EntryRevision: "sha256:xxxx"}, // not in the index
	}
	if n := lacking(entries, server, func(s poolread.ServerSite) string { return s.EntryRevision }); n != 2 {
		t.Errorf("server lacks %d, want 2 (b older, c absent)", n)
	}
	fetcher := map[string]poolread.FetcherSite{"t.a": {ID: "t.a"}, "t.b": {ID: "t.b", Error: "RefNotFound: main"}}
	if n := lacking(entries, fetcher, func(poolread.FetcherSite) string { return "" }); n != 2 {
		t.Errorf("fetcher lacks %d, want 2 (c and d absent)", n)
	}
	if n := lacking(nil, server, func(s poolread.ServerSite) string { return s.EntryRevision }); n != 0 {
		t.Errorf("an empty index: lacks %d", n)
	}
}

// The annotation's value: the revision the first time, "<revision>/<n>" after; anything else is a revision told
// once (which names none the operator renders, so deliverIndex tells the pod again).
func TestToldValue(t *testing.T) {
	for _, c := range []struct {
		value string
		rev   string
		n     int
	}{
		{"0123456789abcdef", "0123456789abcdef", 0},
		{"0123456789abcdef/1", "0123456789abcdef", 1},
		{"0123456789abcdef/12", "0123456789abcdef", 12},
		{"0123456789abcdef/0", "0123456789abcdef/0", 0},
		{"0123456789abcdef/01", "0123456789abcdef/01", 0},
		{"0123456789abcdef/+1", "0123456789abcdef/+1", 0},
		{"0123456789abcdef/-2", "0123456789abcdef/-2", 0},
		{"0123456789abcdef/x", "0123456789abcdef/x", 0},
		{"0123456789abcdef/", "0123456789abcdef/", 0},
		{"", "", 0},
	} {
		rev, n := parseTold(c.value)
		if rev != c.rev || n != c.n {
			t.Errorf("parseTold(%q) = %q, %d; want %q, %d", c.value, rev, n, c.rev, c.n)
		}
		if c.rev == "0123456789abcdef" && toldValue(rev, n) != c.value {
			t.Errorf("toldValue(%q, %d) = %q, want %q", rev, n, toldValue(rev, n), c.value)
		}
	}
}
