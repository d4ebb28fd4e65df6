//! Request durations: the clock workers read and the per-worker histogram behind
//! `hyperstatic_request_duration_seconds`. A worker records into its own histogram with Relaxed
//! load + store (no locked instruction, like the counters in state.rs); metrics.rs sums workers at scrape.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::counters::bump;

/// Upper bounds (seconds) of the histogram buckets, `+Inf` implied. A static server answers from memory
/// in tens of microseconds and streams large files for seconds, so the range runs 100 µs .. 10 s in the
/// usual 1-2.5-5 steps.
pub const BUCKETS: [f64; 16] =
    [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The same bounds in nanoseconds, so the hot path compares integers, never floats.
const BOUNDS_NS: [u64; 16] = [
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Nanoseconds of CLOCK_MONOTONIC. Not the _COARSE clock the worker uses for timeouts: that one ticks every
/// 1-4 ms, so nearly every in-memory response would measure 0 and land in the first bucket. The fine clock
/// is a vDSO call (tens of ns, no syscall), read twice per batch of requests that arrived together.
#[inline]
pub fn now_ns() -> u64 {
    crate::sys::clock::monotonic_ns()
}

/// Index of the first bucket whose bound is >= `ns` (`BUCKETS.len()` = only `+Inf`). Prometheus buckets are
/// inclusive upper bounds: an observation equal to `le` counts in that bucket.
#[inline]
pub fn bucket_index(ns: u64) -> usize {
    BOUNDS_NS.iter().position(|&b| ns <= b).unwrap_or(BOUNDS_NS.len())
}

/// One worker's histogram. Buckets hold per-bucket (not cumulative) counts, so one observation is one
/// bump; the scrape accumulates them, and `_count` is their total, so `le="+Inf"` always equals `_count`.
#[derive(Default)]
pub struct Histogram {
    pub buckets: [AtomicU64; BUCKETS.len() + 1],
    pub sum_ns: AtomicU64,
}

impl Histogram {
    /// Only the owning worker calls this.
    #[inline]
    pub fn observe(&self, ns: u64) {
        bump(&self.buckets[bucket_index(ns)], 1);
        bump(&self.sum_ns, ns);
    }
}

/// Cumulative bucket counts and the sum (seconds) over several workers' histograms, as exposed.
pub fn cumulative<'a>(hs: impl Iterator<Item = &'a Histogram>) -> ([u64; BUCKETS.len() + 1], f64) {
    let mut counts = [0u64; BUCKETS.len() + 1];
    let mut sum_ns = 0u64;
    for h in hs {
        for (c, b) in counts.iter_mut().zip(&h.buckets) {
            *c += b.load(Ordering::Relaxed);
        }
        sum_ns = sum_ns.wrapping_add(h.sum_ns.load(Ordering::Relaxed));
    }
    for i in 1..counts.len() {
        counts[i] += counts[i - 1];
    }
    (counts, sum_ns as f64 / 1e9)
}

/// Appends `ns` as decimal seconds with nanosecond precision (`0.000012345`): integer arithmetic only, so
/// the access log neither allocates nor rounds.
pub fn write_seconds(out: &mut Vec<u8>, ns: u64) {
    use std::io::Write;
    let _ = write!(out, "{}.{:09}", ns / 1_000_000_000, ns % 1_000_000_000);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_match_the_documented_seconds() {
        for (s, ns) in BUCKETS.iter().zip(BOUNDS_NS) {
            assert_eq!((s * 1e9).round() as u64, ns);
        }
        assert!(BOUNDS_NS.windows(2).all(|w| w[0] < w[1]));
    }

    #[test]
    fn bucket_bounds_are_inclusive() {
        assert_eq!(bucket_index(0), 0);
        assert_eq!(bucket_index(100_000), 0);
        assert_eq!(bucket_index(100_001), 1);
        assert_eq!(bucket_index(1_000_000), 3);
        assert_eq!(bucket_index(10_000_000_000), 15);
        assert_eq!(bucket_index(10_000_000_001), 16);
        assert_eq!(bucket_index(u64::MAX), 16);
    }

    #[test]
    fn cumulative_sums_workers_and_ends_at_the_count() {
        let (a, b) = (Histogram::default(), Histogram::default());
        a.observe(50_000); // bucket 0
        a.observe(300_000); // bucket 2 (0.0005)
        b.observe(300_000);
        b.observe(20_000_000_000); // +Inf only
        let (c, sum) = cumulative([&a, &b].into_iter());
        assert_eq!(&c[..4], &[1, 1, 3, 3]);
        assert_eq!(c[15], 3);
        assert_eq!(c[16], 4);
        assert!(c.windows(2).all(|w| w[0] <= w[1]));
        assert!((sum - 20.00065).abs() < 1e-9, "{sum}");
    }

    #[test]
    fn seconds_are_written_exactly() {
        let mut v = Vec::new();
        write_seconds(&mut v, 12_345);
        assert_eq!(v, b"0.000012345");
        v.clear();
        write_seconds(&mut v, 3_000_000_001);
        assert_eq!(v, b"3.000000001");
    }

    #[test]
    fn the_fine_clock_moves() {
        let a = now_ns();
        let mut b = now_ns();
        while b == a {
            b = now_ns();
        }
        assert!(b > a);
    }
}
