//! A worker's memory of recent `Authorization` values and what checking them gave: so that a logged-in client
//! costs a bcrypt verification once, not once per request. Fixed size, allocated when the worker starts: 64
//! slots in 32 sets of two (a set's least recently used slot is replaced, so two values in use that share a set do not push each other out),
//! each holding a whole value (up to `MAX_VALUE` bytes; a longer one is never remembered)
//! with the access rules it was checked against (`Access::id`, new with each site value load, so changed
//! credentials are checked afresh) and the verdict, good or bad. The set is picked by a hash keyed per process
//! (std's SipHash with random keys), so a client cannot aim its values at another's set; the whole value is
//! then compared in constant time, so a slot can never answer for a different value. No lock (each worker its
//! own), no allocation on a lookup.
//!
//! A wrong password is remembered as bad, never as good: repeating it costs nothing, while every *new* wrong
//! password costs one verification (that is what the per-client limit in front of it bounds, fairshare/).

use std::hash::BuildHasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const SETS: usize = 32;
/// The longest value remembered: `Basic ` and the base64 of a 140-byte `user:password`.
pub const MAX_VALUE: usize = 196;

#[derive(Clone, Copy)]
struct Slot {
    /// The `Access::id` the verdict holds for; 0: empty.
    owner: u64,
    good: bool,
    len: u8,
    value: [u8; MAX_VALUE],
}

pub struct Verified {
    /// Two slots per set; `recent[set]` is the one used last (the other goes first).
    slots: Box<[[Slot; 2]; SETS]>,
    recent: [u8; SETS],
    keys: std::collections::hash_map::RandomState,
    /// Values checked (misses): hyperstatic_basic_auth_checks_total, read by the admin thread.
    checks: Arc<AtomicU64>,
    /// The worker's clock (Unix seconds), set once per loop turn with its `Date` line: what a single sign-on
    /// session's expiry is compared with (session.rs), so a request reads no clock.
    pub now: i64,
}

impl Default for Verified {
    fn default() -> Self {
        Self::new()
    }
}

impl Verified {
    pub fn new() -> Verified {
        Verified::counted(Arc::default())
    }

    /// A table whose misses are counted in `checks` (the worker's share of the metric).
    pub fn counted(checks: Arc<AtomicU64>) -> Verified {
        Verified {
            slots: Box::new([[Slot { owner: 0, good: false, len: 0, value: [0; MAX_VALUE] }; 2]; SETS]),
            recent: [0; SETS],
            keys: Default::default(),
            checks,
            now: crate::sys::clock::realtime_coarse_secs(),
        }
    }

    /// Counts one value checked against the file (a miss; off the hot path).
    pub fn checked(&self) {
        self.checks.fetch_add(1, Ordering::Relaxed);
    }

    #[inline]
    fn set(&self, owner: u64, value: &[u8]) -> usize {
        (self.keys.hash_one((owner, value)) as usize) % SETS
    }

    /// The way of `set` holding `value` under `owner`, if any.
    #[inline]
    fn find(&self, set: usize, owner: u64, value: &[u8]) -> Option<usize> {
        (0..2).find(|&w| {
            let s = &self.slots[set][w];
            s.owner == owner && s.len as usize == value.len() && same(&s.value[..value.len()], value)
        })
    }

    /// The verdict remembered for `value` under `owner`, if any.
    #[inline]
    pub fn get(&mut self, owner: u64, value: &[u8]) -> Option<bool> {
        if value.len() > MAX_VALUE {
            return None;
        }
        let set = self.set(owner, value);
        let way = self.find(set, owner, value)?;
        self.recent[set] = way as u8;
        Some(self.slots[set][way].good)
    }

    /// Remembers `good` for `value` under `owner`, in its own slot or in place of its set's least recently used.
    pub fn put(&mut self, owner: u64, value: &[u8], good: bool) {
        if value.len() > MAX_VALUE || owner == 0 {
            return;
        }
        let set = self.set(owner, value);
        let way = self.find(set, owner, value).unwrap_or(1 - self.recent[set] as usize);
        self.recent[set] = way as u8;
        let s = &mut self.slots[set][way];
        s.owner = owner;
        s.good = good;
        s.len = value.len() as u8;
        s.value[..value.len()].copy_from_slice(value);
    }
}

/// Equal bytes of equal lengths, compared without an early exit (no timing of how much of a value matched).
#[inline]
fn same(a: &[u8], b: &[u8]) -> bool {
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remembers_verdicts_per_owner_and_value_only() {
        let mut v = Verified::new();
        assert_eq!(v.get(1, b"Basic YTpi"), None);
        v.put(1, b"Basic YTpi", true);
        v.put(1, b"Basic YTpj", false);
        assert_eq!(v.get(1, b"Basic YTpi"), Some(true));
        assert_eq!(v.get(1, b"Basic YTpj"), Some(false), "a bad one is remembered as bad");
        assert_eq!(v.get(2, b"Basic YTpi"), None, "new credentials: checked afresh");
        assert_eq!(v.get(1, b"Basic YTpk"), None);
        let long = vec![b'a'; MAX_VALUE + 1];
        v.put(1, &long, true);
        assert_eq!(v.get(1, &long), None, "too long to remember");
        // Two values of one set, used in turn, both stay.
        let first = b"Basic 0".to_vec();
        let set = v.set(1, &first);
        let second = (1..).map(|i| format!("Basic {i}").into_bytes()).find(|x| v.set(1, x) == set).unwrap();
        v.put(1, &first, true);
        v.put(1, &second, false);
        for _ in 0..3 {
            assert_eq!((v.get(1, &first), v.get(1, &second)), (Some(true), Some(false)));
        }
        // Many values: each slot answers for its own value only, whatever pushed what out.
        for i in 0..1000u32 {
            v.put(1, format!("Basic {i}").as_bytes(), i % 2 == 0);
        }
        for i in 0..1000u32 {
            if let Some(g) = v.get(1, format!("Basic {i}").as_bytes()) {
                assert_eq!(g, i % 2 == 0);
            }
        }
    }
}
