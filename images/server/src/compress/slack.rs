//! When background work may run: only on CPU time serving leaves (slack), with a small guaranteed trickle.
//!
//! Why not just `SCHED_IDLE`: under a CFS quota every thread of the cgroup spends the same quota, so an idle-class
//! thread that runs while the worker sleeps in `epoll_wait` uses the quota the worker needs a moment later (issue
//! 25: 28–32 % of req/s at 40 % of a core). Without a quota the idle class yields at once, but still evicts the
//! worker's caches. So the background work asks this governor before each slice of work (one codec of one file)
//! and pauses when serving needs the CPU.
//!
//! Pure: driven by the readings passed in (wall clock, the workers' CPU time, the background thread's own CPU time,
//! the cgroup's throttled-period count), so tests hold it without a clock. cgroup_cpu.rs reads the real counters.
//!
//! The rule, per window of `WINDOW` (one CFS period):
//! - serving share = the workers' CPU time ÷ (wall × capacity cores);
//! - *busy* when that share is at least `BUSY_SHARE`, or when the cgroup was throttled while serving ran at all
//!   (`THROTTLED_BUSY_SHARE`): serving wanted more than the quota gave. Fast to become busy, slow to leave it: any
//!   span of at least `FAST_SPAN_NS` between two readings with serving at `BUSY_SHARE` makes it busy at once (load
//!   arriving costs one slice, not a window), while only a whole window below it makes it idle again;
//! - the background thread earns CPU credit at `TRICKLE_SHARE` of capacity while busy, otherwise at what serving
//!   leaves below `target` (0.9 of capacity under a quota, so a burst of requests finds quota left; the whole of it
//!   without one, where the idle class already yields on every wakeup); it runs while its credit is not negative
//!   and otherwise pauses until the credit is back.
//!
//! Saturated forever: the trickle (0.5 % of capacity) keeps the variants coming, about 200× slower than on an idle
//! pod; the site stays correct, only bigger on the wire, and the throughput cost stays within the 2 % budget.

use std::time::Duration;

/// The length of one measurement window (the default CFS period).
pub const WINDOW_NS: u64 = 100_000_000;
/// Serving at or above this share of capacity is busy: background work only trickles.
pub const BUSY_SHARE: f64 = 0.5;
/// A throttled window with serving at or above this share is busy too (the quota was short for serving).
pub const THROTTLED_BUSY_SHARE: f64 = 0.05;
/// A span between readings at least this long is enough to see load arrive.
pub const FAST_SPAN_NS: u64 = 2_000_000;
/// What background work gets of capacity while serving is busy: the guaranteed trickle.
pub const TRICKLE_SHARE: f64 = 0.005;
/// Under a quota, serving plus background work aim at most at this share of it.
pub const QUOTA_TARGET_SHARE: f64 = 0.9;
/// Credit saved while idle is capped: a burst never exceeds this much CPU time.
pub const MAX_CREDIT_NS: f64 = 20_000_000.0;
/// A pause is never longer than this, so a change of load is seen soon.
pub const MAX_PAUSE: Duration = Duration::from_millis(250);

/// One reading of the counters. All monotonic; CPU times in nanoseconds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Sample {
    /// Monotonic wall clock.
    pub wall_ns: u64,
    /// CPU time of the serving threads (every worker), summed.
    pub serving_cpu_ns: u64,
    /// CPU time of the background thread itself.
    pub own_cpu_ns: u64,
    /// The cgroup's throttled-period count (`nr_throttled`); 0 without a quota.
    pub throttled: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Verdict {
    Run,
    Pause(Duration),
}

#[derive(Debug)]
pub struct Governor {
    /// Cores serving may use: the quota, or the workers' CPUs without one.
    capacity: f64,
    /// The share of capacity serving plus background work aim at when not busy.
    target: f64,
    /// Start of the current window; None before the first reading.
    window_start: Option<Sample>,
    last: Option<Sample>,
    busy: bool,
    credit_ns: f64,
}

impl Governor {
    /// `capacity` in cores; `quota` says whether it is a CFS quota (then the target leaves headroom).
    pub fn new(capacity: f64, quota: bool) -> Governor {
        Governor {
            capacity: capacity.max(0.01),
            target: if quota { QUOTA_TARGET_SHARE } else { 1.0 },
            window_start: None,
            last: None,
            // Until one window has been seen, serving is assumed busy: a pod started under load must not pay.
            busy: true,
            credit_ns: 0.0,
        }
    }

    pub fn busy(&self) -> bool {
        self.busy
    }

    /// The share of capacity background work may use now, given serving's last share.
    fn allowance(&self, serving_share: f64) -> f64 {
        if self.busy {
            TRICKLE_SHARE
        } else {
            (self.target - serving_share).max(TRICKLE_SHARE)
        }
    }

    /// Whether to run the next slice now, from a new reading. Readings must not go backwards.
    pub fn decide(&mut self, s: Sample) -> Verdict {
        let Some(last) = self.last else {
            self.window_start = Some(s);
            self.last = Some(s);
            return Verdict::Pause(Duration::from_nanos(WINDOW_NS));
        };
        let start = self.window_start.unwrap_or(last);
        // The serving share of the window so far decides the rate of the credit just earned.
        let elapsed = s.wall_ns.saturating_sub(start.wall_ns);
        let serving_share = share(s.serving_cpu_ns.saturating_sub(start.serving_cpu_ns), elapsed, self.capacity);
        let span = s.wall_ns.saturating_sub(last.wall_ns);
        let span_share = share(s.serving_cpu_ns.saturating_sub(last.serving_cpu_ns), span, self.capacity);
        let was_busy = self.busy;
        if span >= FAST_SPAN_NS && span_share >= BUSY_SHARE {
            // Load arrived: busy now, and this window starts afresh (it must be a whole quiet one to leave).
            self.busy = true;
            self.window_start = Some(s);
        } else if elapsed >= WINDOW_NS {
            let throttled = s.throttled > start.throttled;
            self.busy = serving_share >= BUSY_SHARE || (throttled && serving_share >= THROTTLED_BUSY_SHARE);
            self.window_start = Some(s);
        }
        if self.busy && !was_busy {
            // Credit saved while idle is not spent once serving needs the CPU.
            self.credit_ns = self.credit_ns.min(0.0);
        }
        let dt = span as f64;
        let used = s.own_cpu_ns.saturating_sub(last.own_cpu_ns) as f64;
        let rate = self.allowance(serving_share) * self.capacity;
        self.credit_ns = (self.credit_ns + dt * rate - used).min(MAX_CREDIT_NS);
        self.last = Some(s);
        if self.credit_ns >= 0.0 {
            Verdict::Run
        } else {
            let ns = (-self.credit_ns / rate).min(MAX_PAUSE.as_nanos() as f64);
            Verdict::Pause(Duration::from_nanos(ns.max(1_000_000.0) as u64))
        }
    }
}

/// `cpu_ns` as a share of `wall_ns` × `capacity` cores (0 for an empty interval).
fn share(cpu_ns: u64, wall_ns: u64, capacity: f64) -> f64 {
    if wall_ns == 0 {
        0.0
    } else {
        cpu_ns as f64 / (wall_ns as f64 * capacity)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: u64 = 1_000_000;

    /// Drives a governor through readings built step by step: `at` ms of wall, serving and own CPU in ms.
    struct Drive {
        g: Governor,
        s: Sample,
    }

    impl Drive {
        fn new(capacity: f64, quota: bool) -> Drive {
            let mut d = Drive { g: Governor::new(capacity, quota), s: Sample::default() };
            assert!(matches!(d.g.decide(d.s), Verdict::Pause(_)), "the first reading only starts a window");
            d
        }

        fn step(&mut self, wall_ms: u64, serving_ms: u64, own_ms: u64, throttled: u64) -> Verdict {
            self.step_f(wall_ms as f64, serving_ms as f64, own_ms as f64, throttled)
        }

        fn step_f(&mut self, wall_ms: f64, serving_ms: f64, own_ms: f64, throttled: u64) -> Verdict {
            self.s.wall_ns += (wall_ms * MS as f64) as u64;
            self.s.serving_cpu_ns += (serving_ms * MS as f64) as u64;
            self.s.own_cpu_ns += (own_ms * MS as f64) as u64;
            self.s.throttled += throttled;
            self.g.decide(self.s)
        }

        /// Simulates background slices of `slice_ms` CPU for `total_ms` of wall time with serving at `serving`
        /// share of capacity; returns the background CPU time it was allowed, in ms.
        fn simulate(&mut self, total_ms: u64, serving: f64, slice_ms: u64, cap: f64) -> u64 {
            let (mut t, mut ran) = (0, 0);
            let mut v = self.step(0, 0, 0, 0);
            while t < total_ms {
                let wall = match v {
                    Verdict::Run => slice_ms,
                    Verdict::Pause(d) => (d.as_nanos() as u64).div_ceil(MS),
                };
                let own = if v == Verdict::Run { slice_ms } else { 0 };
                ran += own;
                t += wall;
                v = self.step_f(wall as f64, wall as f64 * serving * cap, own as f64, 0);
            }
            ran
        }
    }

    #[test]
    fn an_idle_pod_runs_at_the_target_share() {
        let mut d = Drive::new(0.4, true);
        // 10 s of wall on an idle 400m pod: 0.9 × 0.4 × 10 s = 3.6 s of background CPU, within a slice.
        let ran = d.simulate(10_000, 0.0, 5, 0.4);
        assert!((3_500..=3_650).contains(&ran), "ran {ran} ms");
        assert!(!d.g.busy());
        // Without a quota the whole CPU is slack when nothing serves.
        let mut d = Drive::new(1.0, false);
        let ran = d.simulate(10_000, 0.0, 5, 1.0);
        assert!((9_600..=10_000).contains(&ran), "ran {ran} ms");
    }

    #[test]
    fn a_saturated_pod_only_trickles() {
        let mut d = Drive::new(0.4, true);
        let ran = d.simulate(60_000, 1.0, 5, 0.4);
        // 0.5 % of 0.4 cores for 60 s = 120 ms (plus the first window's slice at most).
        assert!(d.g.busy());
        assert!((100..=130).contains(&ran), "ran {ran} ms");
    }

    #[test]
    fn serving_below_half_leaves_the_rest_to_background_work() {
        let mut d = Drive::new(1.0, true);
        let ran = d.simulate(10_000, 0.3, 5, 1.0);
        // target 0.9 − 0.3 serving = 0.6 of a core for 10 s.
        assert!(!d.g.busy());
        assert!((5_800..=6_100).contains(&ran), "ran {ran} ms");
    }

    #[test]
    fn starts_busy_until_a_window_is_seen() {
        let mut d = Drive::new(1.0, false);
        assert!(d.g.busy());
        assert!(matches!(d.step(10, 4, 5, 0), Verdict::Pause(_)), "a slice is a debt while assumed busy");
        d.step(80, 0, 0, 0);
        assert!(d.g.busy(), "90 ms seen: the window is not over");
        d.step(10, 0, 0, 0);
        assert!(!d.g.busy(), "4 ms of serving in a 100 ms window of one core is slack");
    }

    #[test]
    fn load_arriving_pauses_within_one_window_and_leaving_resumes() {
        let mut d = Drive::new(1.0, false);
        d.step(100, 0, 0, 0);
        assert!(!d.g.busy());
        assert_eq!(d.step(10, 0, 0, 0), Verdict::Run);
        // Serving takes 80 % of the next window: busy from its end on; the credit saved meanwhile is dropped, so
        // the next slice is a debt and means a pause.
        d.step(90, 72, 0, 0);
        assert!(d.g.busy());
        assert!(matches!(d.step(0, 0, 5, 0), Verdict::Pause(_)));
        // The load leaves: one quiet window later the credit flows at the idle rate again.
        d.step(100, 0, 0, 0);
        assert!(!d.g.busy());
        assert_eq!(d.step(10, 0, 0, 0), Verdict::Run);
    }

    #[test]
    fn load_arriving_is_seen_between_two_slices_not_a_window_later() {
        let mut d = Drive::new(0.4, true);
        d.step(100, 0, 0, 0);
        assert!(!d.g.busy());
        assert_eq!(d.step(5, 0, 0, 0), Verdict::Run);
        // 5 ms later (mid-window) serving ran 2 ms of its 0.4 cores' 2 ms: busy at once, no saved credit spent.
        assert!(matches!(d.step(5, 2, 5, 0), Verdict::Pause(_)));
        assert!(d.g.busy());
        // A 1 ms span is too short to judge: 1 ms of serving in it does not count as load arriving.
        let mut d = Drive::new(1.0, false);
        d.step(100, 0, 0, 0);
        d.step(1, 1, 0, 0);
        assert!(!d.g.busy());
        // Leaving busy takes a whole quiet window, counted from the last busy span.
        let mut d = Drive::new(1.0, false);
        d.step(100, 0, 0, 0);
        d.step(10, 10, 0, 0);
        assert!(d.g.busy());
        d.step(60, 0, 0, 0);
        assert!(d.g.busy(), "60 ms quiet: not yet");
        d.step(40, 0, 0, 0);
        assert!(!d.g.busy(), "100 ms quiet since load was seen");
    }

    #[test]
    fn throttling_while_serving_counts_as_busy_but_not_when_only_background_work_ran() {
        let mut d = Drive::new(0.4, true);
        d.step(100, 0, 0, 0);
        // 10 % serving (under BUSY_SHARE), but the quota ran out while serving: busy.
        d.step(100, 4, 30, 1);
        assert!(d.g.busy());
        d.step(100, 0, 0, 0);
        assert!(!d.g.busy());
        // Throttled with no serving at all: the background work did it alone; not busy.
        d.step(100, 0, 36, 1);
        assert!(!d.g.busy());
    }

    #[test]
    fn pauses_are_bounded_and_credit_is_capped() {
        let mut d = Drive::new(1.0, false);
        d.step(100, 100, 0, 0);
        assert!(d.g.busy());
        // A huge slice leaves a debt that takes minutes at the trickle; each pause is still at most MAX_PAUSE.
        assert_eq!(d.step(0, 0, 2_000, 0), Verdict::Pause(MAX_PAUSE));
        // A long idle stretch saves at most MAX_CREDIT_NS: one long quiet hour does not buy an unbounded burst.
        let mut d = Drive::new(1.0, false);
        d.step(100, 0, 0, 0);
        d.step(3_600_000, 0, 0, 0);
        assert_eq!(d.step(0, 0, 20, 0), Verdict::Run);
        assert!(matches!(d.step(0, 0, 1, 0), Verdict::Pause(_)));
    }
}
