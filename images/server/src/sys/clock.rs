//! Clocks: the coarse monotonic clock for timeouts, the fine one for request durations, the coarse wall clock
//! for the Date line, and per-thread CPU clocks for the encoder governor.

fn read(clock: libc::clockid_t) -> Option<libc::timespec> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec we own; an unknown clock id only makes it fail.
    let ok = unsafe { libc::clock_gettime(clock, &mut ts) } == 0;
    ok.then_some(ts)
}

#[inline]
fn ns(ts: libc::timespec) -> u64 {
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Milliseconds of CLOCK_MONOTONIC_COARSE (ticks every 1-4 ms; enough for timeouts, a vDSO read).
#[inline]
pub fn monotonic_coarse_ms() -> u64 {
    read(libc::CLOCK_MONOTONIC_COARSE).map_or(0, |ts| ts.tv_sec as u64 * 1000 + ts.tv_nsec as u64 / 1_000_000)
}

/// Nanoseconds of CLOCK_MONOTONIC (a vDSO call, no syscall).
#[inline]
pub fn monotonic_ns() -> u64 {
    read(libc::CLOCK_MONOTONIC).map_or(0, ns)
}

/// Whole seconds of CLOCK_REALTIME_COARSE.
#[inline]
pub fn realtime_coarse_secs() -> i64 {
    read(libc::CLOCK_REALTIME_COARSE).map_or(0, |ts| ts.tv_sec)
}

/// The CPU clock id of thread `tid` of this process: the kernel's encoding of a per-thread CPU clock
/// (`MAKE_THREAD_CPUCLOCK(tid, CPUCLOCK_SCHED)`, what glibc's `pthread_getcpuclockid` returns).
pub fn thread_clock(tid: i32) -> libc::clockid_t {
    ((!tid) << 3) | 6
}

/// The time of a CPU clock in nanoseconds; None when the clock is gone (thread exited).
pub fn cpu_ns(clock: libc::clockid_t) -> Option<u64> {
    read(clock).map(ns)
}

/// CPU time of the calling thread, in nanoseconds.
pub fn own_thread_cpu_ns() -> u64 {
    cpu_ns(libc::CLOCK_THREAD_CPUTIME_ID).unwrap_or(0)
}
