package main

import (
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
)

// families is one scrape of a Prometheus text endpoint, by metric name.
type families map[string]*dto.MetricFamily

// parseFamilies reads the Prometheus text exposition format.
func parseFamilies(r io.Reader) (families, error) {
	var p expfmt.TextParser
	mf, err := p.TextToMetricFamilies(r)
	if err != nil {
		return nil, fmt.Errorf("parse metrics: %w", err)
	}
	return mf, nil
}

// matches says whether a metric carries every label of want (an empty value matches only an empty or absent label).
func matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		got := ""
		for _, l := range m.GetLabel() {
			if l.GetName() == k {
				got = l.GetValue()
			}
		}
		if got != v {
			return false
		}
	}
	return true
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// sumBy adds up the counter (or gauge) name over the series matching want, grouped by the value of label by.
func (f families) sumBy(name, by string, want map[string]string) map[string]float64 {
	out := map[string]float64{}
	mf := f[name]
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		if !matches(m, want) {
			continue
		}
		v := m.GetCounter().GetValue()
		if m.GetGauge() != nil {
			v = m.GetGauge().GetValue()
		}
		out[label(m, by)] += v
	}
	return out
}

// sum is sumBy without grouping.
func (f families) sum(name string, want map[string]string) float64 {
	return f.sumBy(name, "", want)[""]
}

// histogram is a cumulative histogram: counts[i] observations were <= bounds[i]; count and sum cover all of them.
type histogram struct {
	bounds []float64
	counts []float64
	count  float64
	sum    float64
}

// histogramOf merges the histogram series of name matching want (they share their bucket bounds).
func (f families) histogramOf(name string, want map[string]string) histogram {
	var h histogram
	mf := f[name]
	if mf == nil {
		return h
	}
	for _, m := range mf.GetMetric() {
		if !matches(m, want) || m.GetHistogram() == nil {
			continue
		}
		mh := m.GetHistogram()
		if h.bounds == nil {
			for _, b := range mh.GetBucket() {
				h.bounds = append(h.bounds, b.GetUpperBound())
			}
			h.counts = make([]float64, len(h.bounds))
		}
		for i, b := range mh.GetBucket() {
			if i < len(h.counts) {
				h.counts[i] += float64(b.GetCumulativeCount())
			}
		}
		h.count += float64(mh.GetSampleCount())
		h.sum += mh.GetSampleSum()
	}
	return h
}

// minus is the histogram of the observations made between before and h (same bounds, or before empty).
func (h histogram) minus(before histogram) histogram {
	out := histogram{bounds: h.bounds, counts: make([]float64, len(h.counts)), count: h.count - before.count, sum: h.sum - before.sum}
	for i := range h.counts {
		out.counts[i] = h.counts[i]
		if i < len(before.counts) {
			out.counts[i] -= before.counts[i]
		}
	}
	return out
}

// quantile estimates the q-quantile as Prometheus' histogram_quantile does: linear interpolation inside the
// bucket the rank falls in (from 0 for the first bucket); a rank past the last finite bound returns that bound.
// NaN when the histogram is empty.
func (h histogram) quantile(q float64) float64 {
	if h.count <= 0 || len(h.bounds) == 0 {
		return math.NaN()
	}
	rank := q * h.count
	i := sort.Search(len(h.counts), func(i int) bool { return h.counts[i] >= rank })
	if i == len(h.counts) {
		return h.bounds[len(h.bounds)-1]
	}
	lower, below := 0.0, 0.0
	if i > 0 {
		lower, below = h.bounds[i-1], h.counts[i-1]
	}
	upper := h.bounds[i]
	if math.IsInf(upper, 1) {
		return lower
	}
	inBucket := h.counts[i] - below
	if inBucket <= 0 {
		return upper
	}
	return lower + (upper-lower)*(rank-below)/inBucket
}

// mean is the average observation; NaN when empty.
func (h histogram) mean() float64 {
	if h.count <= 0 {
		return math.NaN()
	}
	return h.sum / h.count
}

// apiserverWriteVerbs are the apiserver_request_total verbs that change state (the API server reports create as
// POST, update as PUT, a server-side apply as APPLY).
var apiserverWriteVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "APPLY": true, "DELETE": true, "DELETECOLLECTION": true}

// restClientWriteMethods are the rest_client_requests_total methods (HTTP) that change state.
var restClientWriteMethods = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true}

// refusedWrites is the operator's write requests (rest_client_requests_total) the API server answered with an
// error (4xx, 5xx): they changed nothing. With loopback pod IPs that is the pool sites' EndpointSlices, whose
// kwok addresses the API server refuses (machinelocal.go); in the isolated network namespace there should be none.
func (f families) refusedWrites() float64 {
	n := 0.0
	mf := f["rest_client_requests_total"]
	if mf == nil {
		return 0
	}
	for _, m := range mf.GetMetric() {
		if code := label(m, "code"); restClientWriteMethods[label(m, "method")] && code != "" && code[0] >= '4' {
			n += m.GetCounter().GetValue()
		}
	}
	return n
}

// delta is after - before, key by key (keys of either).
func delta(before, after map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range after {
		out[k] = v - before[k]
	}
	for k, v := range before {
		if _, ok := after[k]; !ok {
			out[k] = -v
		}
	}
	return out
}

// writes adds up the entries of d whose key is a write per isWrite.
func writes(d map[string]float64, isWrite map[string]bool) float64 {
	var n float64
	for k, v := range d {
		if isWrite[k] {
			n += v
		}
	}
	return n
}

// formatCounts prints a map as "K=V, ..." sorted by key, skipping zeros, per minute over the given minutes.
func formatCounts(d map[string]float64, minutes float64) string {
	keys := make([]string, 0, len(d))
	for k, v := range d {
		if v != 0 {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return "none"
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		name := k
		if name == "" {
			name = "(none)"
		}
		parts[i] = fmt.Sprintf("%s=%.1f", name, d[k]/minutes)
	}
	return strings.Join(parts, ", ")
}

// apiserverWrites is kube-apiserver's write requests by "VERB resource[/subresource]" (every client's).
func (f families) apiserverWrites() map[string]float64 {
	out := map[string]float64{}
	mf := f["apiserver_request_total"]
	if mf == nil {
		return out
	}
	for _, m := range mf.GetMetric() {
		verb := label(m, "verb")
		if !apiserverWriteVerbs[verb] {
			continue
		}
		key := verb + " " + label(m, "resource")
		if sub := label(m, "subresource"); sub != "" {
			key += "/" + sub
		}
		out[key] += m.GetCounter().GetValue()
	}
	return out
}
