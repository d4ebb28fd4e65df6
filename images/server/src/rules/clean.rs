//! Clean URLs (`--clean-urls`), added to the content table's map at load so serving them costs nothing per
//! request. The trailing-slash policy, one canonical URL per page, the others 301 to it:
//!
//! - a directory with an index is canonical at `/dir/` (`/dir` → 301 `/dir/`, as without clean URLs), and
//!   `/dir/index.html` → 301 `/dir/`;
//! - `about.html` with no `about` file or directory is canonical at `/about`: `/about` serves it,
//!   `/about.html` → 301 `/about`, `/about/` → 301 `/about`;
//! - `about.html` beside an `about/` directory stays at `/about.html` (`/about` belongs to the directory).

use crate::site::content::{Table, Target};

/// The Location of a canonical URL: a file name's bytes outside the safe set (target.rs) percent-encoded.
fn location(path: &str) -> Box<[u8]> {
    let mut out = Vec::with_capacity(path.len());
    for &b in path.as_bytes() {
        if super::target::keep(b) {
            out.push(b);
        } else {
            out.extend_from_slice(format!("%{b:02X}").as_bytes());
        }
    }
    out.into()
}

pub fn apply(t: &mut Table) {
    let mut moved: Vec<(Box<[u8]>, u32)> = Vec::new();
    let mut served: Vec<(Box<[u8]>, u32)> = Vec::new();
    for (i, e) in t.entries.iter().enumerate() {
        let Some(stem) = e.path.strip_suffix(".html") else { continue };
        if let Some(dir) = stem.strip_suffix("/index") {
            // `/dir/index.html` → `/dir/` (the root's `/index.html` → `/`), when that is where it is served.
            let canonical = format!("{dir}/");
            if t.lookup(canonical.as_bytes()) == Some(Target::File(i as u32)) {
                moved.push((e.path.as_bytes().into(), t.rules.moved.len() as u32));
                t.rules.moved.push((location(&canonical), i as u32));
            }
            continue;
        }
        if stem.is_empty() || t.lookup(stem.as_bytes()).is_some() {
            continue;
        }
        let k = t.rules.moved.len() as u32;
        t.rules.moved.push((location(stem), i as u32));
        served.push((stem.as_bytes().into(), i as u32));
        moved.push((e.path.as_bytes().into(), k));
        let slash = format!("{stem}/");
        if t.lookup(slash.as_bytes()).is_none() {
            moved.push((slash.into_bytes().into(), k));
        }
    }
    let served = served.iter().map(|(p, i)| (&**p, Target::File(*i)));
    let moved = moved.iter().map(|(p, k)| (&**p, Target::Moved(*k)));
    t.map = t.map.rebuilt_with(served.chain(moved));
}
