//! Counters with one writer: a worker's own counters (state.rs `WorkerStats`), its duration histogram
//! (timing.rs), the encoder's and the control thread's tallies. Other threads only read them (the admin
//! listener at scrape), so the writer needs no locked instruction: a Relaxed load and store is enough.
//! It sits under everything that counts, so that counting never imports what holds the counters.

use std::sync::atomic::{AtomicU64, Ordering};

/// Adds `by` to a counter only the calling thread writes (wrapping, as Prometheus counters read modulo 2^64).
#[inline]
pub fn bump(c: &AtomicU64, by: u64) {
    c.store(c.load(Ordering::Relaxed).wrapping_add(by), Ordering::Relaxed);
}
