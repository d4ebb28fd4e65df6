//! One worker's buckets: a fixed array of sets, each 4 (client, TAT) pairs in 64 bytes (one cache line when the
//! array is page-aligned, as an allocation this size is). A client's set is picked by a hash of the site, its
//! key and a per-process random seed; inside the set it is found by the whole hash. A client not there takes the
//! place of the set's smallest TAT: the fullest bucket, the one that loses least when forgotten (a bucket already
//! full again is the same as no bucket, so evicting it loses nothing). The array is allocated zeroed once, when
//! the worker starts (the kernel maps its pages as sets are first touched); a request reads and writes one set:
//! no allocation, no lock, no shared cache line.

use std::sync::atomic::AtomicU64;

use super::bucket::Rate;
use crate::counters::bump;

/// Pairs per set.
const WAYS: usize = 4;
/// One set: tag, TAT, tag, TAT, ... A tag is never 0 (0 is an empty slot).
type Set = [u64; 2 * WAYS];
/// Bytes per set.
pub const SET_BYTES: u64 = std::mem::size_of::<Set>() as u64;

/// What a worker counts of its table (read by the admin thread; written by the worker only).
#[derive(Default)]
pub struct Counters {
    /// hyperstatic_requests_limited_total{reason="per_client"}.
    pub limited: AtomicU64,
    /// hyperstatic_requests_limited_total{reason="tls_handshake"}: connections closed at accept (handshake.rs).
    pub handshakes_limited: AtomicU64,
    /// hyperstatic_client_table_evictions_total: buckets forgotten before they were full again (the table is too
    /// small for the clients it sees, or an address flood pushed them out).
    pub evicted: AtomicU64,
}

pub struct Clients {
    sets: Box<[Set]>,
    mask: u64,
    seed: u64,
}

/// A seed no client can predict: set placement keyed by it, so an attacker cannot compute addresses that land
/// in a victim's set (std's RandomState draws from the OS once per process).
pub fn random_seed() -> u64 {
    use std::hash::BuildHasher;
    std::collections::hash_map::RandomState::new().hash_one(0x5eed_u64)
}

/// splitmix64's finaliser: every bit of the input moves every bit of the output.
#[inline]
fn mix(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

impl Clients {
    /// A table of at most `bytes` (the largest power-of-two number of sets that fits; one set at least).
    pub fn with_bytes(bytes: u64, seed: u64) -> Clients {
        let n = (bytes / SET_BYTES).max(1);
        let n = 1u64 << (63 - n.leading_zeros());
        // `vec![[0u64; 8]; n]` allocates zeroed memory (calloc): untouched sets cost no resident memory.
        Clients { sets: vec![[0u64; 2 * WAYS]; n as usize].into_boxed_slice(), mask: n - 1, seed }
    }

    /// The table's size in bytes.
    pub fn bytes(&self) -> u64 {
        self.sets.len() as u64 * SET_BYTES
    }

    /// Clients the table holds at most.
    pub fn capacity(&self) -> usize {
        self.sets.len() * WAYS
    }

    /// Takes a token for `client` (client.rs) of `site` (any number naming the site; 0 for the single site) at
    /// `now_us`: Ok, or Err(microseconds until a token). Counts a bucket evicted before it was full in `c`.
    #[inline]
    pub fn take(&mut self, site: u64, client: u64, rate: &Rate, now_us: u64, c: &Counters) -> Result<(), u64> {
        let h = mix(client ^ mix(site ^ self.seed));
        let tag = h | 1;
        let set = &mut self.sets[(h & self.mask) as usize];
        let mut at = None;
        let mut fullest = 0;
        for w in 0..WAYS {
            if set[2 * w] == tag {
                at = Some(w);
                break;
            }
            if set[2 * w + 1] < set[2 * fullest + 1] {
                fullest = w;
            }
        }
        let w = match at {
            Some(w) => w,
            None => {
                if set[2 * fullest] != 0 && set[2 * fullest + 1] > now_us {
                    bump(&c.evicted, 1);
                }
                set[2 * fullest] = tag;
                set[2 * fullest + 1] = 0;
                fullest
            }
        };
        rate.take(&mut set[2 * w + 1], now_us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::Ordering;

    const S: u64 = 1_000_000;
    const SLOW: Rate = Rate { requests: 1, period_s: 600, burst: 2 };

    fn evicted(c: &Counters) -> u64 {
        c.evicted.load(Ordering::Relaxed)
    }

    #[test]
    fn the_size_is_bounded_by_the_setting() {
        assert_eq!(Clients::with_bytes(1 << 20, 1).bytes(), 1 << 20);
        assert_eq!(Clients::with_bytes((1 << 20) + 100, 1).bytes(), 1 << 20, "rounded down to a power of two");
        assert_eq!(Clients::with_bytes(1000, 1).bytes(), 512);
        assert_eq!(Clients::with_bytes(0, 1).capacity(), WAYS, "one set at least");
    }

    #[test]
    fn each_client_of_each_site_has_its_own_bucket() {
        let (mut t, c) = (Clients::with_bytes(1 << 16, 7), Counters::default());
        let now = 10 * S;
        for client in [1, 2] {
            for site in [0, 9] {
                assert!(t.take(site, client, &SLOW, now, &c).is_ok());
                assert!(t.take(site, client, &SLOW, now, &c).is_ok());
                assert_eq!(t.take(site, client, &SLOW, now, &c), Err(600 * S), "site {site} client {client}");
            }
        }
        assert_eq!(evicted(&c), 0);
    }

    #[test]
    fn a_flood_of_addresses_grows_nothing_and_a_full_set_forgets_its_fullest_bucket() {
        // One set: every client competes for its 4 places.
        let (mut t, c) = (Clients::with_bytes(SET_BYTES, 3), Counters::default());
        let now = 100 * S;
        // Four clients with different amounts left: client k took k+1 tokens... of a burst of 4.
        let r = Rate { requests: 1, period_s: 600, burst: 4 };
        for k in 0..4u64 {
            for _ in 0..=k {
                t.take(0, k, &r, now, &c).unwrap();
            }
        }
        // A fifth client evicts client 0 (the fullest bucket: 3 tokens left), counted as a loss.
        t.take(0, 100, &r, now, &c).unwrap();
        assert_eq!(evicted(&c), 1);
        // Client 3 (no token left) is still there and still refused.
        assert!(t.take(0, 3, &r, now, &c).is_err());
        // A million addresses of one request each: the table stays its size, and they churn one place among
        // themselves: the clients that used more of their buckets (1, 2, 3) are the last to be forgotten.
        for a in 1_000..1_001_000u64 {
            let _ = t.take(0, a, &r, now, &c);
        }
        assert_eq!(t.bytes(), SET_BYTES);
        assert!(t.take(0, 3, &r, now, &c).is_err(), "client 3 is still limited");
        // Addresses that each use a whole bucket push everyone out; client 3 comes back with a full bucket
        // (eviction lets a client do more, never less).
        let later = now + S;
        for a in 2_000_000..2_000_008u64 {
            for _ in 0..4 {
                t.take(0, a, &r, later, &c).unwrap();
            }
        }
        assert!(t.take(0, 3, &r, later, &c).is_ok());
    }

    #[test]
    fn a_bucket_full_again_is_replaced_without_counting_a_loss() {
        let (mut t, c) = (Clients::with_bytes(SET_BYTES, 3), Counters::default());
        for k in 0..4u64 {
            t.take(0, k, &SLOW, 0, &c).unwrap();
        }
        // 600 s later every bucket is full again: forgetting one loses nothing.
        t.take(0, 50, &SLOW, 600 * S, &c).unwrap();
        assert_eq!(evicted(&c), 0);
    }

    #[test]
    fn placement_depends_on_the_seed() {
        // Two tables with different seeds put the same clients in different sets (compare which pairs collide).
        let set_of = |seed: u64, client: u64| mix(client ^ mix(seed)) & 1023;
        let same = (0..1000u64).filter(|&a| set_of(1, a) == set_of(2, a)).count();
        assert!(same < 20, "{same} of 1000 clients in the same set under two seeds");
    }
}
