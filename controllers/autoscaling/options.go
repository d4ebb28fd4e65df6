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

// DefaultMaxConcurrentReconciles is how many StaticSites are scraped and decided at once. It must stay above 1:
// a pass waits up to the scrape timeout for pods that do not answer, and with a single worker every other site
// would wait behind it (TestSlowSiteDoesNotHoldOthers).
const DefaultMaxConcurrentReconciles = 4

// maxBackoffPasses caps how many passes a pod whose scrapes keep failing is left out: 6 passes (30 s at the
// default interval, two rate windows) after 1, 2 and 4. A pod that does not answer then costs a pass at most one
// scrape timeout in six, and one that recovers is measured again within that.
const maxBackoffPasses = 6

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

// WithClock replaces the real clock (tests step a fake clock through stabilization windows). It is the clock of
// every decision and of the AbleToScale and ScalingActive transition times.
func WithClock(c clock.PassiveClock) Option {
	return func(r *Reconciler) { r.clock = c }
}

// WithScrapeTimeout sets the one deadline all the scrapes of a pass share (default: half the scrape interval, at
// least a second), so a site whose pods do not answer still gets a decision every interval from the others.
func WithScrapeTimeout(d time.Duration) Option {
	return func(r *Reconciler) { r.scrapeTimeout = d }
}

// WithMaxConcurrentReconciles sets how many StaticSites are scraped and decided in parallel (default
// DefaultMaxConcurrentReconciles; keep it above 1, see there).
func WithMaxConcurrentReconciles(n int) Option {
	return func(r *Reconciler) { r.maxConcurrent = n }
}
