//! A read-only map from short byte strings to a `u32` in which a lookup touches one cache line: the pool's host
//! map (pool/hosts.rs) and the content table's path map (site/paths.rs).
//!
//! Why not a general hash map: a pool's hot sites are spread over far more memory than the CPU's caches hold, so
//! what a lookup costs is the lines it touches. hashbrown touches three (its control bytes, its bucket, the key
//! the bucket points to); this table holds the key inside its bucket and touches one (and its neighbour on a
//! collision). Keys longer than a bucket holds (rare for host names and URL paths) are in a plain map beside it.
//!
//! The price is memory: a 64-byte bucket per key, and three buckets for every two keys (at most two thirds full,
//! so a probe always ends at an empty bucket; the size is not rounded to a power of two: the hash is mapped onto
//! any size by a multiply), 96 bytes a key (`COST_PER_KEY`) where hashbrown's slot and key cost about 90.
//!
//! Built once from all its pairs (`build`); a change is a new map (`rebuilt_with`). The buckets are shared (`Arc`),
//! so a copy of the structure holding the map (the content table the background encoder republishes) does not
//! copy them. Lookups of keys nobody inserted (a client's path or host) only read: no hash flooding can grow it.

use std::hash::Hasher;
use std::sync::Arc;

use crate::fxhash::{FxHasher, FxMap};

/// Keys up to this length are held in their bucket.
pub const INLINE: usize = 55;

/// What one key held in its bucket costs at the table's fullest: one and a half buckets (`build`'s size).
pub const COST_PER_KEY: u64 = 96;

/// One key and its value: 64 bytes, one cache line.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Bucket {
    /// Bits of the key's hash, never 0; 0 marks an empty bucket.
    tag: u32,
    value: u32,
    len: u8,
    key: [u8; INLINE],
}

const EMPTY: Bucket = Bucket { tag: 0, value: 0, len: 0, key: [0; INLINE] };

#[derive(Clone, Default)]
pub struct LineMap {
    /// Probed linearly from the bucket the hash's top half maps to.
    buckets: Arc<[Bucket]>,
    /// Keys longer than `INLINE`.
    long: Arc<FxMap<Box<[u8]>, u32>>,
    len: usize,
}

#[inline]
fn hash(key: &[u8]) -> u64 {
    let mut h = FxHasher::default();
    h.write(key);
    h.finish()
}

/// The tag and first bucket of a key whose hash is `h`, in a table of `size` buckets (not empty). The top half
/// chooses the bucket (FxHash's last multiply mixes it best), scaled onto the table by a multiply and a shift (no
/// division, any size); the low half is the tag.
#[inline]
fn start(h: u64, size: usize) -> (u32, usize) {
    (h as u32 | 1, (((h >> 32) * size as u64) >> 32) as usize)
}

/// The bucket holding `key` (a short one; `buckets` is not empty), or the empty bucket that ends its probe.
#[inline]
fn probe(buckets: &[Bucket], key: &[u8]) -> Result<usize, usize> {
    let (tag, mut i) = start(hash(key), buckets.len());
    loop {
        let b = &buckets[i];
        if b.tag == 0 {
            return Err(i);
        }
        if b.tag == tag && &b.key[..b.len as usize] == key {
            return Ok(i);
        }
        i = if i + 1 == buckets.len() { 0 } else { i + 1 };
    }
}

impl LineMap {
    /// The map of `pairs`; a key given twice keeps its last value.
    pub fn build<'a>(pairs: impl IntoIterator<Item = (&'a [u8], u32)>) -> LineMap {
        let pairs: Vec<(&[u8], u32)> = pairs.into_iter().collect();
        let short = pairs.iter().filter(|(k, _)| k.len() <= INLINE).count();
        let size = if short == 0 { 0 } else { short + short / 2 + 1 };
        let mut buckets: Arc<[Bucket]> = (0..size).map(|_| EMPTY).collect();
        let mut long = FxMap::default();
        let table = Arc::get_mut(&mut buckets).expect("a new Arc is unique");
        for (key, value) in pairs {
            if key.len() > INLINE {
                long.insert(key.into(), value);
                continue;
            }
            // Its own bucket again (a key given twice), else the empty one its probe ended at.
            let (Ok(i) | Err(i)) = probe(table, key);
            let b = &mut table[i];
            (b.tag, b.value, b.len) = (start(hash(key), size).0, value, key.len() as u8);
            b.key[..key.len()].copy_from_slice(key);
        }
        let len = table.iter().filter(|b| b.tag != 0).count() + long.len();
        LineMap { buckets, long: Arc::new(long), len }
    }

    /// This map with `more` added (a key already here takes its new value).
    pub fn rebuilt_with<'a>(&'a self, more: impl IntoIterator<Item = (&'a [u8], u32)>) -> LineMap {
        LineMap::build(self.iter().chain(more))
    }

    #[inline]
    pub fn get(&self, key: &[u8]) -> Option<u32> {
        if key.len() > INLINE {
            return self.long.get(key).copied();
        }
        if self.buckets.is_empty() {
            return None;
        }
        probe(&self.buckets, key).ok().map(|i| self.buckets[i].value)
    }

    /// Every (key, value), in no particular order.
    pub fn iter(&self) -> impl Iterator<Item = (&[u8], u32)> {
        let short = self.buckets.iter().filter(|b| b.tag != 0).map(|b| (&b.key[..b.len as usize], b.value));
        short.chain(self.long.iter().map(|(k, &v)| (&**k, v)))
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bucket_is_one_cache_line() {
        assert_eq!(std::mem::size_of::<Bucket>(), 64);
        assert_eq!(std::mem::align_of::<Bucket>(), 64);
    }

    #[test]
    fn many_keys_short_and_long_each_find_their_own_value() {
        // Long keys (past a bucket's room) beside short ones, at the edge of a bucket's room, enough of them to
        // fill the table to its bound and make probes run across collisions and the table's end.
        let keys: Vec<String> = (0..5000)
            .map(|i| match i % 4 {
                0 => format!("/s{i:05}/index.html"),
                1 => format!("/{}{i:05}", "k".repeat(INLINE - 6)), // exactly INLINE bytes
                2 => format!("/{}{i:05}", "k".repeat(INLINE - 5)), // one past
                _ => format!("/{}/{i}.html", "x".repeat(40 + i % 30)),
            })
            .collect();
        let m = LineMap::build(keys.iter().enumerate().map(|(i, k)| (k.as_bytes(), i as u32)));
        assert_eq!(m.len(), keys.len());
        let value_of: std::collections::HashMap<&str, u32> =
            keys.iter().enumerate().map(|(i, k)| (&**k, i as u32)).collect();
        for (i, k) in keys.iter().enumerate() {
            assert_eq!(m.get(k.as_bytes()), Some(i as u32), "{k}");
            // A key one byte shorter, or with one more, is another key: its own value, or none.
            let shorter = &k[..k.len() - 1];
            assert_eq!(m.get(shorter.as_bytes()), value_of.get(shorter).copied(), "{shorter}");
            let longer = format!("{k}x");
            assert_eq!(m.get(longer.as_bytes()), value_of.get(&*longer).copied(), "{longer}");
        }
        assert_eq!(m.get(b"/nobody"), None);
        assert_eq!(m.get(b""), None);
        let mut all: Vec<(Vec<u8>, u32)> = m.iter().map(|(k, v)| (k.to_vec(), v)).collect();
        all.sort_by_key(|&(_, v)| v);
        assert!(all.iter().enumerate().all(|(i, (k, v))| *v == i as u32 && k == keys[i].as_bytes()));
    }

    #[test]
    fn an_empty_map_finds_nothing_and_a_key_given_twice_keeps_its_last_value() {
        let empty = LineMap::build(std::iter::empty());
        assert_eq!((empty.get(b"a"), empty.get(&[b'a'; 80]), empty.len()), (None, None, 0));
        let twice = LineMap::build([(&b"/a"[..], 1), (&b"/a"[..], 2)]);
        assert_eq!((twice.get(b"/a"), twice.len()), (Some(2), 1));
    }

    #[test]
    fn a_rebuilt_map_keeps_its_keys_and_takes_the_new_values() {
        let long = "/l".repeat(40);
        let m = LineMap::build([(&b"/a"[..], 1), (b"/b", 2), (long.as_bytes(), 3)]);
        let n = m.rebuilt_with([(&b"/b"[..], 20), (b"/c", 30)]);
        assert_eq!(
            (n.get(b"/a"), n.get(b"/b"), n.get(b"/c"), n.get(long.as_bytes()), n.len()),
            (Some(1), Some(20), Some(30), Some(3), 4)
        );
        assert_eq!((m.get(b"/b"), m.get(b"/c"), m.len()), (Some(2), None, 3), "the old map is unchanged");
    }
}
