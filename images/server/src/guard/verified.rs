//! A worker's memory of recent `Authorization` values and what checking them gave: so that a logged-in client
//! costs a bcrypt verification once, not once per request. Fixed size, allocated when the worker starts: 64
//! direct-mapped slots, each holding a whole value (up to `MAX_VALUE` bytes; a longer one is never remembered)
//! with the access rules it was checked against (`Access::id`, new with each site value load, so changed
//! credentials are checked afresh) and the verdict, good or bad. The slot is picked by a hash keyed per process
//! (std's SipHash with random keys), so a client cannot aim its values at another's slot; the whole value is
//! then compared in constant time, so a slot can never answer for a different value. No lock (each worker its
//! own), no allocation on a lookup.
//!
//! A wrong password is remembered as bad, never as good: repeating it costs nothing, while every *new* wrong
//! password costs one verification (that is what the per-client limit in front of it bounds, fairshare/).

use std::hash::BuildHasher;

const SLOTS: usize = 64;
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
    slots: Box<[Slot; SLOTS]>,
    keys: std::collections::hash_map::RandomState,
}

impl Default for Verified {
    fn default() -> Self {
        Self::new()
    }
}

impl Verified {
    pub fn new() -> Verified {
        Verified {
            slots: Box::new([Slot { owner: 0, good: false, len: 0, value: [0; MAX_VALUE] }; SLOTS]),
            keys: Default::default(),
        }
    }

    #[inline]
    fn index(&self, owner: u64, value: &[u8]) -> usize {
        (self.keys.hash_one((owner, value)) as usize) % SLOTS
    }

    /// The verdict remembered for `value` under `owner`, if any.
    #[inline]
    pub fn get(&self, owner: u64, value: &[u8]) -> Option<bool> {
        if value.len() > MAX_VALUE {
            return None;
        }
        let s = &self.slots[self.index(owner, value)];
        (s.owner == owner && s.len as usize == value.len() && same(&s.value[..value.len()], value)).then_some(s.good)
    }

    /// Remembers `good` for `value` under `owner` (in place of whatever held its slot).
    pub fn put(&mut self, owner: u64, value: &[u8], good: bool) {
        if value.len() > MAX_VALUE || owner == 0 {
            return;
        }
        let i = self.index(owner, value);
        let s = &mut self.slots[i];
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
