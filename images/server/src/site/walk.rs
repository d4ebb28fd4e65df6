//! Walking the site root: every file a load serves (following symlinks that stay inside the root, skipping names
//! that could carry a line break into a header), with what the loader needs to open it again safely.

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use super::report::Report;

pub(crate) struct Found {
    pub url: String,
    pub fs_path: PathBuf,
    pub len: u64,
    pub mtime: i64,
    /// The canonical site root and the file's resolved path below it (no symlinks, no `..`) as the walk checked
    /// it: the file is opened through these (`open`), never through `fs_path` again.
    pub root: Arc<PathBuf>,
    pub rel: PathBuf,
    /// What the walk's stat saw: a pool's quick load serves the file from disk by its path and this metadata
    /// without opening it (loader.rs `load_one`; each response opens it beneath the root and checks it).
    pub meta: fs::Metadata,
}

impl Found {
    /// Opens the file the walk checked, without following any symlink swapped in since (beneath.rs).
    pub fn open(&self) -> Result<File, String> {
        crate::site::beneath::open_file(&self.root, &self.rel).map_err(|e| format!("{}: {e}", self.fs_path.display()))
    }

    pub fn read(&self) -> Result<Vec<u8>, String> {
        let mut data = Vec::with_capacity(self.len as usize);
        self.open()?.read_to_end(&mut data).map_err(|e| format!("{}: {e}", self.fs_path.display()))?;
        Ok(data)
    }
}

/// A name that could carry a header or a line break into a response (`_headers` placeholders put file names in
/// header values, `/content` lists one name per line): any control character, C0, DEL or C1.
pub(crate) fn unsafe_name(name: &str) -> bool {
    name.chars().any(char::is_control)
}

/// How big a tree the walk takes (issue 38: a tree of a million empty files or directories costs no content
/// bytes, so the byte budgets never stop it). Over either cap the load fails, naming the cap and the path: at
/// start the server exits, on a reload the previous content keeps serving, `--check` fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Caps {
    /// `--max-entries`: directory entries read in the whole walk, of every kind (files, directories, links,
    /// names that are skipped), counted as they are read, so one huge directory is refused before it is held.
    pub max_entries: usize,
    /// `--max-depth`: directories below the root (a file in `/a/b/` is at depth 2).
    pub max_depth: usize,
}

pub const DEFAULT_CAPS: Caps = Caps { max_entries: 100_000, max_depth: 64 };

/// Walks `root`, calling `on_dir` for each directory before it is read (the reload watcher uses it to add
/// inotify watches without a race).
pub(crate) fn walk(
    root: &Path,
    caps: Caps,
    on_dir: &mut dyn FnMut(&Path),
    report: &mut Report,
) -> Result<(Vec<Found>, Vec<String>), String> {
    let canon_root = fs::canonicalize(root).map_err(|e| format!("site root {}: {e}", root.display()))?;
    if !canon_root.is_dir() {
        return Err(format!("site root {} is not a directory", root.display()));
    }
    let shared_root = Arc::new(canon_root.clone());
    let mut files = Vec::new();
    let mut dirs = Vec::new();
    let mut seen = HashSet::new();
    // The walk starts at the resolved root, not at `root`: when `root` is a symlink that is replaced while the
    // walk runs (Git content's `DIR/current`), one load still reads one tree, all of it beneath `canon_root`.
    // Each directory with its canonical path: a name in it that is not a symlink resolves to that path and the
    // name, with no further lookup (resolving every file's whole path again, as `canonicalize` does, cost a
    // syscall per component per file: most of a pool site's quick load).
    let mut stack = vec![(canon_root.clone(), canon_root.clone(), String::new(), 0usize)];
    let mut entries = 0usize;
    seen.insert(canon_root.clone());
    while let Some((dir, canon_dir, url, depth)) = stack.pop() {
        on_dir(&dir);
        let rd = match fs::read_dir(&dir) {
            Ok(rd) => rd,
            Err(e) => {
                if url.is_empty() {
                    return Err(format!("site root {}: {e}", root.display()));
                }
                report.errors.push(format!("{}: unreadable directory: {e}", dir.display()));
                report.unreadable += 1;
                continue;
            }
        };
        dirs.push(url.clone());
        let mut names = Vec::new();
        for e in rd.filter_map(|e| e.ok()) {
            entries += 1;
            if entries > caps.max_entries {
                return Err(format!(
                    "site root {}: more than {} entries (--max-entries), the last read in {}",
                    root.display(),
                    caps.max_entries,
                    dir.display()
                ));
            }
            names.push((e.file_name(), e));
        }
        names.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, dirent) in names {
            let name_str = match name.to_str() {
                Some(s) => s.to_string(),
                None => {
                    report.errors.push(format!("{}: file name is not UTF-8", dir.join(&name).display()));
                    continue;
                }
            };
            // Kubernetes volume internals (`..data`, `..2024_...`) are never served.
            if name_str.starts_with("..") || name_str.contains('\\') {
                continue;
            }
            // Skipped (with a load warning), never escaped: such a name has no honest URL, and escaping would have
            // to hold in every place a name reaches (headers, /content, logs).
            if unsafe_name(&name_str) {
                report.errors.push(format!(
                    "{}: file name has a control character; not served",
                    dir.join(&name).display().to_string().escape_debug()
                ));
                continue;
            }
            let path = dir.join(&name);
            let child_url = format!("{url}/{name_str}");
            // Not a symlink (its directory entry's type, then an lstat relative to the directory read): it is the
            // canonical directory's child. The loader opens it beneath the root without following any symlink
            // (beneath.rs), so a name swapped for a symlink since is refused there, not followed.
            let plain = dirent
                .file_type()
                .ok()
                .filter(|t| !t.is_symlink())
                .and_then(|_| dirent.metadata().ok())
                .filter(|m| !m.file_type().is_symlink());
            let (canon, meta) = match plain {
                Some(m) => (canon_dir.join(&name), m),
                None => {
                    let canon = match fs::canonicalize(&path) {
                        Ok(c) => c,
                        Err(e) => {
                            report.errors.push(format!("{}: {e}", path.display()));
                            report.unreadable += 1;
                            continue;
                        }
                    };
                    if !canon.starts_with(&canon_root) {
                        report.errors.push(format!(
                            "{}: symlink escapes the site root (to {})",
                            path.display(),
                            canon.display()
                        ));
                        continue;
                    }
                    match fs::metadata(&canon) {
                        Ok(m) => (canon, m),
                        Err(e) => {
                            report.errors.push(format!("{}: {e}", path.display()));
                            report.unreadable += 1;
                            continue;
                        }
                    }
                }
            };
            if meta.is_dir() {
                // A directory seen before (a link back up) is skipped, not measured.
                if seen.insert(canon.clone()) {
                    if depth + 1 > caps.max_depth {
                        return Err(format!(
                            "site root {}: {} is deeper than {} directories (--max-depth)",
                            root.display(),
                            path.display(),
                            caps.max_depth
                        ));
                    }
                    stack.push((path, canon, child_url, depth + 1));
                }
            } else if meta.is_file() {
                let mtime = meta
                    .modified()
                    .ok()
                    .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
                    .map_or(0, |d| d.as_secs() as i64);
                let rel = canon.strip_prefix(&canon_root).expect("checked above").to_path_buf();
                files.push(Found {
                    url: child_url,
                    fs_path: path,
                    len: meta.len(),
                    mtime,
                    root: shared_root.clone(),
                    rel,
                    meta,
                });
            }
        }
    }
    files.sort_by(|a, b| a.url.cmp(&b.url));
    Ok((files, dirs))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// The root link is replaced as the walk starts (on_dir runs before each directory is read): the walk still
    /// reads the tree the root resolved to, whole, and nothing of the new one.
    #[test]
    fn a_root_link_replaced_during_the_walk_yields_one_tree() {
        let dir = std::env::temp_dir().join(format!("hs-walk-flip-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        for t in ["a", "b"] {
            std::fs::create_dir_all(dir.join(t).join("sub")).unwrap();
            std::fs::write(dir.join(t).join("index.html"), t).unwrap();
            std::fs::write(dir.join(t).join(format!("sub/only-{t}.html")), t).unwrap();
        }
        symlink("a", dir.join("current")).unwrap();
        let mut flipped = false;
        let mut report = Report::default();
        let (files, _) = walk(
            &dir.join("current"),
            DEFAULT_CAPS,
            &mut |_| {
                if !flipped {
                    flipped = true;
                    symlink("b", dir.join("next")).unwrap();
                    std::fs::rename(dir.join("next"), dir.join("current")).unwrap();
                }
            },
            &mut report,
        )
        .unwrap();
        let urls: Vec<&str> = files.iter().map(|f| f.url.as_str()).collect();
        assert_eq!(urls, ["/index.html", "/sub/only-a.html"]);
        assert!(report.errors.is_empty(), "{:?}", report.errors);
        assert_eq!(files[0].read().unwrap(), b"a");
        let _ = std::fs::remove_dir_all(&dir);
    }

    fn tree(name: &str) -> std::path::PathBuf {
        let dir = std::env::temp_dir().join(format!("hs-walk-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::canonicalize(dir).unwrap()
    }

    fn walk_with(root: &Path, max_entries: usize, max_depth: usize) -> Result<usize, String> {
        walk(root, Caps { max_entries, max_depth }, &mut |_| {}, &mut Report::default()).map(|(f, _)| f.len())
    }

    #[test]
    fn entries_of_every_kind_count_against_the_cap() {
        // 3 directories, 3 empty files in each, a link: 13 entries, 9 files.
        let root = tree("entries");
        for d in ["a", "b", "c"] {
            for f in ["1", "2", "3"] {
                std::fs::create_dir_all(root.join(d)).unwrap();
                std::fs::write(root.join(d).join(f), "").unwrap();
            }
        }
        symlink("a/1", root.join("link")).unwrap();
        assert_eq!(walk_with(&root, 13, 64), Ok(10), "the link is served as a file too");
        let e = walk_with(&root, 12, 64).unwrap_err();
        assert!(e.contains("more than 12 entries (--max-entries)"), "{e}");
        assert!(e.contains(&root.display().to_string()), "{e}");
        // One directory far over the cap is refused as it is read, before its names are held.
        std::fs::create_dir(root.join("wide")).unwrap();
        for i in 0..2000 {
            std::fs::write(root.join("wide").join(i.to_string()), "").unwrap();
        }
        let e = walk_with(&root, 100, 64).unwrap_err();
        assert!(e.contains(&format!("the last read in {}", root.join("wide").display())), "{e}");
        let _ = std::fs::remove_dir_all(&root);
    }

    #[test]
    fn depth_is_capped_but_a_link_back_up_is_not_a_deeper_tree() {
        let root = tree("depth");
        std::fs::create_dir_all(root.join("1/2/3")).unwrap();
        std::fs::write(root.join("1/2/3/x.html"), "x").unwrap();
        // A link to the root, three levels down: a directory already walked, skipped.
        symlink(&root, root.join("1/2/3/up")).unwrap();
        assert_eq!(walk_with(&root, 100, 3), Ok(1));
        let e = walk_with(&root, 100, 2).unwrap_err();
        assert!(e.contains(&format!("{} is deeper than 2 directories (--max-depth)", root.join("1/2/3").display())));
        assert!(walk_with(&root, 100, 0).unwrap_err().contains("1 is deeper than 0"));
        let _ = std::fs::remove_dir_all(&root);
    }
}
