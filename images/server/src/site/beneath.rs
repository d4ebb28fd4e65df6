//! Opens a site file by its path relative to the site root without a check-then-use window. The loader decides
//! that a name is inside the root by resolving it (`canonicalize`); opening the name again afterwards would follow
//! whatever symlinks the tree holds by then, so a symlink swapped between the check and the open (a content sync
//! racing a reload, or a hostile tenant) got a file outside the root served. Here the resolved, symlink-free
//! relative path is opened one component at a time with `openat(O_NOFOLLOW)` from a descriptor of the root: a
//! component that became a symlink (or anything but a directory, and for the last one a regular file) fails the
//! open instead of being followed. Where the kernel offers it, one `openat2(RESOLVE_NO_SYMLINKS)` of the whole
//! path does the same in one call (a pool opens its disk-served files so per response, where the walk cost an
//! open per component and a close per directory); an old kernel, a seccomp filter that refuses it, or a root
//! given through a symlink (ELOOP) fall back to the walk. The path never holds `..` (only normal components are
//! accepted).

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::path::{Component, Path};

use std::os::unix::ffi::OsStrExt;

use crate::sys::fs::{open_joined_no_symlinks, openat};

/// Opens `root/rel` for reading, where `rel` is relative and made only of normal components, none of which may be
/// a symlink at the time of the open; the result must be a regular file. `root` itself is opened as given (it is
/// the operator's choice, not the site's).
pub fn open_file(root: &Path, rel: &Path) -> io::Result<File> {
    open_with_metadata(root, rel).map(|(f, _)| f)
}

/// `open_file` with the metadata of the file opened (one fstat, which the regular-file check needs anyway).
pub fn open_with_metadata(root: &Path, rel: &Path) -> io::Result<(File, std::fs::Metadata)> {
    let not_beneath = || io::Error::new(io::ErrorKind::InvalidInput, "not a plain path beneath the site root");
    if rel.as_os_str().is_empty() || !rel.components().all(|c| matches!(c, Component::Normal(_))) {
        return Err(not_beneath());
    }
    // O_NONBLOCK: a name swapped for a FIFO must not block the loader in open(2); a regular file ignores it.
    let flags = libc::O_RDONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK;
    // One openat2 that follows no symlink anywhere when the kernel has it (a pool opens its disk-served files per
    // response); else, or when the root is given through a symlink, the walk below.
    let fd = match open_joined_no_symlinks(root.as_os_str().as_bytes(), rel.as_os_str().as_bytes(), flags)? {
        Some(fd) => fd,
        None => open_walking(root, rel, flags)?,
    };
    let f = File::from(fd);
    let m = f.metadata()?;
    if !m.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok((f, m))
}

/// `rel`'s directories opened one at a time with `O_NOFOLLOW` from a descriptor of `root`, then its file.
fn open_walking(root: &Path, rel: &Path, flags: libc::c_int) -> io::Result<std::os::fd::OwnedFd> {
    let not_beneath = || io::Error::new(io::ErrorKind::InvalidInput, "not a plain path beneath the site root");
    // Component by component, no list collected.
    let mut parts = rel.components().peekable();
    let mut dir = openat(libc::AT_FDCWD, root.as_os_str(), libc::O_PATH | libc::O_DIRECTORY)?;
    let last: &OsStr = loop {
        let Some(Component::Normal(n)) = parts.next() else { return Err(not_beneath()) };
        if parts.peek().is_none() {
            break n;
        }
        dir = openat(dir.as_raw_fd(), n, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW)?;
    };
    openat(dir.as_raw_fd(), last, flags)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;

    #[test]
    fn opens_plain_paths_and_refuses_symlinks_dots_and_non_files() {
        let d = std::env::temp_dir().join(format!("hs-beneath-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("root/sub")).unwrap();
        std::fs::write(d.join("root/sub/a.txt"), "inside").unwrap();
        std::fs::write(d.join("secret"), "outside").unwrap();
        std::os::unix::fs::symlink(d.join("secret"), d.join("root/link")).unwrap();
        std::os::unix::fs::symlink(&d, d.join("root/up")).unwrap();
        let root = d.join("root");
        let mut s = String::new();
        open_file(&root, Path::new("sub/a.txt")).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "inside");
        assert!(open_file(&root, Path::new("link")).is_err(), "a symlink as the file");
        assert!(open_file(&root, Path::new("up/secret")).is_err(), "a symlink as a directory");
        assert!(open_file(&root, Path::new("../secret")).is_err(), "a .. component");
        assert!(open_file(&root, &d.join("secret")).is_err(), "an absolute path");
        assert!(open_file(&root, Path::new("sub")).is_err(), "a directory");
        assert!(open_file(&root, Path::new("")).is_err(), "nothing");
        std::fs::remove_dir_all(&d).unwrap();
    }
}
