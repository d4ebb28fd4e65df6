//! epoll(7): one instance per worker, registrations keyed by a u64 the worker chooses.

use std::os::fd::RawFd;

/// Readiness flags as epoll reports and takes them.
pub const IN: u32 = libc::EPOLLIN as u32;
pub const OUT: u32 = libc::EPOLLOUT as u32;
pub const ERR: u32 = libc::EPOLLERR as u32;
pub const HUP: u32 = libc::EPOLLHUP as u32;
pub const RDHUP: u32 = libc::EPOLLRDHUP as u32;
pub const ET: u32 = libc::EPOLLET as u32;

/// An epoll instance, closed when dropped.
pub struct Epoll {
    fd: RawFd,
}

/// The buffer `wait` fills: (key, flags) per ready registration.
pub struct Events {
    buf: Vec<libc::epoll_event>,
}

impl Events {
    pub fn with_capacity(n: usize) -> Events {
        Events { buf: vec![libc::epoll_event { events: 0, u64: 0 }; n] }
    }

    /// The first `n` entries (what `wait` returned) as (key, flags).
    #[inline]
    pub fn ready(&self, n: usize) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.buf.iter().take(n).map(|e| (e.u64, e.events))
    }
}

impl Epoll {
    pub fn new() -> std::io::Result<Epoll> {
        // SAFETY: no pointers.
        let fd = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        Ok(Epoll { fd })
    }

    /// Registers `fd` for `events`, reported with `key`.
    #[inline]
    pub fn add(&self, fd: RawFd, events: u32, key: u64) {
        let mut ev = libc::epoll_event { events, u64: key };
        // SAFETY: a valid event struct that outlives the call; a bad fd only makes it fail.
        unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_ADD, fd, &mut ev) };
    }

    /// Removes `fd` from the set.
    pub fn delete(&self, fd: RawFd) {
        // SAFETY: EPOLL_CTL_DEL ignores the event pointer.
        unsafe { libc::epoll_ctl(self.fd, libc::EPOLL_CTL_DEL, fd, std::ptr::null_mut()) };
    }

    /// Waits up to `timeout_ms` and returns how many entries of `events` are filled (0 on EINTR).
    #[inline]
    pub fn wait(&self, events: &mut Events, timeout_ms: i32) -> usize {
        // SAFETY: the buffer has events.buf.len() entries and we pass that length.
        let n = unsafe { libc::epoll_wait(self.fd, events.buf.as_mut_ptr(), events.buf.len() as i32, timeout_ms) };
        n.max(0) as usize
    }
}

impl Drop for Epoll {
    fn drop(&mut self) {
        super::close(self.fd);
    }
}
