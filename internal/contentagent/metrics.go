package contentagent

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// metrics are one process's series on its own registry (never the global one: two agents in one test process
// must not share counters). The names follow Prometheus conventions: _total counters, _seconds, _bytes, and an
// _info gauge of value 1 whose label is the commit.
type metrics struct {
	reg        *prometheus.Registry
	attempts   *prometheus.CounterVec // hyperstatic_git_{fetch,pull}_total{result}
	lastOK     prometheus.Gauge
	revision   *prometheus.GaugeVec
	bundleSize prometheus.Gauge
	// fetcher only
	webhooks  *prometheus.CounterVec
	coalesced prometheus.Counter
	downloads prometheus.Counter
	triggers  *prometheus.CounterVec
	duration  prometheus.Histogram
}

func newMetrics(kind string) *metrics {
	m := &metrics{
		reg: prometheus.NewRegistry(),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperstatic_git_" + kind + "_total",
			Help: "Attempts by result: changed, unchanged, or the failure reason (a gitsource reason or Error).",
		}, []string{"result"}),
		lastOK: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hyperstatic_git_last_success_timestamp_seconds",
			Help: "Unix time of the last successful " + kind + ".",
		}),
		revision: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "hyperstatic_git_revision_info",
			Help: "1 for the commit whose tree is published (fetcher) or served (puller).",
		}, []string{"commit"}),
		bundleSize: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hyperstatic_git_bundle_size_bytes",
			Help: "Size of the current bundle.",
		}),
		webhooks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperstatic_git_webhook_requests_total",
			Help: "Webhook deliveries by result: accepted, ignored (another repository or ref), Overloaded (refused unread: " +
				"too many in flight), or the refusal kind (BadSignature, BadRequest, NotPush, TooLarge, Timeout).",
		}, []string{"result"}),
		coalesced: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hyperstatic_git_webhook_coalesced_total",
			Help: "Accepted webhooks that started no fetch of their own: one was already waiting, or the minimum gap " +
				"after the last webhook fetch was running (one fetch at its end takes them all).",
		}),
		downloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hyperstatic_git_bundle_downloads_total",
			Help: "Bundles served to pullers (200 answers of /bundles/).",
		}),
		triggers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperstatic_git_fetch_triggers_total",
			Help: "Fetches started, by trigger: start, interval, webhook.",
		}, []string{"trigger"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hyperstatic_git_fetch_duration_seconds",
			Help:    "Duration of one fetch attempt: resolve, fetch, write, check, bundle.",
			Buckets: prometheus.ExponentialBuckets(0.05, 2, 12),
		}),
	}
	m.reg.MustRegister(m.attempts, m.lastOK, m.revision, m.bundleSize)
	if kind == "fetch" {
		m.reg.MustRegister(m.webhooks, m.coalesced, m.downloads, m.triggers, m.duration)
	}
	return m
}

// setRevision makes commit the only revision_info series.
func (m *metrics) setRevision(commit string) {
	m.revision.Reset()
	m.revision.WithLabelValues(commit).Set(1)
}

func (m *metrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
