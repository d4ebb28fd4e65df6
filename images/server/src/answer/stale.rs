//! Skew protection's answer (docs/design/deploys.md, decision 3): on the not-found path only, a GET or HEAD that
//! is not a page navigation and does not ask for HTML is looked up in the previous deploys' trees (skew/) whose
//! window has not ended, newest first. A page loaded before a deploy then still gets the assets it names
//! (`/assets/app.3f2a9c.js`, which the new deploy no longer has); a navigation, or an HTML path, never gets a
//! stale page: the visitor always lands on the current deploy.
//!
//! The file is opened beneath the tree's directory one component at a time without following a symlink (as
//! site/beneath.rs does for the loader and a pool's disk-served files), from the normalised path, with no
//! allocation: here to decide 200 or 404, and again by the protocol when it frames the body (`Found::open`, which
//! serves it only if it is still the file seen here, as a pool's `DiskPath` does). Nothing of a previous tree is
//! loaded or kept open but its directory. A hit on the current tree never comes here.

use std::fs::File;
use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::fs::MetadataExt;

use crate::skew::{Previous, Tree};
use crate::sys::fs::openat_name;

/// A previous deploy's file found for a request.
#[derive(Clone, Copy)]
pub struct Found<'a> {
    pub tree: &'a Tree,
    /// The normalised path without its leading `/`.
    pub rel: &'a [u8],
    pub len: u64,
    ino: u64,
    mtime: (i64, i64),
    /// The media type by extension, and whether it is text (`; charset=utf-8`), as the loader types files.
    pub mime: &'static str,
    pub text: bool,
}

impl Found<'_> {
    /// Opens the file again for its body: None when it is gone or no longer the file found (the answer is then
    /// 503 with `Retry-After: 1`, as for a pool's changed file).
    pub fn open(&self) -> Option<File> {
        let (f, m) = open(self.tree, self.rel)?;
        (m.len() == self.len && m.ino() == self.ino && (m.mtime(), m.mtime_nsec()) == self.mtime).then_some(f)
    }
}

/// Whether a request may be answered from a previous deploy: not a navigation (`Sec-Fetch-Dest` of a document or
/// frame, or an `Accept` whose first media range is HTML: rules/navigation.rs) and not an HTML path. The path is
/// normalised (starts with `/`).
pub fn eligible(path: &[u8], accept: Option<&[u8]>, sec_fetch_dest: Option<&[u8]>) -> bool {
    let last = path.rsplit(|&b| b == b'/').next().unwrap_or(path);
    let ext = last.rsplit(|&b| b == b'.').next().filter(|_| last.contains(&b'.')).unwrap_or(b"");
    let html = [&b"html"[..], b"htm", b"xhtml"].iter().any(|e| ext.eq_ignore_ascii_case(e));
    let document = sec_fetch_dest.is_some_and(|d| {
        let d = d.trim_ascii();
        [&b"document"[..], b"iframe", b"frame"].iter().any(|n| d.eq_ignore_ascii_case(n))
    });
    // An extension-less path with no Accept is not a navigation here (rules/navigation.rs would call it one): the
    // brief of skew protection is the two signals above and the HTML extension.
    let prefers_html = crate::rules::prefers_html(accept);
    !(html || document || prefers_html || last.is_empty())
}

/// The newest previous tree, with its window still open at `now` (Unix seconds), that has `path` (normalised) as a
/// regular file. Names the loader never serves as files (`/_headers`, `/_redirects`) and dot-names are never
/// looked up.
pub fn find<'a>(prev: &'a Previous, path: &'a [u8], now: i64) -> Option<Found<'a>> {
    let rel = path.strip_prefix(b"/")?;
    let plain = |c: &[u8]| !c.is_empty() && c[0] != b'.' && c.len() < 256 && !c.contains(&0);
    if !rel.split(|&b| b == b'/').all(plain) || rel == b"_headers" || rel == b"_redirects" {
        return None;
    }
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    let ext = name.rsplit(|&b| b == b'.').next().filter(|_| name.contains(&b'.')).unwrap_or(b"");
    for tree in prev.trees.iter().filter(|t| now <= t.until) {
        if let Some((_, m)) = open(tree, rel) {
            let (mime, text) = crate::site::mime::essence(std::str::from_utf8(ext).unwrap_or(""));
            let mtime = (m.mtime(), m.mtime_nsec());
            return Some(Found { tree, rel, len: m.len(), ino: m.ino(), mtime, mime, text });
        }
    }
    None
}

/// Opens `rel` (plain components) beneath `tree`'s directory: directories `O_PATH | O_NOFOLLOW`, the file
/// `O_RDONLY | O_NOFOLLOW | O_NONBLOCK` (a FIFO must not block a worker), and only a regular file is kept.
fn open(tree: &Tree, rel: &[u8]) -> Option<(File, std::fs::Metadata)> {
    let mut parts = rel.split(|&b| b == b'/');
    let mut name = parts.next()?;
    let mut dir: Option<OwnedFd> = None;
    for next in parts {
        let at = dir.as_ref().map_or(tree.root.as_raw_fd(), AsRawFd::as_raw_fd);
        dir = Some(openat_name(at, name, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW).ok()?);
        name = next;
    }
    let at = dir.as_ref().map_or(tree.root.as_raw_fd(), AsRawFd::as_raw_fd);
    let f = File::from(openat_name(at, name, libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK).ok()?);
    let m = f.metadata().ok()?;
    m.is_file().then_some((f, m))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn navigations_and_html_are_never_stale() {
        assert!(eligible(b"/assets/app.3f2a.js", None, None));
        assert!(eligible(b"/assets/app.3f2a.js", Some(b"*/*"), Some(b"script")));
        assert!(eligible(b"/data", Some(b"application/json"), Some(b"empty")));
        assert!(!eligible(b"/assets/app.js", None, Some(b"document")));
        assert!(!eligible(b"/assets/app.js", None, Some(b" IFrame ")));
        assert!(!eligible(b"/x.png", Some(b"text/html,application/xhtml+xml,*/*;q=0.8"), None));
        assert!(!eligible(b"/old/page.html", None, None));
        assert!(!eligible(b"/old/page.HTM", Some(b"*/*"), None));
        assert!(!eligible(b"/docs/", None, None), "a directory's index is a page");
    }

    #[test]
    fn finds_plain_files_of_open_windows_only() {
        let d = std::env::temp_dir().join(format!("hs-stale-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        for (t, files) in [("old", &["a/app.js", "both.css"][..]), ("older", &["both.css", "gone.js"][..])] {
            for f in files {
                let p = d.join(t).join(f);
                std::fs::create_dir_all(p.parent().unwrap()).unwrap();
                std::fs::write(&p, format!("{t} {f}")).unwrap();
            }
        }
        std::fs::write(d.join("secret"), "outside").unwrap();
        std::os::unix::fs::symlink(d.join("secret"), d.join("old/link.js")).unwrap();
        std::os::unix::fs::symlink(&d, d.join("old/up")).unwrap();
        let tree = |name: &str, until: i64| Tree {
            commit: name.into(),
            root: std::fs::OpenOptions::new()
                .read(true)
                .custom_flags(libc::O_PATH | libc::O_DIRECTORY)
                .open(d.join(name))
                .unwrap(),
            until,
        };
        use std::os::unix::fs::OpenOptionsExt;
        let prev = Previous { trees: vec![tree("old", 100), tree("older", 50)] };
        let commit = |p: &'static [u8], now| find(&prev, p, now).map(|f| (&*f.tree.commit, f.len, f.mime));
        assert_eq!(commit(b"/a/app.js", 100), Some(("old", 12, "text/javascript")));
        assert_eq!(commit(b"/both.css", 10), Some(("old", 12, "text/css")), "the newest tree first");
        assert_eq!(commit(b"/gone.js", 50), Some(("older", 13, "text/javascript")));
        assert_eq!(commit(b"/gone.js", 51), None, "past its window");
        assert_eq!(commit(b"/a/app.js", 101), None);
        for p in [&b"/link.js"[..], b"/up/secret", b"/a", b"/a/", b"/a//app.js", b"/.x", b"/nothing.js"] {
            assert!(find(&prev, p, 0).is_none(), "{}", String::from_utf8_lossy(p));
        }
        let f = find(&prev, b"/a/app.js", 0).unwrap();
        let mut s = String::new();
        std::io::Read::read_to_string(&mut f.open().unwrap(), &mut s).unwrap();
        assert_eq!(s, "old a/app.js");
        std::fs::write(d.join("old/a/app.js"), "changed since").unwrap();
        assert!(f.open().is_none(), "a file changed since it was found is not served");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
