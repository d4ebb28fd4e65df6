package contentagent

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// poolMetrics are a pool process's series: per pool, never per site (10,000 sites must not be 10,000 series);
// the per-site detail is GET /sites.
type poolMetrics struct {
	reg       *prometheus.Registry
	attempts  *prometheus.CounterVec // hyperstatic_pool_{fetch,pull}_total{kind,result}
	duration  prometheus.Histogram
	inFlight  prometheus.Gauge
	downloads prometheus.Counter
}

// newPoolMetrics registers the series of kind ("fetch" or "pull"); sites counts the table's entries by state,
// queued the work waiting, refused the index shards refused now.
func newPoolMetrics(kind string, table *siteTable, queued func() int, refused func() int) *poolMetrics {
	m := &poolMetrics{
		reg: prometheus.NewRegistry(),
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "hyperstatic_pool_" + kind + "_total",
			Help: "Attempts over every site of the pool, by content kind (git, configmap, bundle) and result: changed, " +
				"unchanged, or the failure reason.",
		}, []string{"kind", "result"}),
		duration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "hyperstatic_pool_" + kind + "_duration_seconds",
			Help:    "Duration of one site's attempt.",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 14),
		}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "hyperstatic_pool_" + kind + "_in_flight",
			Help: "Sites being worked on now (at most the concurrency).",
		}),
		downloads: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "hyperstatic_pool_bundle_downloads_total",
			Help: "Bundles served to pullers (200 answers of /bundles/).",
		}),
	}
	sites := func(state string) prometheus.GaugeFunc {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "hyperstatic_pool_sites",
			Help:        "Sites of the index by state: served (a bundle, no failure), failing, pending (neither yet).",
			ConstLabels: prometheus.Labels{"state": state},
		}, func() float64 { return table.count(state) })
	}
	m.reg.MustRegister(m.attempts, m.duration, m.inFlight, sites("served"), sites("failing"), sites("pending"),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hyperstatic_pool_queued_sites",
			Help: "Sites waiting for a worker.",
		}, func() float64 { return float64(queued()) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "hyperstatic_pool_index_shards_refused",
			Help: "Index shards whose current form is refused (their previous good form is kept).",
		}, func() float64 { return float64(refused()) }))
	if kind == "fetch" {
		m.reg.MustRegister(m.downloads)
	}
	return m
}

func (m *poolMetrics) handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}
