package pool

import (
	"context"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"hyperstatic.dev/hyperstatic/controllers/staticsite/sitechild"
	"hyperstatic.dev/hyperstatic/internal/autoplacement"
	"hyperstatic.dev/hyperstatic/internal/podstate"
	"hyperstatic.dev/hyperstatic/internal/poolplacement"
	"hyperstatic.dev/hyperstatic/internal/poolread"
	"hyperstatic.dev/hyperstatic/internal/pooltraffic"
)

// The traffic of the pool's sites with automatic placement (spec.placement.mode Auto), measured where it is
// served: by the pool's ready pods (their per-site "requests" in /sites, read once per pass for every site by
// reconcileServed) and by the site's own ready pods while it has any (hyperstatic_requests_total on their admin
// port, the counter the autoscaler reads). The pool controller measures both sides because it already reads the
// pool's pods every pass and keeps running while a site is quiet; the site controller runs on events only, and
// the autoscaler measures only sites with spec.autoscaling, which a site that may run in a pool cannot have. A
// site moving between the two is served by both: the sum is its traffic. internal/pooltraffic turns the counters
// into rates and bands; they reach the site controller through the Board, which wakes a site only when its band
// changes.

// DefaultTrafficInterval is how often a pool with sites placed automatically reads its pods, at least.
const DefaultTrafficInterval = 15 * time.Second

// poolPodCounts is what one ready pool pod said, for the traffic: nil sites when it could not be read.
type poolPodCounts struct {
	uid   string
	sites map[string]poolread.ServerSite
}

// measureTraffic fills the Traffic of every admitted Auto site in o.served from the pool pods' answers (read
// earlier in the pass; an unreadable pod has nil sites) and the site's own ready pods.
func (r *Reconciler) measureTraffic(ctx context.Context, o *observation, pool []poolPodCounts) {
	readings := map[string]pooltraffic.Reading{}
	for _, a := range o.admitted {
		if !poolplacement.Auto(a.site) {
			continue
		}
		id := a.entry.ID
		rd := pooltraffic.Reading{Thresholds: autoplacement.ThresholdsOf(o.pool, a.site.Spec.Placement)}
		for _, p := range pool {
			got, ok := p.sites[id]
			switch {
			case p.sites == nil || (ok && !got.Counted):
				rd.Missing = true
			case ok:
				rd.Counts = append(rd.Counts, pooltraffic.Count{Pod: p.uid, Requests: got.Requests})
			}
		}
		r.countOwnPods(ctx, a, &rd)
		readings[id] = rd
	}
	traffic := r.memoryOf(o.pool.Name).traffic.Update(o.now, readings)
	for id, t := range traffic {
		if s, ok := o.served[id]; ok {
			s.Traffic = t
			o.served[id] = s
		}
	}
	if len(readings) > 0 {
		o.requeue(o.tun.trafficInterval)
	}
}

// countOwnPods adds the counters of the site's own ready server pods (none while it runs in the pool). A pod that
// cannot be read, or says a count that is not a whole number, makes the reading incomplete; so does a failed list.
// A tenant's pod failing is not the pool's problem: it is not reported in the pool's conditions.
func (r *Reconciler) countOwnPods(ctx context.Context, a admittedSite, rd *pooltraffic.Reading) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(a.site.Namespace), client.MatchingLabels(sitechild.SelectorLabels(a.site))); err != nil {
		rd.Missing = true
		return
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if !podstate.Serving(p) {
			continue
		}
		if r.Scraper == nil {
			rd.Missing = true // nothing can read it: its share is unknown, never 0
			continue
		}
		s, err := r.Scraper.Scrape(ctx, p)
		if err != nil {
			rd.Missing = true
			continue
		}
		if n := s.Requests; n >= 0 && n < math.MaxUint64 && n == math.Trunc(n) {
			rd.Counts = append(rd.Counts, pooltraffic.Count{Pod: string(p.UID), Requests: uint64(n)})
		} else {
			rd.Missing = true
		}
	}
}
