//! The content table's path map: normalised URL path → what it serves (`Target`). A `LineMap` (linemap.rs), so a
//! lookup touches one cache line, the path inside it: in a pool most tables are cold in the CPU's caches, and the
//! general hash map this replaced cost three misses a request (its control bytes, its bucket, the key it pointed
//! to; docs/bench/pools-route-2026-12-04.md). Built once from every path of a load (loader.rs), rebuilt whole when
//! the clean-URL rules add theirs (rules/clean.rs); shared by the copies of the table the encoder publishes.

use crate::linemap::LineMap;

/// What a path in the table serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Target {
    File(u32),
    /// A directory named without its trailing slash: 301 to the slash form.
    Redirect,
    /// A clean URL's other forms (rules/clean.rs): 301 to `rules.moved[k]`.
    Moved(u32),
}

/// A `Target` in the map's `u32`: the kind in the top two bits, the file or redirect index below.
const KIND: u32 = 0b11 << 30;
const REDIRECT: u32 = 1 << 30;
const MOVED: u32 = 2 << 30;

fn encode(t: Target) -> u32 {
    let (kind, i) = match t {
        Target::File(i) => (0, i),
        Target::Redirect => (REDIRECT, 0),
        Target::Moved(k) => (MOVED, k),
    };
    // A table of 2^30 files would hold 100 GB of entries before its content: not a limit anyone meets.
    assert!(i & KIND == 0, "a table index past 2^30");
    kind | i
}

#[inline]
fn decode(v: u32) -> Target {
    match v & KIND {
        0 => Target::File(v),
        REDIRECT => Target::Redirect,
        _ => Target::Moved(v & !KIND),
    }
}

#[derive(Clone, Default)]
pub struct PathMap(LineMap);

impl PathMap {
    /// The map of `pairs`; a path given twice keeps its last target.
    pub fn build<'a>(pairs: impl IntoIterator<Item = (&'a [u8], Target)>) -> PathMap {
        PathMap(LineMap::build(pairs.into_iter().map(|(p, t)| (p, encode(t)))))
    }

    /// This map with `more` added (a path already here takes its new target).
    pub fn rebuilt_with<'a>(&'a self, more: impl IntoIterator<Item = (&'a [u8], Target)>) -> PathMap {
        PathMap(self.0.rebuilt_with(more.into_iter().map(|(p, t)| (p, encode(t)))))
    }

    #[inline]
    pub fn get(&self, path: &[u8]) -> Option<Target> {
        self.0.get(path).map(decode)
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_of_target_comes_back_as_it_went_in() {
        let long = format!("/{}", "d".repeat(80));
        let m = PathMap::build([
            (&b"/"[..], Target::File(0)),
            (b"/index.html", Target::File(0)),
            (b"/big", Target::File((1 << 30) - 1)),
            (b"/docs", Target::Redirect),
            (b"/about.html", Target::Moved(7)),
            (long.as_bytes(), Target::Moved((1 << 30) - 1)),
        ]);
        assert_eq!(m.get(b"/"), Some(Target::File(0)));
        assert_eq!(m.get(b"/index.html"), Some(Target::File(0)));
        assert_eq!(m.get(b"/big"), Some(Target::File((1 << 30) - 1)));
        assert_eq!(m.get(b"/docs"), Some(Target::Redirect));
        assert_eq!(m.get(b"/about.html"), Some(Target::Moved(7)));
        assert_eq!(m.get(long.as_bytes()), Some(Target::Moved((1 << 30) - 1)));
        assert_eq!(m.get(b"/nope"), None);
        let n = m.rebuilt_with([(&b"/about"[..], Target::File(3)), (b"/docs", Target::File(4))]);
        assert_eq!((n.get(b"/about"), n.get(b"/docs"), n.len()), (Some(Target::File(3)), Some(Target::File(4)), 7));
    }
}
