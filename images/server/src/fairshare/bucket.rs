//! The token bucket as GCRA (the generic cell rate algorithm): one number per client, its "theoretical arrival
//! time" (TAT), the time at which its bucket would be full again if nothing more came. A request at `now` takes a
//! token: TAT moves `interval` later (from `now` when the bucket is already full); it is refused when that would put
//! TAT more than `burst × interval` past `now` (more tokens taken than the bucket holds). This is exactly a bucket
//! of `burst` tokens refilled by one every `interval`, kept without a refill step and without a token count.
//! Times are microseconds of a monotonic clock the caller passes (the worker's; tests inject theirs).

/// A per-client limit: `requests` per `period_s` seconds, `burst` saved up at most (all at least 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub requests: u32,
    pub period_s: u32,
    pub burst: u32,
}

/// The largest `requests` and `burst` a site value may set, and the longest period (a day): with these TAT stays
/// far from overflowing (86,400 s in µs × 10^6 < 2^63).
pub const MAX_REQUESTS: u32 = 1_000_000;
pub const MAX_PERIOD_S: u32 = 86_400;

impl Rate {
    /// Microseconds between two tokens (at least 1).
    #[inline]
    pub fn interval_us(&self) -> u64 {
        (self.period_s as u64 * 1_000_000 / self.requests.max(1) as u64).max(1)
    }

    /// Takes a token from the bucket whose TAT is `tat` at `now_us`: Ok (and `tat` moved) or Err(microseconds
    /// until a token; `tat` unchanged). A fresh bucket is `tat == 0`.
    #[inline]
    pub fn take(&self, tat: &mut u64, now_us: u64) -> Result<(), u64> {
        let interval = self.interval_us();
        let next = (*tat).max(now_us) + interval;
        let limit = now_us + interval * self.burst.max(1) as u64;
        if next <= limit {
            *tat = next;
            Ok(())
        } else {
            Err(next - limit)
        }
    }
}

/// `Retry-After` for a wait of `us` microseconds: whole seconds, rounded up, at least 1 (0 would invite a retry
/// that is refused again).
#[inline]
pub fn retry_after_s(us: u64) -> u32 {
    us.div_ceil(1_000_000).clamp(1, u32::MAX as u64) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: u64 = 1_000_000;

    #[test]
    fn a_fresh_bucket_admits_its_burst_then_waits_one_interval() {
        let r = Rate { requests: 1, period_s: 600, burst: 3 };
        let (mut tat, now) = (0, 5 * S);
        for i in 0..3 {
            assert_eq!(r.take(&mut tat, now), Ok(()), "request {i}");
        }
        assert_eq!(r.take(&mut tat, now), Err(600 * S), "the fourth waits a whole interval");
        assert_eq!(retry_after_s(600 * S), 600);
        // 599.999999 s later: still one microsecond early.
        assert_eq!(r.take(&mut tat, now + 600 * S - 1), Err(1));
        assert_eq!(retry_after_s(1), 1, "never 0");
        assert_eq!(r.take(&mut tat, now + 600 * S), Ok(()), "one token came back");
        assert_eq!(r.take(&mut tat, now + 600 * S), Err(600 * S));
    }

    #[test]
    fn tokens_come_back_at_the_rate_and_never_past_the_burst() {
        let r = Rate { requests: 10, period_s: 1, burst: 2 };
        assert_eq!(r.interval_us(), 100_000);
        let mut tat = 0;
        let t0 = 1000 * S;
        assert!(r.take(&mut tat, t0).is_ok() && r.take(&mut tat, t0).is_ok());
        assert_eq!(r.take(&mut tat, t0 + 50_000), Err(50_000), "half an interval later: half a wait left");
        assert!(r.take(&mut tat, t0 + 100_000).is_ok());
        // An hour idle saves up `burst` tokens, not 36,000.
        let later = t0 + 3600 * S;
        assert!(r.take(&mut tat, later).is_ok() && r.take(&mut tat, later).is_ok());
        assert!(r.take(&mut tat, later).is_err());
    }

    #[test]
    fn a_changed_rate_applies_to_the_bucket_as_it_is() {
        // The site value changes live: the same TAT read with a larger burst admits more at once.
        let small = Rate { requests: 1, period_s: 600, burst: 3 };
        let large = Rate { burst: 10, ..small };
        let (mut tat, now) = (0, 7 * S);
        for _ in 0..3 {
            small.take(&mut tat, now).unwrap();
        }
        assert!(small.take(&mut tat, now).is_err());
        for _ in 0..7 {
            assert!(large.take(&mut tat, now).is_ok());
        }
        assert!(large.take(&mut tat, now).is_err());
        assert!(Rate { burst: 1, ..small }.take(&mut tat, now).is_err(), "and a smaller one refuses at once");
    }

    #[test]
    fn the_extremes_do_not_overflow() {
        let slow = Rate { requests: 1, period_s: MAX_PERIOD_S, burst: MAX_REQUESTS };
        let mut tat = 0;
        let now = u64::MAX / 4;
        assert!(slow.take(&mut tat, now).is_ok());
        let fast = Rate { requests: MAX_REQUESTS, period_s: 1, burst: 1 };
        assert_eq!(fast.interval_us(), 1);
        let tiny = Rate { requests: MAX_REQUESTS, period_s: 1, burst: 1 };
        let mut tat = 0;
        assert!(tiny.take(&mut tat, 10).is_ok());
        assert_eq!(tiny.take(&mut tat, 10), Err(1));
    }
}
