package gitrevision

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"hyperstatic.dev/hyperstatic/internal/gitsource"
	"hyperstatic.dev/hyperstatic/internal/gittestserver"
)

var site = types.NamespacedName{Namespace: "ns", Name: "www"}

// TestWatchWakesOnTheRealFetchersNews: a watch on a real fetcher wakes its site once for a new commit, once for a
// failure, once for the success after it; each pass's Follow with what it read starts the next poll.
func TestWatchWakesOnTheRealFetchersNews(t *testing.T) {
	srv, base := gittestserver.Start(t, "", "", "")
	repo := srv.NewRepo(t, base, "site.git", nil)
	c1 := repo.Commit("v1", map[string]gittestserver.File{"index.html": gittestserver.Regular("v1\n")})
	repo.Push("refs/heads/main", c1, false)
	f, synced, ticks := fetcher(t, gitsource.Source{URL: repo.URL, Ref: "main"})
	next(t, synced)
	fpod, fport := serve(t, f.Handler())

	woken := make(chan types.NamespacedName, 10)
	r := NewHTTPReader()
	w := NewWatch(r, func(s types.NamespacedName) { woken <- s })
	w.MinGap = time.Nanosecond
	t.Cleanup(func() { w.Forget(site) })
	pass := func(what string) Revision { // what a pass does: read the fetcher, follow from there
		t.Helper()
		rev, err := r.Read(context.Background(), fpod, fport)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		w.Follow(site, fpod, fport, rev)
		w.Follow(site, fpod, fport, rev) // the same target: the running poll goes on
		if n := w.Polling(); n != 1 {
			t.Fatalf("%s: %d polls, want 1", what, n)
		}
		return rev
	}
	wake := func(what string) {
		t.Helper()
		select {
		case s := <-woken:
			if s != site {
				t.Fatalf("%s woke %v", what, s)
			}
		case <-time.After(waitLimit):
			t.Fatalf("%s woke nobody", what)
		}
		if n := w.Polling(); n != 0 {
			t.Errorf("after waking for %s, %d polls run; want none until the next pass", what, n)
		}
	}

	pass("first")
	c2 := repo.Commit("v2", map[string]gittestserver.File{"index.html": gittestserver.Regular("v2\n")}, c1)
	repo.Push("refs/heads/main", c2, false)
	ticks <- time.Now()
	next(t, synced)
	wake("a new commit")
	if rev := pass("after the commit"); rev.Commit != c2.String() {
		t.Fatalf("the fetcher publishes %s, want %s", rev.Commit, c2)
	}

	srv.SetCredentials("someone", "else", "")
	ticks <- time.Now()
	next(t, synced)
	wake("a failure")
	if rev := pass("after the failure"); rev.Failure == nil || rev.Commit != c2.String() {
		t.Fatalf("the fetcher answers %+v, want a failure with %s still published", rev, c2)
	}

	srv.SetCredentials("", "", "")
	ticks <- time.Now()
	next(t, synced)
	wake("the success after the failure")
	if rev := pass("after the success"); rev.Failure != nil {
		t.Fatalf("the fetcher still answers a failure: %+v", rev.Failure)
	}
}

// TestWatchFollowsOnePollPerSite: Follow replaces a poll of another target (its request is cancelled), Forget ends
// it; a poll that fails backs off and wakes nobody; a poll whose wait ends with nothing new asks again.
func TestWatchFollowsOnePollPerSite(t *testing.T) {
	fw := &fakeWaiter{calls: make(chan waitCall)}
	woken := make(chan types.NamespacedName, 10)
	backoffs := make(chan time.Time)
	w := NewWatch(fw, func(s types.NamespacedName) { woken <- s })
	w.After = func(time.Duration) <-chan time.Time { return backoffs }
	a := &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1"}}
	a.UID = "a"
	b := a.DeepCopy()
	b.UID, b.Status.PodIP = "b", "10.0.0.2"
	have := Revision{Digest: "d1", Commit: "c1"}

	w.Follow(site, a, 8080, have)
	first := <-fw.calls
	first.answer <- waitAnswer{rev: have} // the process's wait ended: ask again
	again := <-fw.calls
	again.answer <- waitAnswer{err: errors.New("connection refused")}
	backoffs <- time.Now() // the backoff passes
	retried := <-fw.calls
	w.Follow(site, b, 8080, have) // the fetcher's pod was replaced
	<-retried.ctx.Done()
	onB := <-fw.calls
	if onB.pod.UID != "b" {
		t.Fatalf("the new poll reads pod %s, want b", onB.pod.UID)
	}
	w.Forget(site)
	<-onB.ctx.Done()
	if n := w.Polling(); n != 0 {
		t.Errorf("%d polls after Forget", n)
	}
	select {
	case s := <-woken:
		t.Errorf("woke %v with nothing new", s)
	default:
	}
}

type waitCall struct {
	ctx    context.Context
	pod    *corev1.Pod
	have   Revision
	answer chan waitAnswer
}

type waitAnswer struct {
	rev Revision
	err error
}

// fakeWaiter hands each Wait to the test, which answers it (or the caller's ctx ends it).
type fakeWaiter struct{ calls chan waitCall }

func (f *fakeWaiter) Wait(ctx context.Context, pod *corev1.Pod, _ int, have Revision) (Revision, error) {
	c := waitCall{ctx: ctx, pod: pod, have: have, answer: make(chan waitAnswer, 1)}
	select {
	case f.calls <- c:
	case <-ctx.Done():
		return Revision{}, ctx.Err()
	}
	select {
	case a := <-c.answer:
		return a.rev, a.err
	case <-ctx.Done():
		return Revision{}, ctx.Err()
	}
}

// A change of the previews alone (the fetcher's tag: a request opened or closed, production unchanged) wakes the
// site, and a pass that read the new list polls from it: the fetcher's long poll answers at once for any other
// tag, so a poll that ignored the tag would ask again and again and wake nobody.
func TestWatchWakesOnAChangeOfThePreviews(t *testing.T) {
	fw := &fakeWaiter{calls: make(chan waitCall)}
	woken := make(chan types.NamespacedName, 10)
	w := NewWatch(fw, func(s types.NamespacedName) { woken <- s })
	w.MinGap = time.Nanosecond
	pod := &corev1.Pod{Status: corev1.PodStatus{PodIP: "10.0.0.1"}}
	pod.UID = "a"
	have := Revision{Digest: "d1", Commit: "c1", PreviewsTag: "t1"}
	w.Follow(site, pod, 8080, have)
	call := <-fw.calls
	opened := have
	opened.PreviewsTag = "t2"
	call.answer <- waitAnswer{rev: opened}
	select {
	case <-woken:
	case <-time.After(waitLimit):
		t.Fatal("a change of the previews' tag woke nobody")
	}
	w.Follow(site, pod, 8080, opened)
	if next := <-fw.calls; next.have.PreviewsTag != "t2" {
		t.Fatalf("the next poll waits from tag %q, want t2", next.have.PreviewsTag)
	}
	w.Forget(site)
}
