//! openat(2): the one file system call std does not offer, for opening beneath a directory without following
//! symlinks (beneath.rs).

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// openat(dir, name, flags | O_CLOEXEC) as an owned descriptor. A name shorter than `STACK_NAME` is made
/// NUL-terminated on the stack: a pool's disk-served file is opened per response (site/beneath.rs), one call per
/// path component, and the hot path allocates nothing.
pub fn openat(dir: libc::c_int, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    const STACK_NAME: usize = 512;
    let bytes = name.as_bytes();
    if bytes.contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    let mut buf = [0u8; STACK_NAME];
    let heap;
    let ptr = if bytes.len() < STACK_NAME {
        buf[..bytes.len()].copy_from_slice(bytes);
        buf.as_ptr() as *const libc::c_char
    } else {
        heap = CString::new(bytes).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
        heap.as_ptr()
    };
    // SAFETY: a NUL-terminated name (the zeroed byte after it in `buf`, or `heap`'s) that outlives the call, and a
    // directory descriptor (or AT_FDCWD) that outlives it too.
    let fd = unsafe { libc::openat(dir, ptr, flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor we just opened and nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// `openat` for a name given as bytes, for the not-found path's lookups in a previous deploy (answer/stale.rs),
/// which run per request: a name longer than NAME_MAX (255), which cannot name a file, is refused before `openat`
/// could take its heap path, so this never allocates. `InvalidInput` for such a name or one holding a NUL.
pub fn openat_name(dir: libc::c_int, name: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
    if name.len() > 255 {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    openat(dir, OsStr::from_bytes(name), flags)
}

/// Set once openat2(2) is found refused (an old kernel, or a seccomp filter that does not know it).
static NO_OPENAT2: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The longest `root/rel` `open_joined_no_symlinks` opens in one call.
const JOINED_MAX: usize = 4096;

/// Opens `root` `/` `rel` (an absolute path in two parts) with one openat2(2) that follows no symlink in any
/// component (RESOLVE_NO_SYMLINKS): what beneath.rs otherwise does with an `openat` per component and a close per
/// directory, per response for a pool's disk-served file. `Ok(None)` when this call cannot say: openat2 refused
/// (ENOSYS, EPERM: remembered), a symlink on the way (ELOOP: the caller's walk decides, as the root may be given
/// through one), or a path too long or not absolute; the caller then walks the components.
pub fn open_joined_no_symlinks(root: &[u8], rel: &[u8], flags: libc::c_int) -> io::Result<Option<OwnedFd>> {
    use std::sync::atomic::Ordering;
    if NO_OPENAT2.load(Ordering::Relaxed)
        || !root.starts_with(b"/")
        || root.len() + 1 + rel.len() >= JOINED_MAX
        || root.contains(&0)
        || rel.contains(&0)
    {
        return Ok(None);
    }
    let mut buf = [0u8; JOINED_MAX];
    buf[..root.len()].copy_from_slice(root);
    buf[root.len()] = b'/';
    buf[root.len() + 1..root.len() + 1 + rel.len()].copy_from_slice(rel);
    /// linux/openat2.h `struct open_how` (libc's cannot be built outside libc: it is non-exhaustive).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u64,
        mode: 0,
        resolve: libc::RESOLVE_NO_SYMLINKS | libc::RESOLVE_NO_MAGICLINKS,
    };
    // SAFETY: a NUL-terminated path in `buf` (zeroed past it) and an `open_how` of the size passed, both
    // outliving the call; the kernel writes nothing through either.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_openat2,
            libc::AT_FDCWD,
            buf.as_ptr() as *const libc::c_char,
            &how as *const OpenHow,
            std::mem::size_of::<OpenHow>(),
        )
    };
    if fd < 0 {
        let e = io::Error::last_os_error();
        return match e.raw_os_error() {
            Some(libc::ENOSYS | libc::EPERM) => {
                NO_OPENAT2.store(true, Ordering::Relaxed);
                Ok(None)
            }
            Some(libc::ELOOP) => Ok(None),
            _ => Err(e),
        };
    }
    // SAFETY: a descriptor the kernel just gave us and nobody else owns.
    Ok(Some(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) }))
}
