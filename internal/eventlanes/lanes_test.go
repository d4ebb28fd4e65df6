package eventlanes

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"

	"hyperstatic.dev/hyperstatic/internal/testenv"
)

// sink stands for the API server's events endpoint: it hands each written event to the test, and the writes of
// events about one namespace's objects can be held until the test lets them go, as a busy API server holds a
// request.
type sink struct {
	mu      sync.Mutex
	held    map[string]chan struct{} // by the involved object's namespace: closed to let its writes through
	written chan *corev1.Event
}

func newSink() *sink {
	return &sink{held: map[string]chan struct{}{}, written: make(chan *corev1.Event, 100)}
}

// hold makes the writes of events about ns's objects wait until the returned function is called.
func (s *sink) hold(ns string) (release func()) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gate := make(chan struct{})
	s.held[ns] = gate
	return func() { close(gate) }
}

func (s *sink) write(e *corev1.Event) (*corev1.Event, error) {
	s.mu.Lock()
	gate := s.held[e.InvolvedObject.Namespace]
	s.mu.Unlock()
	if gate != nil {
		<-gate
	}
	s.written <- e
	return e, nil
}

func (s *sink) Create(e *corev1.Event) (*corev1.Event, error)          { return s.write(e) }
func (s *sink) Update(e *corev1.Event) (*corev1.Event, error)          { return s.write(e) }
func (s *sink) Patch(e *corev1.Event, _ []byte) (*corev1.Event, error) { return s.write(e) }

// next is the next event written; the bound is only there so that a broken lane fails the test instead of
// hanging it (nothing here waits for time to pass).
func (s *sink) next(t *testing.T, what string) *corev1.Event {
	t.Helper()
	select {
	case e := <-s.written:
		return e
	case <-time.After(testenv.EventuallyTimeout):
		t.Fatalf("%s: no event written", what)
		return nil
	}
}

func pod(ns, name string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + ns + "-" + name)}}
}

// One namespace whose writes do not come back does not hold another's events; its own come out once it does, in
// order.
func TestABusyNamespaceDoesNotHoldAnothers(t *testing.T) {
	s := newSink()
	l := New(s, scheme.Scheme, Options{})
	defer l.Stop()
	rec := l.For("test")
	release := s.hold("busy")
	for i := range 3 {
		rec.Eventf(pod("busy", "p"), corev1.EventTypeNormal, "Burst", "event %d", i)
	}
	rec.Event(pod("quiet", "q"), corev1.EventTypeWarning, "Refused", "the quiet namespace's news")
	if e := s.next(t, "the quiet namespace's event while the busy one's writes are held"); e.Namespace != "quiet" || e.Reason != "Refused" || e.Source.Component != "test" {
		t.Fatalf("first event written: %s/%s %s from %q", e.Namespace, e.InvolvedObject.Name, e.Reason, e.Source.Component)
	}
	release()
	for i := range 3 {
		if e := s.next(t, "the busy namespace's events after its writes came back"); e.Namespace != "busy" || e.Message != fmt.Sprintf("event %d", i) {
			t.Fatalf("event %d written: %s %q", i, e.Namespace, e.Message)
		}
	}
}

// A cluster-scoped object's events have a lane of their own, apart from those of the namespace "default" they are
// written to: a held write about an object of "default" does not hold them.
func TestClusterScopedObjectsHaveTheirOwnLane(t *testing.T) {
	s := newSink()
	l := New(s, scheme.Scheme, Options{})
	defer l.Stop()
	release := s.hold("default")
	defer release()
	rec := l.For("test")
	rec.Event(pod("default", "p"), corev1.EventTypeNormal, "Held", "held")
	rec.Event(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", UID: "uid-n"}}, corev1.EventTypeNormal, "NodeNews", "node")
	if e := s.next(t, "the Node's event"); e.Reason != "NodeNews" || e.Namespace != "default" {
		t.Fatalf("first event written: %s in %q", e.Reason, e.Namespace)
	}
	if n := l.Open(); n != 2 {
		t.Fatalf("%d lanes open, want 2 (default's and the cluster-scoped objects')", n)
	}
}

// A lane with nothing recorded or written for IdleAfter is closed when the next event comes; one with a write in
// flight is kept however long the write takes.
func TestIdleLanesClose(t *testing.T) {
	s := newSink()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 2, 19, 0, 0, 0, time.UTC))
	l := New(s, scheme.Scheme, Options{IdleAfter: time.Minute, Clock: clk})
	defer l.Stop()
	rec := l.For("test")
	rec.Event(pod("a", "p"), corev1.EventTypeNormal, "Done", "written at once")
	s.next(t, "a's event")
	waitWrites(t, l, "a", false)
	release := s.hold("b")
	rec.Event(pod("b", "p"), corev1.EventTypeNormal, "Slow", "held")
	waitWrites(t, l, "b", true)

	clk.SetTime(clk.Now().Add(time.Minute))
	rec.Event(pod("c", "p"), corev1.EventTypeNormal, "Later", "after a minute")
	s.next(t, "c's event")
	// c's write is over (its end touches the lane at the clock's time then): else it could end after the clock
	// moves on below, and c would look active two minutes on.
	waitWrites(t, l, "c", false)
	if open := lanesOpen(l); open != "b,c" {
		t.Fatalf("lanes open after a minute: %s, want b (its write in flight) and c", open)
	}
	release()
	s.next(t, "b's event")
	waitWrites(t, l, "b", false)

	// Swept at most once per IdleAfter: a minute later, b (its write long done) and c are idle.
	clk.SetTime(clk.Now().Add(time.Minute))
	rec.Event(pod("d", "p"), corev1.EventTypeNormal, "Latest", "two minutes on")
	s.next(t, "d's event")
	if open := lanesOpen(l); open != "d" {
		t.Fatalf("lanes open two minutes on: %s, want d", open)
	}
}

// Past MaxLanes, new namespaces share the overflow lane; a lane closed makes room again.
func TestLanesAreBounded(t *testing.T) {
	s := newSink()
	clk := clocktesting.NewFakePassiveClock(time.Date(2026, 12, 2, 19, 0, 0, 0, time.UTC))
	l := New(s, scheme.Scheme, Options{MaxLanes: 2, IdleAfter: time.Minute, Clock: clk})
	defer l.Stop()
	rec := l.For("test")
	for _, ns := range []string{"a", "b", "c", "d"} {
		rec.Event(pod(ns, "p"), corev1.EventTypeNormal, "News", ns)
		s.next(t, ns+"'s event")
		waitWrites(t, l, laneOf(ns), false)
	}
	if open := lanesOpen(l); open != "*,a,b" {
		t.Fatalf("lanes open: %s, want a, b and the overflow lane *", open)
	}
	clk.SetTime(clk.Now().Add(time.Minute))
	rec.Event(pod("e", "p"), corev1.EventTypeNormal, "News", "e")
	s.next(t, "e's event")
	if open := lanesOpen(l); open != "e" {
		t.Fatalf("lanes open a minute on: %s, want e's own", open)
	}
}

// laneOf is the lane TestLanesAreBounded expects ns's events in.
func laneOf(ns string) string {
	if ns == "a" || ns == "b" {
		return ns
	}
	return overflowLane
}

// After Stop, events are dropped and nothing is written or panics.
func TestStoppedLanesDropEvents(t *testing.T) {
	s := newSink()
	l := New(s, scheme.Scheme, Options{})
	rec := l.For("test")
	rec.Event(pod("a", "p"), corev1.EventTypeNormal, "Before", "before")
	s.next(t, "the event before Stop")
	l.Stop()
	rec.Event(pod("a", "p"), corev1.EventTypeNormal, "After", "after")
	if n := l.Open(); n != 0 {
		t.Fatalf("%d lanes open after Stop", n)
	}
	select {
	case e := <-s.written:
		t.Fatalf("written after Stop: %s", e.Reason)
	default:
	}
}

// waitWrites waits until ns's lane has a write in flight (inFlight) or none (the sink has returned; the lane
// counts the write's end just after).
func waitWrites(t *testing.T, l *Lanes, ns string, inFlight bool) {
	t.Helper()
	testenv.Eventually(t, fmt.Sprintf("lane %s with a write in flight: %v", ns, inFlight), func() error {
		l.mu.Lock()
		defer l.mu.Unlock()
		ln := l.lanes[ns]
		if ln == nil {
			return errors.New("no lane")
		}
		if (ln.writing.Load() > 0) != inFlight {
			return errors.New("not yet")
		}
		return nil
	})
}

// lanesOpen names the open lanes, sorted, comma-separated.
func lanesOpen(l *Lanes) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	names := make([]string, 0, len(l.lanes))
	for ns := range l.lanes {
		names = append(names, ns)
	}
	slices.Sort(names)
	return strings.Join(names, ",")
}

// The spam filter counts an object's events per reason: past client-go's budget of 25 for one reason, that
// reason's events are dropped, but another reason's news about the same object is still written (with client-go's
// key, object and type alone, it was dropped too: e2e lost a pool's PodReleased that way).
func TestTheSpamBudgetIsPerReason(t *testing.T) {
	s := newSink()
	l := New(s, scheme.Scheme, Options{})
	defer l.Stop()
	rec := l.For("test")
	p := pod("ns", "p")
	const budget = 25 // client-go's defaultSpamBurst; its refill (one per 5 minutes) does not come within the test
	for i := range budget + 5 {
		rec.Eventf(p, corev1.EventTypeNormal, "Repeated", "news %d", i)
	}
	rec.Event(p, corev1.EventTypeNormal, "Released", "other news")
	// A marker after both, about another object: once it is written, everything recorded before it was written
	// or dropped (one lane writes in the order recorded).
	rec.Event(pod("ns", "marker"), corev1.EventTypeNormal, "Marker", "the end")
	var repeated int
	released := false
	for {
		e := s.next(t, "the events recorded")
		switch e.Reason {
		case "Repeated":
			repeated++
		case "Released":
			released = true
		}
		if e.Reason == "Marker" {
			break
		}
	}
	if repeated != budget {
		t.Errorf("%d events of the repeated reason written, want the budget of %d (the rest dropped)", repeated, budget)
	}
	if !released {
		t.Errorf("the other reason's event was dropped with the repeated one's")
	}
}
