package main

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// The pool part of the report: when the pool sites were placed, what a pool pass and the start-up cost, and the
// per-site figures that show how each grows with the number of sites (docs/bench/operator-pools-*.md compares
// runs at several sizes).

// controllerStaticSitePool is the pool controller's name in controller-runtime's metrics.
const controllerStaticSitePool = "staticsitepool"

// poolRows are the pool's rows of the table of figures against goals.
func (r *report) poolRows(p func(string, ...any)) {
	c := r.cfg
	steady := between(r.quietBefore, r.quietAfter)
	passes := r.startup.op.histogramOf("controller_runtime_reconcile_time_seconds", map[string]string{"controller": controllerStaticSitePool})
	all := float64(c.sites + c.poolSites)
	p("| Operator start → every pool site Placed (status, every pool pod serves it) | %.1f s | grows linearly | |", r.poolPlacedAt.Sub(r.operatorStart).Seconds())
	switch {
	case r.poolReadyAt.IsZero() && !c.local.isolated:
		p("| Pool sites Ready | %d of %d (a pool site's EndpointSlice lists kwok's loopback pod IPs, which the API server refuses) | — | |", r.poolReady, c.poolSites)
	case r.poolReadyAt.IsZero():
		p("| Pool sites Ready | %d of %d | all | |", r.poolReady, c.poolSites)
	default:
		p("| Operator start → every pool site Ready | %.1f s | grows linearly | |", r.poolReadyAt.Sub(r.operatorStart).Seconds())
	}
	p("| Pool pass p50 / p99 (start-up, %.0f passes) | %s / %s | — | |", passes.count, ms(passes.quantile(0.5)), ms(passes.quantile(0.99)))
	p("| Operator RSS per site (dedicated and pool), steady state | %.1f KiB | constant | |", float64(steady.rss)/1024/all)
	p("| Operator CPU-seconds per site, start-up | %.1f ms | constant | |", r.startup.proc.cpuSeconds*1000/all)
}

// poolDetail is the start-up's writes, by resource, as kube-apiserver counted them.
func (r *report) poolDetail(p func(string, ...any)) {
	c := r.cfg
	w := delta(r.apiAtStart.apiserverWrites(), r.startup.api.apiserverWrites())
	p("")
	p("### Pool (%d sites, %d pods, %d index shards)", c.poolSites, c.poolReplicas, c.poolShards)
	p("")
	p("- kube-apiserver writes from the operator's start until every site was placed, every client (the operator, kube-controller-manager, kube-scheduler, kwok), by resource: %s.", formatTotals(w))
	p("- Per site, dedicated and pool together (the API server does not tell them apart; runs at several pool sizes do): %s.",
		formatPerSite(w, c.sites+c.poolSites, "configmaps", "staticsites/status", "endpointslices", "services"))
	p("- Pool passes at start-up: %.0f; pool reconciles per minute in the steady state: %.1f.",
		r.startup.op.sum("controller_runtime_reconcile_total", map[string]string{"controller": controllerStaticSitePool}),
		between(r.quietBefore, r.quietAfter).reconciles[controllerStaticSitePool]/between(r.quietBefore, r.quietAfter).minutes)
}

// formatTotals prints counts (not rates), sorted by key, zeros left out.
func formatTotals(d map[string]float64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(d)) {
		if d[k] != 0 {
			parts = append(parts, fmt.Sprintf("%s=%.0f", k, d[k]))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// formatPerSite adds up, for each resource, the writes of every verb to it and divides by sites.
func formatPerSite(d map[string]float64, sites int, resources ...string) string {
	var parts []string
	for _, res := range resources {
		n := 0.0
		for k, v := range d {
			if _, r, ok := strings.Cut(k, " "); ok && r == res {
				n += v
			}
		}
		parts = append(parts, fmt.Sprintf("%s %.2f", res, n/float64(max(sites, 1))))
	}
	return strings.Join(parts, ", ")
}
