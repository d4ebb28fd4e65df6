//! Host selection: the name a request asked for (HTTP/1.1 `Host`, HTTP/2 `:authority` else `host`) in its
//! normal form — lowercase, without a port, without a trailing dot — looked up in the index's host map. The map
//! is immutable once built (the registry builds a new one when the index changes) and keyed by the normal form,
//! so a lookup normalises into a stack buffer and hashes those bytes: no String, no allocation, no lock.

use crate::fxhash::FxMap;

/// The longest host name looked up (a DNS name is at most 253 characters; a longer one names no site).
pub const MAX_HOST: usize = 253;

/// Every host of the index → the site's slot in the snapshot.
#[derive(Default)]
pub struct Hosts {
    map: FxMap<Box<[u8]>, u32>,
}

impl Hosts {
    /// Builds the map from (host, slot) pairs whose hosts are already in normal form (the index checks it).
    pub fn build<'a>(pairs: impl Iterator<Item = (&'a str, u32)>) -> Hosts {
        let mut map = FxMap::default();
        for (h, slot) in pairs {
            map.insert(Box::from(h.as_bytes()), slot);
        }
        Hosts { map }
    }

    /// The slot of the site `raw` names (a Host value as sent), None for an unknown, missing or malformed host.
    #[inline]
    pub fn find(&self, raw: Option<&[u8]>) -> Option<u32> {
        let mut buf = [0u8; MAX_HOST];
        let n = normalize(raw?, &mut buf)?;
        self.map.get(&buf[..n]).copied()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
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
        let h = Hosts::build([("a.example", 0), ("b.example", 1)].into_iter());
        assert_eq!(h.find(Some(b"A.Example:80")), Some(0));
        assert_eq!(h.find(Some(b"b.example.")), Some(1));
        assert_eq!(h.find(Some(b"c.example")), None);
        assert_eq!(h.find(None), None);
    }
}
