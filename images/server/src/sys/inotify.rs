//! inotify(7) for live reload: one instance per watched tree, closed when dropped.

use std::ffi::CString;
use std::os::fd::RawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

pub struct Inotify {
    fd: RawFd,
}

impl Inotify {
    /// A non-blocking instance (its fd is -1 when the kernel refuses one; adds and drains then do nothing).
    pub fn new() -> Inotify {
        // SAFETY: creating an inotify instance takes no pointers.
        Inotify { fd: unsafe { libc::inotify_init1(libc::IN_NONBLOCK | libc::IN_CLOEXEC) } }
    }

    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// Watches `p` for `mask` (following symlinks, which is what `..data` needs).
    pub fn add(&self, p: &Path, mask: u32) {
        let Ok(c) = CString::new(p.as_os_str().as_bytes()) else { return };
        // SAFETY: a valid C string that outlives the call.
        unsafe { libc::inotify_add_watch(self.fd, c.as_ptr(), mask) };
    }

    /// Drains queued events; true when there were any.
    pub fn drain(&self) -> bool {
        let mut buf = [0u8; 8192];
        let mut any = false;
        while super::io::read(self.fd, &mut buf).is_ok_and(|n| n > 0) {
            any = true;
        }
        any
    }
}

impl Default for Inotify {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Inotify {
    fn drop(&mut self) {
        super::close(self.fd);
    }
}
