//! When a worker gives freed memory back to the kernel: after its open connections fell well below the peak
//! they reached since the last time (a burst of connections closed, each having allocated its TLS session and
//! buffers). Never per request or per close: the check runs on the sweep tick, and a trim needs a drop of
//! `MIN_DROP` connections and at least half of the peak, so a steady load never trims at all.

/// Connections that must have closed since the peak before a trim is worth its walk of the allocator: 1,000
/// idle TLS connections hold ~8 MB (7.8 KiB each, README "HTTP/2"), far above the cost of a trim.
pub(super) const MIN_DROP: usize = 1000;

/// The peak of open connections since the last trim.
#[derive(Debug, Default)]
pub(super) struct TrimTrigger {
    peak: usize,
}

impl TrimTrigger {
    /// A connection opened (accept): the peak follows the count, so a burst that opens and closes between two
    /// sweeps is still seen.
    #[inline]
    pub(super) fn opened(&mut self, open: usize) {
        self.peak = self.peak.max(open);
    }

    /// On the sweep tick: true when the heap should be trimmed now, with `open` connections left. The peak then
    /// starts again from `open`.
    pub(super) fn should_trim(&mut self, open: usize) -> bool {
        self.opened(open);
        if self.peak - open >= MIN_DROP && open <= self.peak / 2 {
            self.peak = open;
            return true;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trims_once_after_a_burst_closes() {
        let mut t = TrimTrigger::default();
        for open in 1..=10_000 {
            t.opened(open);
        }
        assert!(!t.should_trim(10_000), "all still open");
        assert!(!t.should_trim(6_000), "fewer than half closed");
        assert!(t.should_trim(0), "the burst closed");
        assert!(!t.should_trim(0), "once: nothing new was freed since");
    }

    #[test]
    fn steady_and_small_loads_never_trim() {
        let mut t = TrimTrigger::default();
        // 100 connections opening and closing for ever: the drop never reaches MIN_DROP.
        for _ in 0..1000 {
            t.opened(100);
            assert!(!t.should_trim(0));
        }
        // A peak of 1,500 falling to 600: more than half gone, but fewer than MIN_DROP.
        t.opened(1500);
        assert!(!t.should_trim(600));
        assert!(t.should_trim(400));
    }

    #[test]
    fn a_burst_between_two_ticks_is_seen() {
        let mut t = TrimTrigger::default();
        t.opened(5000); // opened and closed between sweeps
        assert!(t.should_trim(10));
    }
}
