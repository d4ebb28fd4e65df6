package fairqueue

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// DepthByPriority is a queue's depth counted by priority (controller-runtime's workqueue_depth has a priority label).
type DepthByPriority interface {
	Inc(priority int)
	Dec(priority int)
}

// PriorityDepthProvider is a workqueue.MetricsProvider that also counts the depth by priority; a provider without
// it counts the depth as one number.
type PriorityDepthProvider interface {
	NewDepthMetricWithPriority(name string) DepthByPriority
}

// metrics are one queue's, as client-go's queues keep them: a key counts in the depth from when it is ready until
// it is handed out, its queue latency is that time, its work duration from Get to Done. Callers hold the Queue's
// lock; a nil *metrics keeps none.
type metrics[T comparable] struct {
	clock        clock.PassiveClock
	depth        DepthByPriority
	adds         workqueue.CounterMetric
	latency      workqueue.HistogramMetric
	workDuration workqueue.HistogramMetric
	retries      workqueue.CounterMetric
	readySince   map[T]time.Time
	workingSince map[T]time.Time
}

func newMetrics[T comparable](p workqueue.MetricsProvider, name string, c clock.PassiveClock) *metrics[T] {
	if p == nil {
		return nil
	}
	var depth DepthByPriority = depthWithoutPriority{p.NewDepthMetric(name)}
	if pp, ok := p.(PriorityDepthProvider); ok {
		depth = pp.NewDepthMetricWithPriority(name)
	}
	return &metrics[T]{clock: c, depth: depth, adds: p.NewAddsMetric(name), latency: p.NewLatencyMetric(name),
		workDuration: p.NewWorkDurationMetric(name), retries: p.NewRetriesMetric(name),
		readySince: map[T]time.Time{}, workingSince: map[T]time.Time{}}
}

func (m *metrics[T]) add(key T, priority int) {
	if m == nil {
		return
	}
	m.adds.Inc()
	m.depth.Inc(priority)
	if _, ok := m.readySince[key]; !ok {
		m.readySince[key] = m.clock.Now()
	}
}

func (m *metrics[T]) reprioritized(from, to int) {
	if m == nil {
		return
	}
	m.depth.Dec(from)
	m.depth.Inc(to)
}

func (m *metrics[T]) get(key T, priority int) {
	if m == nil {
		return
	}
	m.depth.Dec(priority)
	now := m.clock.Now()
	if since, ok := m.readySince[key]; ok {
		m.latency.Observe(now.Sub(since).Seconds())
		delete(m.readySince, key)
	}
	m.workingSince[key] = now
}

func (m *metrics[T]) done(key T) {
	if m == nil {
		return
	}
	if since, ok := m.workingSince[key]; ok {
		m.workDuration.Observe(m.clock.Since(since).Seconds())
		delete(m.workingSince, key)
	}
}

func (m *metrics[T]) retry() {
	if m == nil {
		return
	}
	m.retries.Inc()
}

type depthWithoutPriority struct{ workqueue.GaugeMetric }

func (d depthWithoutPriority) Inc(int) { d.GaugeMetric.Inc() }
func (d depthWithoutPriority) Dec(int) { d.GaugeMetric.Dec() }

// ControllerRuntimeMetrics is a provider of controller-runtime's own workqueue series (workqueue_depth by priority,
// workqueue_adds_total, ..., labelled name and controller), so a controller on this queue reports as one on
// controller-runtime's queues does. controller-runtime registers them unexported on its registry: they are found by
// registering the same descriptions, which the registry refuses naming the collector it has. An error says a new
// controller-runtime described them otherwise (TestControllerRuntimeMetrics fails first).
func ControllerRuntimeMetrics() (workqueue.MetricsProvider, error) {
	crOnce.Do(func() { crProvider, crErr = findControllerRuntimeMetrics() })
	return crProvider, crErr
}

var (
	crOnce     sync.Once
	crProvider *crWorkqueueMetrics
	crErr      error
)

// The descriptions as controller-runtime v0.22's internal/metrics/workqueue.go registers them.
func findControllerRuntimeMetrics() (*crWorkqueueMetrics, error) {
	labels := []string{"name", "controller"}
	m := &crWorkqueueMetrics{}
	var err error
	if m.depth, err = registered(prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: crmetrics.WorkQueueSubsystem,
		Name: crmetrics.DepthKey, Help: "Current depth of workqueue by workqueue and priority"},
		append(labels, "priority"))); err != nil {
		return nil, err
	}
	if m.adds, err = registered(prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: crmetrics.WorkQueueSubsystem,
		Name: crmetrics.AddsKey, Help: "Total number of adds handled by workqueue"}, labels)); err != nil {
		return nil, err
	}
	if m.latency, err = registered(prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: crmetrics.WorkQueueSubsystem,
		Name: crmetrics.QueueLatencyKey, Help: "How long in seconds an item stays in workqueue before being requested"}, labels)); err != nil {
		return nil, err
	}
	if m.workDuration, err = registered(prometheus.NewHistogramVec(prometheus.HistogramOpts{Subsystem: crmetrics.WorkQueueSubsystem,
		Name: crmetrics.WorkDurationKey, Help: "How long in seconds processing an item from workqueue takes."}, labels)); err != nil {
		return nil, err
	}
	if m.unfinished, err = registered(prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: crmetrics.WorkQueueSubsystem,
		Name: crmetrics.UnfinishedWorkKey, Help: "How many seconds of work has been done that " +
			"is in progress and hasn't been observed by work_duration. Large " +
			"values indicate stuck threads. One can deduce the number of stuck " +
			"threads by observing the rate at which this increases."}, labels)); err != nil {
		return nil, err
	}
	if m.longest, err = registered(prometheus.NewGaugeVec(prometheus.GaugeOpts{Subsystem: crmetrics.WorkQueueSubsystem,
		Name: crmetrics.LongestRunningProcessorKey, Help: "How many seconds has the longest running " +
			"processor for workqueue been running."}, labels)); err != nil {
		return nil, err
	}
	if m.retries, err = registered(prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: crmetrics.WorkQueueSubsystem,
		Name: crmetrics.RetriesKey, Help: "Total number of retries handled by workqueue"}, labels)); err != nil {
		return nil, err
	}
	return m, nil
}

// registered is the collector controller-runtime's registry already has in c's place.
func registered[C prometheus.Collector](c C) (C, error) {
	err := crmetrics.Registry.Register(c)
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if have, ok := already.ExistingCollector.(C); ok {
			return have, nil
		}
	}
	if err == nil {
		crmetrics.Registry.Unregister(c)
		err = errors.New("not registered by controller-runtime")
	}
	var zero C
	return zero, fmt.Errorf("controller-runtime's workqueue metrics: %w", err)
}

type crWorkqueueMetrics struct {
	depth, unfinished, longest *prometheus.GaugeVec
	adds, retries              *prometheus.CounterVec
	latency, workDuration      *prometheus.HistogramVec
}

func (m *crWorkqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name, name, "")
}

func (m *crWorkqueueMetrics) NewDepthMetricWithPriority(name string) DepthByPriority {
	return crDepth{vec: m.depth, name: name}
}

func (m *crWorkqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.adds.WithLabelValues(name, name)
}

func (m *crWorkqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name, name)
}

func (m *crWorkqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name, name)
}

func (m *crWorkqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name, name)
}

func (m *crWorkqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longest.WithLabelValues(name, name)
}

func (m *crWorkqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retries.WithLabelValues(name, name)
}

type crDepth struct {
	vec  *prometheus.GaugeVec
	name string
}

func (d crDepth) Inc(priority int) {
	d.vec.WithLabelValues(d.name, d.name, strconv.Itoa(priority)).Inc()
}
func (d crDepth) Dec(priority int) {
	d.vec.WithLabelValues(d.name, d.name, strconv.Itoa(priority)).Dec()
}
