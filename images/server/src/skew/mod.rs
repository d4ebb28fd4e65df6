//! Skew protection (docs/design/deploys.md, decision 3): for a window after a deploy, a request the current tree
//! has no file for may be answered from the previous deploys' trees, which Git content's puller keeps beside the
//! served one (`DIR/<commit>/`) and lists in `DIR/deploys.json` (deploys.rs, the puller's side is
//! internal/contentagent/deploysfile.go). This module holds what a load makes of that file — the previous trees
//! as open directories, each with the end of its window — and nothing of the request side: the core's not-found
//! path (answer/stale.rs) opens a file beneath one of these directories per request, so no table is built for
//! a previous tree and its files are never read into memory.
//!
//! `load` runs with the content load (attach.rs, from control.rs for the single site and from pool/registry.rs for
//! each entry of the many-sites mode), so the list changes with the tree (the puller writes the file before it
//! flips `DIR/current`) and with the site value's window. Imports nothing of site/: the content table
//! holds a `Previous` (site/content.rs).

pub mod attach;
pub mod deploys;

use std::fs::File;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// The file the puller writes beside `current`.
pub const FILE: &str = "deploys.json";

/// The longest window a site may set: 7 days (the CRD's maximum too).
pub const MAX_WINDOW_S: u64 = 7 * 24 * 3600;

/// `Cache-Control` of an answer from a previous deploy: a browser may keep it a minute, a shared cache never
/// (it must not be stored as the current deploy's answer for that path).
pub const CACHE_CONTROL: &str = "private, max-age=60";

/// The previous trees a load found, newest first (by the time they stopped being served).
#[derive(Debug, Default)]
pub struct Previous {
    pub trees: Vec<Tree>,
}

/// One previous deploy's tree.
#[derive(Debug)]
pub struct Tree {
    /// Its commit (lower-case hex): the `X-Hyperstatic-Deploy` value.
    pub commit: Box<str>,
    /// The tree's directory, opened `O_PATH` without following a symlink: files are opened beneath it.
    pub root: File,
    /// Unix seconds after which it answers nothing: when it stopped being served plus the window.
    pub until: i64,
}

/// What a load of `root` (the server's `--root`) finds for a window of `window_s` seconds: None when the root is
/// not a Store's `DIR/current` link or there is no `DIR/deploys.json` (content not from Git); an error names the
/// file and what is wrong with it, and the caller serves without skew protection. Trees whose window has ended at
/// `now` (Unix seconds), the current one, and trees no longer on disk are left out.
pub fn load(root: &Path, window_s: u64, now: i64) -> Result<Option<Previous>, String> {
    let is_link = std::fs::symlink_metadata(root).is_ok_and(|m| m.file_type().is_symlink());
    let (true, Some(dir)) = (is_link, root.parent()) else { return Ok(None) };
    let current = std::fs::read_link(root).ok();
    let path = dir.join(FILE);
    let at = |e: String| format!("{}: {e}", path.display());
    let bytes = match read_bounded(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(at(e.to_string())),
    };
    let list = deploys::parse(&bytes).map_err(at)?;
    let mut trees = Vec::new();
    for d in list {
        let Some(ended) = d.served_until else { continue };
        let until = ended.saturating_add(window_s as i64);
        if until < now || current.as_deref().is_some_and(|c| c.as_os_str() == d.tree.as_str()) {
            continue;
        }
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)
            .open(dir.join(&d.tree));
        if let Ok(root) = opened {
            trees.push((ended, Tree { commit: d.commit.into(), root, until }));
        }
    }
    trees.sort_by_key(|t| std::cmp::Reverse(t.0));
    Ok(Some(Previous { trees: trees.into_iter().map(|(_, t)| t).collect() }))
}

/// The file's bytes, refused over deploys::MAX_BYTES before more is read.
fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut bytes = Vec::new();
    File::open(path)?.take(deploys::MAX_BYTES as u64 + 1).read_to_end(&mut bytes)?;
    if bytes.len() > deploys::MAX_BYTES {
        return Err(std::io::Error::other(format!("larger than {} bytes", deploys::MAX_BYTES)));
    }
    Ok(bytes)
}

/// Now in Unix seconds (the clock of the windows).
pub fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs() as i64)
}
