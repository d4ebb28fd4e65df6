//! Process and thread settings: the descriptor limit, CPU affinity, scheduling priority, sysconf values, thread ids.

/// Raises the soft RLIMIT_NOFILE to the hard limit.
pub fn raise_fd_limit() {
    let mut r = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
    // SAFETY: get/setrlimit with a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut r) == 0 && r.rlim_cur < r.rlim_max {
            r.rlim_cur = r.rlim_max;
            libc::setrlimit(libc::RLIMIT_NOFILE, &r);
        }
    }
}

/// The CPU ids in this thread's affinity mask ([0] when it cannot be read).
pub fn affinity() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data for which all-zero is valid; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return vec![0];
        }
        (0..libc::CPU_SETSIZE as usize).filter(|&c| libc::CPU_ISSET(c, &set)).collect()
    }
}

/// Pins the calling thread to one CPU.
pub fn pin(cpu: usize) -> bool {
    // SAFETY: as in `affinity`.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}

/// SCHED_IDLE for the calling thread; Err with the reason when refused.
pub fn sched_idle() -> std::io::Result<()> {
    let p = libc::sched_param { sched_priority: 0 };
    // SAFETY: a scheduling call on the calling thread (pid 0) with a valid parameter struct.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_IDLE, &p) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// Nice `n` for the calling thread (PRIO_PROCESS with 0 is the calling thread on Linux).
pub fn nice(n: i32) {
    // SAFETY: no pointers.
    unsafe { libc::setpriority(libc::PRIO_PROCESS, 0, n) };
}

/// Clock ticks per second and the page size (for /proc/self/stat).
pub fn clk_tck_and_page() -> (u64, u64) {
    // SAFETY: sysconf takes no pointers.
    let (t, p) = unsafe { (libc::sysconf(libc::_SC_CLK_TCK), libc::sysconf(libc::_SC_PAGESIZE)) };
    (t.max(1) as u64, p.max(1) as u64)
}

/// The calling thread's id.
pub fn gettid() -> i32 {
    // SAFETY: gettid has no arguments and cannot fail.
    unsafe { libc::gettid() }
}
