//! Host selection: the name a request asked for (HTTP/1.1 `Host`, HTTP/2 `:authority` else `host`) in its
//! normal form — lowercase, without a port, without a trailing dot — looked up in the index's host map. The map
//! is immutable once built (the registry builds a new one when the index changes) and keyed by the normal form,
//! so a lookup normalises into a stack buffer and hashes those bytes: no String, no allocation, no lock.
//!
//! The map is its own open-addressing table of one cache line per name, the name inside it: a pool's hot sites
//! are spread over far more memory than the CPU's caches hold, so what a lookup costs is the lines it touches, and
//! a general hash map touched three (its control bytes, its bucket, the name the bucket pointed to) where this
//! touches one (and its neighbour on a collision). A name longer than a line holds (rare) is in a plain map.
//! The price is memory: 64 bytes a bucket, three buckets for every two names (not rounded to a power of two: the
//! hash is mapped onto any size), about 2.2 MB more than a hash map of shared names for 10,000 sites of four names.

use std::hash::Hasher;
use std::sync::Arc;

use crate::fxhash::FxMap;

/// The longest host name looked up (a DNS name is at most 253 characters; a longer one names no site).
pub const MAX_HOST: usize = 253;

/// Names up to this length are held in their bucket.
const INLINE: usize = 54;

/// One name and its slot: 64 bytes, one cache line.
#[repr(C, align(64))]
#[derive(Clone, Copy)]
struct Bucket {
    /// Bits of the name's hash, never 0; 0 marks an empty bucket.
    tag: u32,
    slot: u32,
    len: u8,
    name: [u8; INLINE],
}

const EMPTY: Bucket = Bucket { tag: 0, slot: 0, len: 0, name: [0; INLINE] };

/// Every host of the index → the site's slot in the snapshot.
#[derive(Default)]
pub struct Hosts {
    /// Two thirds full at most (so a probe always ends at an empty one), probed linearly from the bucket the
    /// hash's top half maps to.
    buckets: Box<[Bucket]>,
    /// Names longer than `INLINE`.
    long: FxMap<Box<[u8]>, u32>,
    len: usize,
}

#[inline]
fn hash(name: &[u8]) -> u64 {
    let mut h = crate::fxhash::FxHasher::default();
    h.write(name);
    h.finish()
}

impl Hosts {
    /// Builds the map from (host, slot) pairs whose hosts are already in normal form (the index checks it, and
    /// that no two sites share a host; a name given twice keeps its last slot).
    pub fn build<'a>(pairs: impl Iterator<Item = (&'a Arc<str>, u32)>) -> Hosts {
        let pairs: Vec<_> = pairs.collect();
        let short = pairs.iter().filter(|(h, _)| h.len() <= INLINE).count();
        let size = if short == 0 { 0 } else { short + short / 2 + 1 };
        let mut hosts = Hosts { buckets: vec![EMPTY; size].into_boxed_slice(), long: FxMap::default(), len: 0 };
        for (h, slot) in pairs {
            let name = h.as_bytes();
            if name.len() > INLINE {
                hosts.long.insert(name.into(), slot);
                continue;
            }
            // Its own bucket again (a name given twice), else the empty one its probe ended at.
            let (Ok(i) | Err(i)) = hosts.probe(name);
            let tag = hosts.start(name).0;
            let b = &mut hosts.buckets[i];
            (b.tag, b.slot, b.len) = (tag, slot, name.len() as u8);
            b.name[..name.len()].copy_from_slice(name);
        }
        hosts.len = hosts.buckets.iter().filter(|b| b.tag != 0).count() + hosts.long.len();
        hosts
    }

    /// The tag and first bucket of `name` (the table is not empty).
    #[inline]
    fn start(&self, name: &[u8]) -> (u32, usize) {
        let h = hash(name);
        // The top half chooses the bucket (FxHash's last multiply mixes it best), scaled onto the table by a
        // multiply and a shift (no division, any size); the low half is the tag.
        let i = ((h >> 32) * self.buckets.len() as u64) >> 32;
        ((h as u32) | 1, i as usize)
    }

    /// The bucket holding `name` (a short one; the table is not empty), or the empty bucket that ends its probe.
    #[inline]
    fn probe(&self, name: &[u8]) -> Result<usize, usize> {
        let (tag, mut i) = self.start(name);
        loop {
            let b = &self.buckets[i];
            if b.tag == 0 {
                return Err(i);
            }
            if b.tag == tag && &b.name[..b.len as usize] == name {
                return Ok(i);
            }
            i = if i + 1 == self.buckets.len() { 0 } else { i + 1 };
        }
    }

    /// The slot of the site `raw` names (a Host value as sent), None for an unknown, missing or malformed host.
    #[inline]
    pub fn find(&self, raw: Option<&[u8]>) -> Option<u32> {
        let mut buf = [0u8; MAX_HOST];
        let n = normalize(raw?, &mut buf)?;
        let name = &buf[..n];
        if n > INLINE {
            return self.long.get(name).copied();
        }
        if self.buckets.is_empty() {
            return None;
        }
        self.probe(name).ok().map(|i| self.buckets[i].slot)
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// Writes the normal form of `raw` into `buf` and returns its length: the port (`:8080`, and the brackets of an
/// IPv6 literal's port) and one trailing dot removed, ASCII lowercased. None when nothing is left or it is longer
/// than `buf`.
#[inline]
pub fn normalize(raw: &[u8], buf: &mut [u8; MAX_HOST]) -> Option<usize> {
    let mut h = raw;
    if h.first() == Some(&b'[') {
        // An IPv6 literal: `[::1]:8080` → `[::1]`.
        let end = h.iter().position(|&b| b == b']')?;
        h = &h[..=end];
    } else if let Some(colon) = h.iter().rposition(|&b| b == b':') {
        h = &h[..colon];
    }
    if let [rest @ .., b'.'] = h {
        h = rest;
    }
    if h.is_empty() || h.len() > MAX_HOST {
        return None;
    }
    for (d, s) in buf.iter_mut().zip(h) {
        *d = s.to_ascii_lowercase();
    }
    Some(h.len())
}

/// Whether `h` is already in normal form (what the index must hold): non-empty, lowercase, no port, no trailing
/// dot, at most MAX_HOST bytes of visible ASCII.
pub fn is_normal(h: &str) -> bool {
    let mut buf = [0u8; MAX_HOST];
    h.bytes().all(|b| b.is_ascii_graphic())
        && normalize(h.as_bytes(), &mut buf).is_some_and(|n| &buf[..n] == h.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn norm(s: &str) -> Option<String> {
        let mut b = [0u8; MAX_HOST];
        normalize(s.as_bytes(), &mut b).map(|n| String::from_utf8(b[..n].to_vec()).unwrap())
    }

    #[test]
    fn the_normal_form_drops_port_and_dot_and_case() {
        assert_eq!(norm("Docs.Example.COM").as_deref(), Some("docs.example.com"));
        assert_eq!(norm("docs.example.com:8080").as_deref(), Some("docs.example.com"));
        assert_eq!(norm("docs.example.com.").as_deref(), Some("docs.example.com"));
        assert_eq!(norm("docs.example.com.:443").as_deref(), Some("docs.example.com"));
        assert_eq!(norm("[::1]:8080").as_deref(), Some("[::1]"));
        assert_eq!(norm(":80"), None);
        assert_eq!(norm(""), None);
        assert_eq!(norm(&"a".repeat(254)), None);
        assert!(is_normal("docs.team-a.svc"));
        assert!(!is_normal("Docs.example.com") && !is_normal("a:80") && !is_normal("a.") && !is_normal("a b"));
    }

    #[test]
    fn lookups_find_the_slot_of_any_spelling() {
        let (a, b): (Arc<str>, Arc<str>) = ("a.example".into(), "b.example".into());
        let h = Hosts::build([(&a, 0), (&b, 1)].into_iter());
        assert_eq!(h.find(Some(b"A.Example:80")), Some(0));
        assert_eq!(h.find(Some(b"b.example.")), Some(1));
        assert_eq!(h.find(Some(b"c.example")), None);
        assert_eq!(h.find(None), None);
    }

    #[test]
    fn many_names_short_and_long_each_find_their_own_slot() {
        // Long names (past a bucket's room) beside short ones, enough of them to fill the table to its bound and
        // make probes run across collisions and the table's end.
        let names: Vec<Arc<str>> = (0..5000)
            .map(|i| match i % 3 {
                0 => format!("s{i:05}.bench.test"),
                1 => format!("s{i:05}.tenant-with-a-long-namespace-name.svc.cluster.local"),
                _ => format!("{}.example", "x".repeat(40 + i % 30)) + &format!(".{i}"),
            })
            .map(Into::into)
            .collect();
        let h = Hosts::build(names.iter().enumerate().map(|(i, n)| (n, i as u32)));
        assert_eq!(h.len(), names.len());
        let slot_of: std::collections::HashMap<&str, u32> =
            names.iter().enumerate().map(|(i, n)| (&**n, i as u32)).collect();
        for (i, n) in names.iter().enumerate() {
            assert_eq!(h.find(Some(n.as_bytes())), Some(i as u32), "{n}");
            assert_eq!(h.find(Some(n.to_uppercase().as_bytes())), Some(i as u32), "{n}");
            // A name one byte shorter, or with one more, is another name: its own site's, or none.
            let shorter = &n[..n.len() - 1];
            assert_eq!(h.find(Some(shorter.as_bytes())), slot_of.get(shorter).copied(), "{shorter}");
            let longer = format!("{n}x");
            assert_eq!(h.find(Some(longer.as_bytes())), slot_of.get(&*longer).copied(), "{longer}");
        }
        assert_eq!(h.find(Some(b"nobody.example")), None);
        assert_eq!(Hosts::build(std::iter::empty()).find(Some(b"a")), None);
        // A name given twice keeps its last slot and counts once.
        let a: Arc<str> = "a.example".into();
        let twice = Hosts::build([(&a, 1), (&a, 2)].into_iter());
        assert_eq!((twice.find(Some(b"a.example")), twice.len()), (Some(2), 1));
    }
}
