//! Signals: blocked in every thread and read by the control thread through a signalfd; poll(2) for the control and
//! admin loops.

use std::os::fd::RawFd;

pub use libc::pollfd as PollFd;
pub use libc::sigset_t as SigSet;
pub use libc::{POLLIN, POLLOUT};

/// Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and the threads it spawns later) and ignores SIGPIPE.
pub fn block_signals() -> SigSet {
    // SAFETY: sigset manipulation on a local set; sigset_t is plain data for which all-zero is valid.
    unsafe {
        let mut set: libc::sigset_t = std::mem::zeroed();
        libc::sigemptyset(&mut set);
        for s in [libc::SIGTERM, libc::SIGINT, libc::SIGHUP] {
            libc::sigaddset(&mut set, s);
        }
        libc::pthread_sigmask(libc::SIG_BLOCK, &set, std::ptr::null_mut());
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
        set
    }
}

/// A non-blocking signalfd over `set`.
pub fn signalfd(set: &SigSet) -> RawFd {
    // SAFETY: signalfd reads the set we pass.
    unsafe { libc::signalfd(-1, set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC) }
}

/// The next signal queued on a signalfd, if any.
pub fn next_signal(sfd: RawFd) -> Option<i32> {
    // SAFETY: signalfd_siginfo is plain data for which all-zero is valid.
    let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
    let size = std::mem::size_of::<libc::signalfd_siginfo>();
    // SAFETY: reading at most one siginfo into a local of that size.
    let n = unsafe { libc::read(sfd, &mut info as *mut _ as *mut libc::c_void, size) };
    (n as usize == size && n > 0).then_some(info.ssi_signo as i32)
}

/// poll(2) on `fds` for up to `timeout_ms`; an error (EINTR) leaves every revents 0.
pub fn poll(fds: &mut [PollFd], timeout_ms: i32) {
    // SAFETY: `fds` is a valid array of fds.len() pollfds.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) };
}
