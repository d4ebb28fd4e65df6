//! The transport layer's floor: thin safe wrappers over the system calls the server makes (epoll, sockets, accept,
//! read/writev/sendfile, clocks, signals, inotify, scheduling) and the two places where it steps outside the
//! borrow checker on purpose (table memory referenced by queued output, the worker's table borrow). Every
//! `unsafe` of the server is in this folder, each with a SAFETY comment; nothing outside it says `unsafe`.
//! The wrappers are `#[inline]` where the worker calls them per request, so the module boundary costs nothing.

pub mod clock;
pub mod epoll;
pub mod fs;
pub mod inotify;
pub mod io;
pub mod mem;
pub mod process;
pub mod signal;
pub mod socket;
pub mod steer;
pub mod udp;

/// The calling thread's errno (0 when none is set).
#[inline]
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(0)
}

/// Closes a descriptor this process owns (errors are not actionable: the descriptor is gone either way).
#[inline]
pub fn close(fd: std::os::fd::RawFd) {
    // SAFETY: close(2) takes any integer; callers pass descriptors they own and never use again.
    unsafe { libc::close(fd) };
}
