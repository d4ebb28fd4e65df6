//! openat(2): the one file system call std does not offer, for opening beneath a directory without following
//! symlinks (beneath.rs).

use std::ffi::{CString, OsStr};
use std::io;
use std::os::fd::{FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;

/// openat(dir, name, flags | O_CLOEXEC) as an owned descriptor.
pub fn openat(dir: libc::c_int, name: &OsStr, flags: libc::c_int) -> io::Result<OwnedFd> {
    let c = CString::new(name.as_bytes()).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    // SAFETY: a NUL-terminated name and a directory descriptor (or AT_FDCWD) that outlives the call.
    let fd = unsafe { libc::openat(dir, c.as_ptr(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor we just opened and nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// openat(dir, name, flags | O_CLOEXEC) for a name given as bytes, made NUL-terminated on the stack: no allocation,
/// for the not-found path's lookups in a previous deploy (answer/stale.rs), which run per request. A name longer
/// than NAME_MAX (255) or holding a NUL cannot name a file: `InvalidInput`.
pub fn openat_name(dir: libc::c_int, name: &[u8], flags: libc::c_int) -> io::Result<OwnedFd> {
    let mut buf = [0u8; 256];
    if name.len() >= buf.len() || name.contains(&0) {
        return Err(io::Error::from(io::ErrorKind::InvalidInput));
    }
    buf[..name.len()].copy_from_slice(name);
    // SAFETY: `buf` is NUL-terminated (zeroed past the name) and outlives the call; `dir` is a directory descriptor
    // (or AT_FDCWD) the caller keeps open for the call.
    let fd = unsafe { libc::openat(dir, buf.as_ptr().cast(), flags | libc::O_CLOEXEC) };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: a descriptor we just opened and nobody else owns.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}
