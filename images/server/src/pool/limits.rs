//! `requestsPerSecond` of a pool site: each worker gets its share (the limit divided by the workers, at least 1)
//! and counts its own requests in a one-second window it alone writes, so admitting a request is a load and a
//! store on a cache line no other worker writes: no lock, no shared counter. Past the share the request gets 429
//! with `Retry-After: 1`. SO_REUSEPORT spreads connections over the workers, so the shares add up to the limit
//! (a client on one connection meets its worker's share: a fixed window per worker is the price of no lock).

use std::sync::atomic::{AtomicU64, Ordering};

/// One worker's window for one site: the second it counts (high 32 bits) and the requests admitted in it.
#[derive(Default)]
pub struct Window(AtomicU64);

impl Window {
    /// Whether a request at second `now_s` fits `share` requests per second; counts it when it does. Only the
    /// owning worker calls this.
    #[inline]
    pub fn admit(&self, now_s: u32, share: u32) -> bool {
        let w = self.0.load(Ordering::Relaxed);
        let (second, count) = ((w >> 32) as u32, w as u32);
        let count = if second == now_s { count } else { 0 };
        if count >= share {
            return false;
        }
        self.0.store(((now_s as u64) << 32) | (count as u64 + 1), Ordering::Relaxed);
        true
    }
}

/// A worker's share of `rps` over `workers` workers; 0 means no limit (u32::MAX).
pub fn share(rps: u64, workers: usize) -> u32 {
    if rps == 0 {
        return u32::MAX;
    }
    rps.div_ceil(workers.max(1) as u64).clamp(1, u32::MAX as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_admits_its_share_per_second() {
        let w = Window::default();
        assert!(w.admit(10, 2) && w.admit(10, 2));
        assert!(!w.admit(10, 2), "the third in the same second");
        assert!(w.admit(11, 2), "a new second starts over");
        assert_eq!(share(2000, 2), 1000);
        assert_eq!(share(1, 4), 1);
        assert_eq!(share(5, 2), 3);
        assert_eq!(share(0, 2), u32::MAX);
    }
}
