//! A pool site's counters: per worker, each worker writing only its own cache line (a Relaxed load and store,
//! counters.rs at the crate root), the admin thread summing them for `/sites` and Prometheus. The line also holds
//! the worker's requests-per-second window (limits.rs), so a request to a site touches one line of that site.
//! 64 bytes per worker per site: the bulk of an unloaded site's memory.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::limits::Window;
use crate::counters::bump;

/// One worker's counters of one site.
#[repr(align(64))]
#[derive(Default)]
pub struct WorkerSite {
    /// Responses by status class: 1xx … 5xx.
    pub classes: [AtomicU64; 5],
    /// Response bytes (heads and bodies).
    pub bytes: AtomicU64,
    /// Requests refused with 429.
    pub rate_limited: AtomicU64,
    pub window: Window,
}

/// Every worker's counters of one site. A clone shares them: the site's `Cell` and its published `Slot` hold the
/// same lines, so that a request reaches its worker's line from the slot in one step (pool/mod.rs `route`).
#[derive(Clone)]
pub struct SiteCounters {
    per_worker: Arc<[WorkerSite]>,
}

/// The sums over the workers.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Totals {
    pub classes: [u64; 5],
    pub bytes: u64,
    pub rate_limited: u64,
}

impl Totals {
    pub fn requests(&self) -> u64 {
        self.classes.iter().sum()
    }
}

impl SiteCounters {
    pub fn new(workers: usize) -> SiteCounters {
        SiteCounters { per_worker: (0..workers.max(1)).map(|_| WorkerSite::default()).collect() }
    }

    /// The calling worker's line (`worker` is its index).
    #[inline]
    pub fn of(&self, worker: usize) -> &WorkerSite {
        &self.per_worker[worker]
    }

    /// Counts one response of `worker`.
    #[inline]
    pub fn count(&self, worker: usize, status: u16, bytes: u64) {
        let w = self.of(worker);
        let class = (status / 100).clamp(1, 5) as usize - 1;
        bump(&w.classes[class], 1);
        bump(&w.bytes, bytes);
    }

    pub fn totals(&self) -> Totals {
        let mut t = Totals::default();
        for w in self.per_worker.iter() {
            for (c, n) in t.classes.iter_mut().zip(&w.classes) {
                *c += n.load(Ordering::Relaxed);
            }
            t.bytes += w.bytes.load(Ordering::Relaxed);
            t.rate_limited += w.rate_limited.load(Ordering::Relaxed);
        }
        t
    }

    /// What these counters hold in memory.
    pub fn memory(&self) -> usize {
        std::mem::size_of_val(&*self.per_worker)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_sum_over_workers_by_class() {
        let c = SiteCounters::new(2);
        c.count(0, 200, 10);
        c.count(1, 404, 5);
        c.count(1, 304, 1);
        bump(&c.of(0).rate_limited, 1);
        let t = c.totals();
        assert_eq!(t.classes, [0, 1, 1, 1, 0]);
        assert_eq!((t.requests(), t.bytes, t.rate_limited), (3, 16, 1));
        assert_eq!(std::mem::size_of::<WorkerSite>(), 64, "one cache line per worker per site");
    }
}
