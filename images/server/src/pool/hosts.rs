//! Host selection: the name a request asked for (HTTP/1.1 `Host`, HTTP/2 `:authority` else `host`) in its
//! normal form — lowercase, without a port, without a trailing dot — looked up in the index's host map. The map
//! is immutable once built (the registry builds a new one when the index changes) and keyed by the normal form,
//! so a lookup normalises into a stack buffer and hashes those bytes: no String, no allocation, no lock.
//!
//! The map is a `LineMap` (linemap.rs): one cache line per name, the name inside it, because a pool's hot sites
//! are spread over far more memory than the CPU's caches hold and a lookup's cost is the lines it touches.

use std::sync::Arc;

use crate::linemap::LineMap;

/// The longest host name looked up (a DNS name is at most 253 characters; a longer one names no site).
pub const MAX_HOST: usize = 253;

/// Every host of the index → the site's slot in the snapshot.
#[derive(Default)]
pub struct Hosts(LineMap);

impl Hosts {
    /// Builds the map from (host, slot) pairs whose hosts are already in normal form (the index checks it, and
    /// that no two sites share a host; a name given twice keeps its last slot).
    pub fn build<'a>(pairs: impl Iterator<Item = (&'a Arc<str>, u32)>) -> Hosts {
        Hosts(LineMap::build(pairs.map(|(h, slot)| (h.as_bytes(), slot))))
    }

    /// The slot of the site `raw` names (a Host value as sent), None for an unknown, missing or malformed host.
    #[inline]
    pub fn find(&self, raw: Option<&[u8]>) -> Option<u32> {
        let mut buf = [0u8; MAX_HOST];
        let n = normalize(raw?, &mut buf)?;
        self.0.get(&buf[..n])
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
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
