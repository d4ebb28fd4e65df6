package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"strings"
	"time"
)

// Goals of issue 28 item 3.
const (
	goalReconciled = 60 * time.Second
	goalSteadyCPU  = 0.05              // CPUs
	goalSteadyRSS  = 256 * 1024 * 1024 // bytes
)

// report is what one run measured.
type report struct {
	cfg                       *config
	startedAt, operatorStart  time.Time
	reconciledAt, availableAt time.Time
	poolPlacedAt, poolReadyAt time.Time
	poolReady                 int      // pool sites Ready when the start-up ended
	apiAtStart                families // kube-apiserver /metrics just before the operator started
	startup                   snapshot // when every Deployment was available
	settled                   bool
	settleTime                time.Duration
	quietBefore, quietAfter   snapshot
	scaleBefore, scaleAfter   snapshot
	sockets                   socketCheck
	loadAtStart, loadAtEnd    string // /proc/loadavg: the machine is shared, say how busy it was
	podIPsChecked             int64
	heap                      *heapProfile // with -heap-profile
	softLimit                 string       // with -operator-memory-limit: what the operator logged of it
	memcg                     *memcgStats  // with -operator-memory-limit: the cgroup's figures after the window
}

// window is what changed between two snapshots, per minute where it is a rate.
type window struct {
	minutes       float64
	opRequests    map[string]float64 // the operator's requests by HTTP method
	apiRequests   map[string]float64 // every client's, by apiserver verb
	apiWrites     map[string]float64 // every client's writes, by verb and resource
	reconciles    map[string]float64 // by controller
	cpu           float64            // CPUs used on average
	rss           int64
	reconcileTime histogram // StaticSite reconciles in the window
	passTime      histogram // autoscaler passes in the window
}

func between(a, b snapshot) window {
	w := window{minutes: b.at.Sub(a.at).Minutes()}
	w.opRequests = delta(a.op.sumBy("rest_client_requests_total", "method", nil), b.op.sumBy("rest_client_requests_total", "method", nil))
	w.apiRequests = delta(a.api.sumBy("apiserver_request_total", "verb", nil), b.api.sumBy("apiserver_request_total", "verb", nil))
	w.apiWrites = delta(a.api.apiserverWrites(), b.api.apiserverWrites())
	w.reconciles = delta(a.op.sumBy("controller_runtime_reconcile_total", "controller", nil), b.op.sumBy("controller_runtime_reconcile_total", "controller", nil))
	w.cpu = (b.proc.cpuSeconds - a.proc.cpuSeconds) / b.at.Sub(a.at).Seconds()
	w.rss = b.proc.rssBytes
	w.reconcileTime = b.op.histogramOf("controller_runtime_reconcile_time_seconds", map[string]string{"controller": "staticsite"}).
		minus(a.op.histogramOf("controller_runtime_reconcile_time_seconds", map[string]string{"controller": "staticsite"}))
	w.passTime = b.op.histogramOf("controller_runtime_reconcile_time_seconds", map[string]string{"controller": "autoscaler"}).
		minus(a.op.histogramOf("controller_runtime_reconcile_time_seconds", map[string]string{"controller": "autoscaler"}))
	return w
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func ms(seconds float64) string {
	if math.IsNaN(seconds) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f ms", seconds*1000)
}

// markdown renders the report: the figures against the goals first, then the detail behind them.
func (r *report) markdown() string {
	var sb strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&sb, format+"\n", args...) }
	c := r.cfg
	toReconciled := r.reconciledAt.Sub(r.operatorStart)
	steady := between(r.quietBefore, r.quietAfter)
	steadyWrites := writes(steady.opRequests, restClientWriteMethods)
	startupRequests := r.startup.op.sumBy("rest_client_requests_total", "method", nil) // all since the operator started
	startupLatency := r.startup.op.histogramOf("controller_runtime_reconcile_time_seconds", map[string]string{"controller": "staticsite"})

	if c.poolSites > 0 {
		p("## Operator at scale: %d dedicated StaticSites × %d replicas and %d pool sites (one StaticSitePool, %d pods) on %d kwok nodes",
			c.sites, c.replicas, c.poolSites, c.poolReplicas, c.nodes)
	} else {
		p("## Operator at scale: %d StaticSites × %d replicas on %d kwok nodes", c.sites, c.replicas, c.nodes)
	}
	p("")
	if c.operatorArgs != "" {
		p("Operator flags added: `%s`.", c.operatorArgs)
		p("")
	}
	if len(c.operatorEnv) > 0 {
		p("Operator environment added: `%s`.", strings.Join(c.operatorEnv, " "))
		p("")
	}
	if r.memcg != nil {
		r.memoryLimitLines(p)
		p("")
	}
	p("Machine: %s; load average (1, 5, 15 min) when the operator started %s, at the end %s.", machine(), r.loadAtStart, r.loadAtEnd)
	p("")
	p("| Figure | Measured | Goal | |")
	p("|---|---|---|---|")
	p("| Operator start → every site reconciled | %.1f s | ≤ %.0f s | %s |", toReconciled.Seconds(), goalReconciled.Seconds(), verdict(toReconciled <= goalReconciled))
	refused := r.quietAfter.op.refusedWrites() - r.quietBefore.op.refusedWrites()
	p("| Operator writes per minute, steady state, accepted by the API server | %.1f | 0 | %s |", (steadyWrites-refused)/steady.minutes, verdict(steadyWrites-refused == 0))
	p("| Operator writes per minute, steady state, refused by the API server | %.1f | 0 | %s |", refused/steady.minutes, verdict(refused == 0))
	p("| Operator CPU, steady state | %.4f CPU | < %.2f | %s |", steady.cpu, goalSteadyCPU, verdict(steady.cpu < goalSteadyCPU))
	p("| Operator RSS, steady state | %s | < %s | %s |", mib(steady.rss), mib(goalSteadyRSS), verdict(steady.rss < goalSteadyRSS))
	p("| StaticSite reconcile p50 / p99 (start-up, %.0f reconciles) | %s / %s | — | |", startupLatency.count, ms(startupLatency.quantile(0.5)), ms(startupLatency.quantile(0.99)))
	if c.autoscaled > 0 {
		as := between(r.scaleBefore, r.scaleAfter)
		passesPerSecond := as.reconciles["autoscaler"] / (as.minutes * 60)
		round := math.NaN()
		if passesPerSecond > 0 {
			round = float64(c.autoscaled) / passesPerSecond
		}
		p("| Autoscaler round over %d sites / %d pods (every site passed once) | %.2f s | the scrape interval | |", c.autoscaled, c.autoscaled*c.replicas, round)
		p("| Autoscaler pass (one site) p50 / p99 | %s / %s | — | |", ms(as.passTime.quantile(0.5)), ms(as.passTime.quantile(0.99)))
	}
	if c.poolSites > 0 {
		r.poolRows(p)
	}
	p("")
	p("Reconciled: `status.observedGeneration == metadata.generation` and the site's Deployment exists. Every")
	p("Deployment had all its replicas ready (kube-controller-manager, kube-scheduler, kwok) %.1f s after the operator", r.availableAt.Sub(r.operatorStart).Seconds())
	p("started. Start-up, until then: the operator used %.1f CPU-seconds, peak RSS %s; its API requests: %s.",
		r.startup.proc.cpuSeconds, mib(r.startup.proc.hwmBytes), formatCounts(startupRequests, 1))
	p("StaticSite reconciles at start-up, by result: %s.", formatCounts(r.startup.op.sumBy("controller_runtime_reconcile_total", "result", map[string]string{"controller": "staticsite"}), 1))
	p("")
	settled := "it settled"
	if !r.settled {
		settled = "**it did not settle** (writes kept coming)"
	}
	p("### Steady state (%.1f min window, after %s with no write by the operator: %s in %.0f s)", steady.minutes, c.settleQuiet, settled, r.settleTime.Seconds())
	p("")
	p("- The operator's API requests per minute (client side, by method): %s.", formatCounts(steady.opRequests, steady.minutes))
	p("- Reconciles per minute, by controller: %s.", formatCounts(steady.reconciles, steady.minutes))
	p("- kube-apiserver, every client (controller-manager, scheduler, kwok's node leases, the harness' metric reads), requests per minute by verb: %s.", formatCounts(steady.apiRequests, steady.minutes))
	p("- kube-apiserver writes per minute by resource, every client: %s.", formatCounts(steady.apiWrites, steady.minutes))
	p("- Operator CPU %.4f, RSS %s (peak %s).", steady.cpu, mib(steady.rss), mib(r.quietAfter.proc.hwmBytes))
	if r.heap != nil {
		r.heap.heapLines(p)
	}
	if c.autoscaled > 0 {
		as := between(r.scaleBefore, r.scaleAfter)
		p("")
		p("### Autoscaling on %d sites (%.1f min window, after %s of warm-up)", c.autoscaled, as.minutes, c.autoscaleWarmup)
		p("")
		p("- Autoscaler passes per second: %.1f (%.0f in the window, %d pods per site: ≈ %.0f scrapes per second).",
			as.reconciles["autoscaler"]/(as.minutes*60), as.reconciles["autoscaler"], c.replicas, as.reconciles["autoscaler"]*float64(c.replicas)/(as.minutes*60))
		p("- One pass (take the scale and list the pods from the cache, scrape them, decide, write status if changed): mean %s, p50 %s, p99 %s.",
			ms(as.passTime.mean()), ms(as.passTime.quantile(0.5)), ms(as.passTime.quantile(0.99)))
		p("- The operator's API requests per minute (client side, by method): %s.", formatCounts(as.opRequests, as.minutes))
		p("- Reconciles per minute, by controller: %s.", formatCounts(as.reconciles, as.minutes))
		p("- Operator CPU %.4f, RSS %s (peak %s).", as.cpu, mib(as.rss), mib(r.scaleAfter.proc.hwmBytes))
	}
	if c.poolSites > 0 {
		r.poolDetail(p)
	}
	p("")
	p("Network: machine-local is %s. kwok's pod CIDR %s and node IP %s; %d pod IPs seen by the harness' watch,", c.local, c.podCIDR, c.nodeIP, r.podIPsChecked)
	p("all machine-local; the operator's TCP sockets (%d seen by `ss -tanp` in the steady state and mid-autoscaling)", r.sockets.operatorSockets)
	p("and every socket to the admin port (%d, TIME-WAIT included: the scrapes) had machine-local peers only.", r.sockets.scrapeSockets)
	return sb.String()
}

// machine names the CPU and counts the CPUs this process may use.
func machine() string {
	model := "unknown CPU"
	if raw, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("%d × %s", runtime.NumCPU(), model)
}

// loadAverage is the first three fields of /proc/loadavg.
func loadAverage() string {
	raw, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(raw))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// memoryLimitLines: the operator's cgroup (-operator-memory-limit), the kernel's figures after the steady state.
func (r *report) memoryLimitLines(p func(string, ...any)) {
	logged := r.softLimit
	if logged == "" {
		logged = "no line about it in its log"
	}
	p("Operator in a memory cgroup limited to %s, shown to it as its container's: it logged \"%s\". The cgroup after the steady-state window: peak usage %s (its page cache included), %d charges refused at the limit, %d OOM kills.",
		mib(r.cfg.operatorMemoryLimit), logged, mib(r.memcg.peak), r.memcg.limitHit, r.memcg.oomKills)
}
