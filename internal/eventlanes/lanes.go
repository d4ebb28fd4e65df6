// Package eventlanes records the operator's Kubernetes events with one writer per namespace, so that one tenant's
// burst of events never delays another tenant's.
//
// Why. controller-runtime's manager gives every controller a recorder of one client-go EventBroadcaster: a single
// goroutine takes every event of the process from one queue (client-go's, 1,000 long: past that, events are
// dropped) and writes them one API request at a time, each after a token of the events client's rate limiter
// (--kube-api-qps, --kube-api-burst). 200 sites created at once in a pool queue several events each (Created
// EndpointSlice, Created Service, MovedToPool, Ready), and an event of any other namespace waits behind all of
// them: in e2e, beside scenario 20-pool, scenario 14's Warning came more than 30 s after the status it goes with.
// The burst's own events are news for their owners; what must not happen is that they are news for everybody
// else first.
//
// The contract:
//
//   - Events about the objects of one namespace go through that namespace's lane: a client-go EventBroadcaster of
//     their own, with its own writer goroutine and queue, writing them in the order they were recorded. Objects
//     without a namespace (a StaticSitePool) have a lane of their own (their events are written to "default", as
//     client-go does).
//   - Each lane keeps client-go's correlator: the aggregation of similar events and the spam filter. Both are keyed
//     by the involved object, so what one object's events become does not depend on the lane. The spam filter's
//     budget (client-go's: 25 events, then one per 5 minutes) is one per object, type and **reason**
//     (spamKey), not client-go's per object and type: a StaticSitePool's Normal events (index updates, scaling,
//     drains, releases) passed 25 within ten minutes in e2e, and the filter then dropped, silently, the PodReleased
//     that said its last pod was let go. Keyed by reason, a controller that repeats one piece of news is still
//     held to the budget, but every other kind of news about the object keeps its own.
//   - Lanes share the API client and its rate limiter. The limiter hands tokens out in the order they are asked
//     for, and a lane asks for one at a time, so an event of a quiet namespace waits for at most one write of each
//     busy lane, never for their queues.
//   - A lane's queue is client-go's (1,000 events): a namespace that overflows it loses its own events (each drop
//     is logged by client-go), never another's.
//   - A lane costs about 64 KiB (client-go's two queues of 1,000), so there are at most MaxLanes (256: 16 MiB); the
//     namespaces that come when all are taken share one overflow lane until lanes close. Only a cluster with more
//     than MaxLanes namespaces whose objects had events within IdleAfter has tenants that can wait for each other.
//   - A lane with no event recorded and no write in flight or made for IdleAfter is closed, so memory follows the
//     namespaces with recent events, not every namespace ever seen. IdleAfter is longer than client-go's pause
//     between two tries of a failed write (10 s), so a closed lane had nothing left to write. Lanes are swept when
//     an event is recorded: there is no timer.
//   - Stop closes every lane; events recorded afterwards are dropped (logged).
package eventlanes

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// DefaultIdleAfter is how long a lane stays open without an event: long enough that a namespace whose sites are
// being worked on keeps its lane (and its correlator's memory of recent events), short enough that lanes follow
// the namespaces active now.
const DefaultIdleAfter = 5 * time.Minute

// DefaultMaxLanes bounds the lanes open at once (their memory: about 64 KiB each).
const DefaultMaxLanes = 256

// overflowLane is the key of the lane shared by the namespaces that come while MaxLanes lanes are open; no
// namespace is named so.
const overflowLane = "*"

// minIdleAfter keeps IdleAfter above client-go's pause between two tries of a failed write (10 s), with room.
const minIdleAfter = 30 * time.Second

// Options adjust New; the zero value is the production setting.
type Options struct {
	// IdleAfter: a lane unused this long is closed (DefaultIdleAfter when 0; at least 30 s).
	IdleAfter time.Duration
	// MaxLanes: at most this many lanes besides the overflow lane (DefaultMaxLanes when 0).
	MaxLanes int
	// Clock decides idleness (clock.RealClock when nil).
	Clock clock.PassiveClock
	// Log receives each event at V(1), as controller-runtime's recorder logs them, and the drops after Stop.
	Log logr.Logger
}

// Lanes is the process's event lanes: New makes them, For gives each controller its recorder.
type Lanes struct {
	sink      record.EventSink
	scheme    *runtime.Scheme
	log       logr.Logger
	clock     clock.PassiveClock
	idleAfter time.Duration
	maxLanes  int

	mu        sync.Mutex
	lanes     map[string]*lane // by namespace; "" for objects without one, overflowLane for the overflow
	lastSweep time.Time
	stopped   bool
}

// lane is one namespace's broadcaster and what decides when it is idle.
type lane struct {
	broadcaster record.EventBroadcaster
	recorders   map[string]record.EventRecorder // by component (the controller's name)
	// lastActive is the time (Unix nanoseconds) of the last event recorded or write begun or ended; writing counts
	// the writes in flight.
	lastActive atomic.Int64
	writing    atomic.Int32
}

// New returns lanes that write to sink (events are created in their own namespace, as client-go's
// corev1client.EventSinkImpl does) and resolve objects' kinds with scheme.
func New(sink record.EventSink, scheme *runtime.Scheme, o Options) *Lanes {
	if o.IdleAfter == 0 {
		o.IdleAfter = DefaultIdleAfter
	}
	o.IdleAfter = max(o.IdleAfter, minIdleAfter)
	if o.MaxLanes == 0 {
		o.MaxLanes = DefaultMaxLanes
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Lanes{sink: sink, scheme: scheme, log: o.Log, clock: o.Clock, idleAfter: o.IdleAfter, maxLanes: o.MaxLanes,
		lanes: map[string]*lane{}, lastSweep: o.Clock.Now()}
}

// ForConfig is New writing through an events client made from cfg and httpClient (the manager's, so the lanes
// share its connections). The client has its own rate limiter from cfg's QPS and Burst, as controller-runtime's
// recorder has.
func ForConfig(cfg *rest.Config, httpClient *http.Client, scheme *runtime.Scheme, o Options) (*Lanes, error) {
	c, err := corev1client.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, fmt.Errorf("events client: %w", err)
	}
	return New(&corev1client.EventSinkImpl{Interface: c.Events("")}, scheme, o), nil
}

// For returns the recorder of a controller: its events carry component as their source.
func (l *Lanes) For(component string) record.EventRecorder {
	return recorder{lanes: l, component: component}
}

// Open is the number of lanes open now.
func (l *Lanes) Open() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.lanes)
}

// Stop closes every lane; call it once the controllers have stopped (as controller-runtime stops its recorder
// after everything else). Events still queued in a lane may be lost, as with controller-runtime's recorder.
func (l *Lanes) Stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.stopped = true
	for ns, ln := range l.lanes {
		delete(l.lanes, ns)
		ln.broadcaster.Shutdown()
	}
}

// record hands an event to its namespace's lane, opening it if needed, under the lock that sweeping takes, so a
// lane is never closed between being chosen and being given the event. emit is cheap: client-go's recorder only
// queues the event (or drops it when the lane's queue is full).
func (l *Lanes) record(obj runtime.Object, component string, emit func(record.EventRecorder)) {
	ns := ""
	if m, err := meta.Accessor(obj); err == nil {
		ns = m.GetNamespace()
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.stopped {
		l.log.Info("event dropped: the event lanes are stopped", "namespace", ns, "component", component)
		return
	}
	now := l.clock.Now()
	l.sweep(now)
	key := ns
	ln := l.lanes[key]
	if ln == nil && len(l.lanes) >= l.maxLanes {
		key, ln = overflowLane, l.lanes[overflowLane]
	}
	if ln == nil {
		ln = l.open()
		l.lanes[key] = ln
	}
	ln.touch(now)
	rec := ln.recorders[component]
	if rec == nil {
		rec = ln.broadcaster.NewRecorder(l.scheme, corev1.EventSource{Component: component})
		ln.recorders[component] = rec
	}
	emit(rec)
}

// open starts a lane: its broadcaster and writer, through a sink that keeps the lane's activity.
func (l *Lanes) open() *lane {
	ln := &lane{
		broadcaster: record.NewBroadcaster(record.WithCorrelatorOptions(record.CorrelatorOptions{SpamKeyFunc: spamKey})),
		recorders:   map[string]record.EventRecorder{},
	}
	ln.broadcaster.StartRecordingToSink(activitySink{inner: l.sink, lane: ln, clock: l.clock})
	return ln
}

// sweep closes the idle lanes, at most once per IdleAfter. Caller holds l.mu.
func (l *Lanes) sweep(now time.Time) {
	if now.Sub(l.lastSweep) < l.idleAfter {
		return
	}
	l.lastSweep = now
	for ns, ln := range l.lanes {
		// writing first: a write that ends touches lastActive before it stops counting, so a lane seen with no
		// write in flight is seen with that write's time.
		if ln.writing.Load() == 0 && now.Sub(time.Unix(0, ln.lastActive.Load())) >= l.idleAfter {
			delete(l.lanes, ns)
			ln.broadcaster.Shutdown() // its queue is empty: nothing waits to be distributed
		}
	}
}

func (ln *lane) touch(now time.Time) { ln.lastActive.Store(now.UnixNano()) }

// activitySink is the sink as one lane writes to it: each write marks the lane active while it runs.
type activitySink struct {
	inner record.EventSink
	lane  *lane
	clock clock.PassiveClock
}

func (s activitySink) begin() func() {
	s.lane.writing.Add(1)
	s.lane.touch(s.clock.Now())
	return func() {
		s.lane.touch(s.clock.Now())
		s.lane.writing.Add(-1)
	}
}

func (s activitySink) Create(e *corev1.Event) (*corev1.Event, error) {
	defer s.begin()()
	return s.inner.Create(e)
}

func (s activitySink) Update(e *corev1.Event) (*corev1.Event, error) {
	defer s.begin()()
	return s.inner.Update(e)
}

func (s activitySink) Patch(e *corev1.Event, data []byte) (*corev1.Event, error) {
	defer s.begin()()
	return s.inner.Patch(e, data)
}

// recorder is a controller's record.EventRecorder: each event goes to the lane of its object's namespace.
type recorder struct {
	lanes     *Lanes
	component string
}

func (r recorder) Event(obj runtime.Object, eventtype, reason, message string) {
	r.log(obj, eventtype, reason, message)
	r.lanes.record(obj, r.component, func(rec record.EventRecorder) { rec.Event(obj, eventtype, reason, message) })
}

func (r recorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.Event(obj, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

func (r recorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	message := fmt.Sprintf(messageFmt, args...)
	r.log(obj, eventtype, reason, message)
	r.lanes.record(obj, r.component, func(rec record.EventRecorder) {
		rec.AnnotatedEventf(obj, annotations, eventtype, reason, "%s", message)
	})
}

// log writes the event to the log at V(1), as controller-runtime's recorder does.
func (r recorder) log(obj runtime.Object, eventtype, reason, message string) {
	if !r.lanes.log.V(1).Enabled() {
		return
	}
	kv := []any{"type", eventtype, "reason", reason, "component", r.component}
	if m, err := meta.Accessor(obj); err == nil {
		kv = append(kv, "namespace", m.GetNamespace(), "name", m.GetName())
	}
	r.lanes.log.V(1).Info(message, kv...)
}

// spamKey is what the spam filter counts events by: client-go's key (the source and the involved object, and the
// event's type) and the reason (the contract above says why).
func spamKey(e *corev1.Event) string {
	return strings.Join([]string{
		e.Source.Component, e.Source.Host,
		e.InvolvedObject.Kind, e.InvolvedObject.Namespace, e.InvolvedObject.Name, string(e.InvolvedObject.UID),
		e.InvolvedObject.APIVersion, e.Type, e.Reason,
	}, "\x00")
}
