package autoscaling

import (
	"time"

	"k8s.io/utils/clock"
)

// DefaultScrapeInterval is how often each autoscaled StaticSite's pods are scraped and a decision is made
// (the manager's --autoscaler-scrape-interval flag).
const DefaultScrapeInterval = 5 * time.Second

// DefaultWindowIntervals is the length of the rate window in scrape intervals (15 s at the default interval).
const DefaultWindowIntervals = 3

// DefaultMaxConcurrentScrapes bounds the scrapes in flight for one StaticSite.
const DefaultMaxConcurrentScrapes = 16

// Option configures a Reconciler.
type Option func(*Reconciler)

// WithScrapeInterval sets how often a site is scraped and re-decided (default DefaultScrapeInterval). The rate
// window follows it (DefaultWindowIntervals × interval) unless WithWindow is also given.
func WithScrapeInterval(d time.Duration) Option {
	return func(r *Reconciler) { r.interval = d }
}

// WithWindow sets the length of the sliding window the per-pod request rate is averaged over.
func WithWindow(d time.Duration) Option {
	return func(r *Reconciler) { r.window = d }
}

// WithClock replaces the real clock (tests step a fake clock through stabilization windows).
func WithClock(c clock.PassiveClock) Option {
	return func(r *Reconciler) { r.clock = c }
}

// WithMaxConcurrentReconciles sets how many StaticSites are scraped and decided in parallel (default 4).
func WithMaxConcurrentReconciles(n int) Option {
	return func(r *Reconciler) { r.maxConcurrent = n }
}
