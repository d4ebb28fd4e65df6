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

    /// Watches `p` for `mask` (following symlinks, which is what `..data` needs). Returns the watch descriptor,
    /// or -1 when the kernel refused the watch.
    pub fn add(&self, p: &Path, mask: u32) -> i32 {
        let Ok(c) = CString::new(p.as_os_str().as_bytes()) else { return -1 };
        // SAFETY: a valid C string that outlives the call.
        unsafe { libc::inotify_add_watch(self.fd, c.as_ptr(), mask) }
    }

    /// Drains queued events; true when there were any.
    pub fn drain(&self) -> bool {
        self.drain_where(|_, _| true)
    }

    /// Drains queued events; true when `relevant(wd, name)` held for at least one of them (`name` is empty for
    /// an event about a watched path itself). A queue overflow counts as relevant: events were lost.
    pub fn drain_where(&self, mut relevant: impl FnMut(i32, &[u8]) -> bool) -> bool {
        let mut buf = [0u8; 8192];
        let mut any = false;
        while let Ok(n) = super::io::read(self.fd, &mut buf) {
            if n == 0 {
                break;
            }
            for (wd, mask, name) in Events(&buf[..n]) {
                any |= mask & libc::IN_Q_OVERFLOW != 0 || relevant(wd, name);
            }
        }
        any
    }
}

/// The `struct inotify_event` records of one read(2), parsed from their bytes (no pointer casts): the kernel
/// returns whole records only, each a 16-byte header (wd, mask, cookie, len) and `len` bytes of NUL-padded name.
struct Events<'a>(&'a [u8]);

impl<'a> Iterator for Events<'a> {
    type Item = (i32, u32, &'a [u8]);

    fn next(&mut self) -> Option<Self::Item> {
        const HEADER: usize = 16;
        let b = self.0;
        if b.len() < HEADER {
            return None;
        }
        let word = |i: usize| u32::from_ne_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let len = word(12) as usize;
        let end = (HEADER + len).min(b.len());
        let raw = &b[HEADER..end];
        let name = &raw[..raw.iter().position(|&c| c == 0).unwrap_or(raw.len())];
        self.0 = &b[end..];
        Some((word(0) as i32, word(4), name))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn record(wd: i32, mask: u32, name: &str) -> Vec<u8> {
        let padded = (name.len() + 1).div_ceil(16) * 16;
        let len = if name.is_empty() { 0 } else { padded };
        let mut r = Vec::new();
        r.extend_from_slice(&wd.to_ne_bytes());
        r.extend_from_slice(&mask.to_ne_bytes());
        r.extend_from_slice(&0u32.to_ne_bytes());
        r.extend_from_slice(&(len as u32).to_ne_bytes());
        let mut n = name.as_bytes().to_vec();
        n.resize(len, 0);
        r.extend_from_slice(&n);
        r
    }

    #[test]
    fn events_parse_names_and_descriptors() {
        let mut b = record(1, libc::IN_CREATE, "tmp-link");
        b.extend(record(2, libc::IN_MOVED_TO, "current"));
        b.extend(record(3, libc::IN_DELETE_SELF, ""));
        let got: Vec<_> = Events(&b).collect();
        assert_eq!(
            got,
            vec![
                (1, libc::IN_CREATE, &b"tmp-link"[..]),
                (2, libc::IN_MOVED_TO, &b"current"[..]),
                (3, libc::IN_DELETE_SELF, &b""[..])
            ]
        );
    }

    #[test]
    fn a_cut_record_ends_the_parse() {
        let b = record(1, libc::IN_CREATE, "name");
        assert_eq!(Events(&b[..10]).count(), 0);
    }
}
