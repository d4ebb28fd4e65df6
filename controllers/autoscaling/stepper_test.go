package autoscaling

import (
	"context"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
	ctrl "sigs.k8s.io/controller-runtime"

	"hyperstatic.dev/hyperstatic/api/v1alpha1"
)

// stepper runs the autoscaler for one site one pass at a time, in fake time that only the test moves. Nothing
// runs between passes (no manager, no watch, no ticker), so each pass sees exactly the world the test made:
//
//	step: advance the clock by one scrape interval → the fake kubelet brings the pods to spec.replicas, against
//	the API server → one Reconcile for the site → the test asserts.
//
// Every read and write goes through env.Client, a direct client, so a pass sees what the step before it wrote.
// The autoscaler has the production defaults (DefaultScrapeInterval, a window of DefaultWindowIntervals).
type stepper struct {
	t        *testing.T
	ctx      context.Context
	key      types.NamespacedName
	start    time.Time
	clock    *clocktesting.FakePassiveClock
	load     *loadModel
	kubelet  *fakeKubelet
	recorder *record.FakeRecorder
	r        *Reconciler
	interval time.Duration

	rescales []rescale // every change of spec.replicas a pass made, in order
	events   []event   // every event the autoscaler recorded, in order
}

// rescale is a change of spec.replicas by one pass, at fake time at since the stepper started.
type rescale struct {
	at       time.Duration
	from, to int32
}

func (r rescale) String() string { return fmt.Sprintf("%v: %d → %d", r.at, r.from, r.to) }

// event is what record.FakeRecorder saw ("<type> <reason> <message>"), at fake time at.
type event struct {
	at   time.Duration
	text string
}

// fakeStart is where every stepper's clock starts: whole seconds, as the API keeps lastScaleTime.
var fakeStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// newStepper creates the site and its autoscaler; the first pass is the test's to run (pass, at time 0).
func newStepper(t *testing.T, site *v1alpha1.StaticSite, opts ...Option) *stepper {
	t.Helper()
	s := &stepper{
		t: t, ctx: t.Context(), key: types.NamespacedName{Namespace: site.Namespace, Name: site.Name},
		start: fakeStart, clock: clocktesting.NewFakePassiveClock(fakeStart),
		recorder: record.NewFakeRecorder(100), interval: DefaultScrapeInterval,
	}
	s.load = newLoadModel(s.clock)
	s.kubelet = newFakeKubelet(env.Client, s.load, site.Namespace, site.Name)
	s.r = New(env.Client, s.recorder, s.load, append([]Option{WithClock(s.clock)}, opts...)...)
	createSite(t, site)
	return s
}

// now is the fake time since the stepper started.
func (s *stepper) now() time.Duration { return s.clock.Now().Sub(s.start) }

// advance moves the fake clock by one scrape interval.
func (s *stepper) advance() { s.clock.SetTime(s.clock.Now().Add(s.interval)) }

// pass lets the kubelet converge, runs one Reconcile and records what it changed.
func (s *stepper) pass() ctrl.Result {
	s.t.Helper()
	if err := s.kubelet.converge(s.ctx); err != nil {
		s.t.Fatalf("at %v: %v", s.now(), err)
	}
	before := replicasOf(getSite(s.t, s.key.Namespace, s.key.Name))
	res, err := s.r.Reconcile(s.ctx, ctrl.Request{NamespacedName: s.key})
	if err != nil {
		s.t.Fatalf("at %v: reconcile: %v", s.now(), err)
	}
	if after := replicasOf(getSite(s.t, s.key.Namespace, s.key.Name)); after != before {
		s.rescales = append(s.rescales, rescale{s.now(), before, after})
	}
	for drained := false; !drained; {
		select {
		case e := <-s.recorder.Events:
			s.events = append(s.events, event{s.now(), e})
		default:
			drained = true
		}
	}
	return res
}

// step is one periodic pass of an autoscaled site: advance, pass, and check the pass asked for the next one a
// scrape interval later (the RequeueAfter the manager would honour).
func (s *stepper) step() {
	s.t.Helper()
	s.advance()
	if res := s.pass(); res.RequeueAfter != s.interval {
		s.t.Fatalf("at %v: pass asked for %+v, want RequeueAfter %v", s.now(), res, s.interval)
	}
}

// stepUntil steps until fake time at (a multiple of the interval), calling check after every pass.
func (s *stepper) stepUntil(at time.Duration, check func()) {
	s.t.Helper()
	for s.now() < at {
		s.step()
		if check != nil {
			check()
		}
	}
}

// site reads the site through the direct client.
func (s *stepper) site() *v1alpha1.StaticSite {
	s.t.Helper()
	return getSite(s.t, s.key.Namespace, s.key.Name)
}

// rescalesSince returns the rescales made at or after fake time from.
func (s *stepper) rescalesSince(from time.Duration) []rescale {
	var out []rescale
	for _, r := range s.rescales {
		if r.at >= from {
			out = append(out, r)
		}
	}
	return out
}

// eventsSince returns the events recorded at or after fake time from.
func (s *stepper) eventsSince(from time.Duration) []event {
	var out []event
	for _, e := range s.events {
		if e.at >= from {
			out = append(out, e)
		}
	}
	return out
}
