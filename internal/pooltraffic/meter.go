// Package pooltraffic turns the request counters the operator reads from pods into the traffic of each site with
// automatic placement (internal/autoplacement): its requests per second over every pod that serves it, and the
// band that rate stands in against the site's thresholds, with since when.
//
// The contract:
//
//   - A pass gives, per site, one counter per pod that serves it (a pool pod's per-site "requests" of its admin
//     /sites, a site's own pod's hyperstatic_requests_total), keyed by the pod's UID, and whether some pod that
//     serves it could not be read. A pod's rate is the difference of its counter between two readings over the
//     time between them; the site's rate is the sum over its pods.
//   - A counter that went down (the pod restarted, or the site left and re-entered the pool's index) or a pod
//     seen for the first time gives no rate this pass: its next reading does. A site with such a pod, or with a
//     pod that could not be read, has an incomplete rate: a lower bound, which can only say Above
//     (autoplacement.BandOf). A pod that is no longer reported is forgotten (its traffic went to the others),
//     unless the pass missed some pod, which may be that one and come back (for up to ten minutes).
//   - Pods are not trusted (a pool pod serves the internet): a counter is a whole number (poolread,
//     podmetrics), and one pod's rate of one site is bounded by MaxRPSPerPod, far above what a server pod serves,
//     so no answer can make a rate infinite or negative. The worst a lying pod does is move a site between the
//     two placements its owner allowed (spec.placement.mode Auto), at most once per cooldown.
//   - A reading sooner than MinInterval after the site's last one changes no rate: a rate over a fraction of a
//     second is noise, and two passes at one instant would divide by zero. The band is still recomputed (the
//     thresholds may have changed).
//   - The clock is the caller's (a pass's now), so tests move it instead of sleeping.
//
// Memory: one sample per pod per measured site; sites not given to a pass are forgotten.
package pooltraffic

import (
	"time"

	"hyperstatic.dev/hyperstatic/internal/autoplacement"
)

// MaxRPSPerPod bounds one pod's measured rate of one site: a hyperstatic server pod answers a few hundred thousand
// requests per second at most; a counter implying more is a lie or a bug, and counts as this much.
const MaxRPSPerPod = 10_000_000

// DefaultMinInterval is the shortest time between two readings that give a rate.
const DefaultMinInterval = 5 * time.Second

// maxSampleAge bounds how long the sample of a pod that was not read is kept.
const maxSampleAge = 10 * time.Minute

// Count is one pod's counter of one site's requests.
type Count struct {
	// Pod is the pod's UID: a pod replaced under the same name starts afresh.
	Pod      string
	Requests uint64
}

// Reading is one pass's reading of one site.
type Reading struct {
	Counts []Count
	// Missing: a pod that serves the site gave no counter (unreadable, or a counter that is not a number).
	Missing bool
	// Thresholds are the site's (autoplacement.ThresholdsOf).
	Thresholds autoplacement.Thresholds
}

// Meter keeps the last counters of one pool's sites. Not safe for concurrent use (one pool's passes are serial).
type Meter struct {
	// MinInterval: see the package comment (0: DefaultMinInterval).
	MinInterval time.Duration
	sites       map[string]*site
}

type site struct {
	pods map[string]sample
	// at is the last reading that gave a rate; rps and complete that rate.
	at       time.Time
	rps      float64
	complete bool
	traffic  autoplacement.Traffic
}

type sample struct {
	requests uint64
	at       time.Time
}

// Update takes a pass's readings at now and returns every site's traffic; sites not in readings are forgotten.
func (m *Meter) Update(now time.Time, readings map[string]Reading) map[string]autoplacement.Traffic {
	minInterval := m.MinInterval
	if minInterval <= 0 {
		minInterval = DefaultMinInterval
	}
	if m.sites == nil {
		m.sites = map[string]*site{}
	}
	for id := range m.sites {
		if _, ok := readings[id]; !ok {
			delete(m.sites, id)
		}
	}
	out := make(map[string]autoplacement.Traffic, len(readings))
	for id, r := range readings {
		s := m.sites[id]
		if s == nil {
			s = &site{pods: map[string]sample{}}
			m.sites[id] = s
		}
		if s.at.IsZero() || now.Sub(s.at) >= minInterval {
			s.measure(now, r)
		}
		band := autoplacement.BandOf(r.Thresholds, s.rps, s.complete)
		if band != s.traffic.Band || s.traffic.Since.IsZero() {
			s.traffic.Band, s.traffic.Since = band, now
		}
		s.traffic.RPS = s.rps
		out[id] = s.traffic
	}
	return out
}

// Rate is the last rate measured for id by Update: its requests per second, whether every counter gave one
// (complete; otherwise rps is a lower bound), and whether id has been read at all.
func (m *Meter) Rate(id string) (rps float64, complete, read bool) {
	s := m.sites[id]
	if s == nil || s.at.IsZero() {
		return 0, false, false
	}
	return s.rps, s.complete, true
}

// measure takes a reading that gives a rate.
func (s *site) measure(now time.Time, r Reading) {
	rps, complete := 0.0, !r.Missing
	seen := make(map[string]sample, len(r.Counts))
	for _, c := range r.Counts {
		seen[c.Pod] = sample{requests: c.Requests, at: now}
		prev, ok := s.pods[c.Pod]
		if !ok || c.Requests < prev.requests || !now.After(prev.at) {
			complete = false // a new pod, or a counter that started again: its next reading gives its rate
			continue
		}
		rate := float64(c.Requests-prev.requests) / now.Sub(prev.at).Seconds()
		rps += min(rate, MaxRPSPerPod)
	}
	if r.Missing {
		// The pods not read this pass may come back: keep their last samples for a while.
		for pod, prev := range s.pods {
			if _, ok := seen[pod]; !ok && now.Sub(prev.at) < maxSampleAge {
				seen[pod] = prev
			}
		}
	}
	s.pods, s.at, s.rps, s.complete = seen, now, rps, complete
}
