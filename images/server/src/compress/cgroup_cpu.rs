//! The real counters behind slack.rs: the workers' CPU time (each worker thread's CPU clock, found by its name in
//! /proc/self/task, so the worker loop needs no hook), the calling thread's own CPU time, and the cgroup's
//! throttled-period count (`cpu.stat` `nr_throttled`, the same name in cgroup v1 and v2).

use std::fs;
use std::path::PathBuf;
use std::time::Instant;

use crate::compress::slack::Sample;

/// CPU time of the calling thread, in nanoseconds.
pub use crate::sys::clock::own_thread_cpu_ns as own_thread_ns;
use crate::sys::clock::{cpu_ns as clock_ns, thread_clock};

/// The ids of this process's threads whose name starts with `prefix` (the workers are `worker-N`).
pub fn threads_named(prefix: &str) -> Vec<i32> {
    let Ok(dir) = fs::read_dir("/proc/self/task") else { return Vec::new() };
    dir.filter_map(|e| {
        let e = e.ok()?;
        let tid: i32 = e.file_name().to_str()?.parse().ok()?;
        let comm = fs::read_to_string(e.path().join("comm")).ok()?;
        comm.starts_with(prefix).then_some(tid)
    })
    .collect()
}

/// `nr_throttled` from a `cpu.stat` text (v1 and v2 name it alike).
pub fn parse_nr_throttled(stat: &str) -> Option<u64> {
    stat.lines().find_map(|l| l.strip_prefix("nr_throttled ")?.trim().parse().ok())
}

/// The `cpu.stat` of this process's cgroup under `root`, from a /proc/self/cgroup text: v2 (`0::/path`), or the
/// v1 hierarchy holding the cpu controller; the hierarchy root when the path is not there (inside a container
/// the cgroup namespace makes them the same).
pub fn cpu_stat_path(proc_cgroup: &str, root: &str) -> Option<PathBuf> {
    let mut candidates = Vec::new();
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        if controllers.is_empty() {
            candidates.push(format!("{root}{path}"));
            candidates.push(root.to_string());
        } else if controllers.split(',').any(|c| c == "cpu") {
            for mount in [controllers, "cpu,cpuacct", "cpu", "cpuacct,cpu"] {
                candidates.push(format!("{root}/{mount}{path}"));
                candidates.push(format!("{root}/{mount}"));
            }
        }
    }
    candidates
        .into_iter()
        .map(|d| PathBuf::from(format!("{}/cpu.stat", d.trim_end_matches('/'))))
        .find(|p| fs::read_to_string(p).ok().and_then(|s| parse_nr_throttled(&s)).is_some())
}

/// Reads a `Sample` for the calling (background) thread.
pub struct Meter {
    origin: Instant,
    workers: Vec<libc::clockid_t>,
    cpu_stat: Option<PathBuf>,
}

impl Meter {
    /// For the threads named `worker-*` (call after the workers started) and this process's cgroup.
    pub fn new() -> Meter {
        let proc_cgroup = fs::read_to_string("/proc/self/cgroup").unwrap_or_default();
        Meter {
            origin: Instant::now(),
            workers: threads_named("worker-").into_iter().map(thread_clock).collect(),
            cpu_stat: cpu_stat_path(&proc_cgroup, "/sys/fs/cgroup"),
        }
    }

    /// How many serving threads it watches.
    pub fn workers(&self) -> usize {
        self.workers.len()
    }

    /// Looks for the worker threads again (one had not named itself yet); the clock origin stays, so readings
    /// never go backwards.
    pub fn rescan_workers(&mut self) {
        self.workers = threads_named("worker-").into_iter().map(thread_clock).collect();
    }

    pub fn sample(&self) -> Sample {
        Sample {
            wall_ns: self.origin.elapsed().as_nanos() as u64,
            serving_cpu_ns: self.workers.iter().filter_map(|&c| clock_ns(c)).sum(),
            own_cpu_ns: own_thread_ns(),
            throttled: self
                .cpu_stat
                .as_ref()
                .and_then(|p| fs::read_to_string(p).ok())
                .and_then(|s| parse_nr_throttled(&s))
                .unwrap_or(0),
        }
    }
}

impl Default for Meter {
    fn default() -> Self {
        Meter::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Arc, Barrier};

    #[test]
    fn parses_throttling_in_v1_and_v2_stat() {
        let v2 = "usage_usec 1\nuser_usec 1\nsystem_usec 0\nnr_periods 10\nnr_throttled 4\nthrottled_usec 900\n";
        assert_eq!(parse_nr_throttled(v2), Some(4));
        let v1 = "nr_periods 10\nnr_throttled 7\nthrottled_time 123456\n";
        assert_eq!(parse_nr_throttled(v1), Some(7));
        assert_eq!(parse_nr_throttled("usage_usec 5\n"), None);
    }

    #[test]
    fn finds_cpu_stat_in_v1_and_v2_trees() {
        let dir = std::env::temp_dir().join(format!("hs-cgcpu-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        let v1 = dir.join("v1");
        fs::create_dir_all(v1.join("cpu/pod/ctr")).unwrap();
        fs::write(v1.join("cpu/pod/ctr/cpu.stat"), "nr_periods 1\nnr_throttled 0\nthrottled_time 0\n").unwrap();
        let p = cpu_stat_path("2:cpuacct:/pod/ctr\n1:cpu:/pod/ctr\n", v1.to_str().unwrap());
        assert_eq!(p, Some(v1.join("cpu/pod/ctr/cpu.stat")));
        let v2 = dir.join("v2");
        fs::create_dir_all(v2.join("kubepods/pod1")).unwrap();
        fs::write(v2.join("cpu.stat"), "usage_usec 1\n").unwrap(); // no cpu controller at the root
        fs::write(v2.join("kubepods/pod1/cpu.stat"), "usage_usec 1\nnr_throttled 3\n").unwrap();
        assert_eq!(cpu_stat_path("0::/kubepods/pod1\n", v2.to_str().unwrap()), Some(v2.join("kubepods/pod1/cpu.stat")));
        // A namespaced container: the path says "/", the file is at the root.
        fs::write(v2.join("cpu.stat"), "nr_throttled 0\n").unwrap();
        assert_eq!(cpu_stat_path("0::/\n", v2.to_str().unwrap()), Some(v2.join("cpu.stat")));
        assert_eq!(cpu_stat_path("0::/x\n", dir.join("none").to_str().unwrap()), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    /// A thread named like a worker that burns CPU until told to stop: the meter must see its CPU time grow, and
    /// its own clock must not count it.
    #[test]
    fn meter_reads_the_workers_cpu_clocks_by_name() {
        // Made before the worker exists, as when the encoder starts before a worker has named itself.
        let mut m = Meter::new();
        let before = m.sample();
        let stop = Arc::new(AtomicBool::new(false));
        let named = Arc::new(Barrier::new(2));
        let (s, n) = (stop.clone(), named.clone());
        let (tx, rx) = std::sync::mpsc::channel();
        let h = std::thread::Builder::new()
            .name("worker-test".into())
            .spawn(move || {
                tx.send(crate::sys::process::gettid()).unwrap();
                n.wait();
                let mut x = 0u64;
                while !s.load(Ordering::Relaxed) {
                    x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(1));
                }
                x
            })
            .unwrap();
        let tid = rx.recv().unwrap();
        named.wait();
        m.rescan_workers();
        assert!(m.workers.contains(&thread_clock(tid)), "the named thread is found on a rescan");
        let first = m.sample();
        assert!(first.wall_ns >= before.wall_ns, "a rescan keeps the clock origin");
        // Wait on a condition, not a time: until the worker's clock has advanced by 20 ms of CPU.
        let mut later = m.sample();
        while later.serving_cpu_ns < first.serving_cpu_ns + 20_000_000 {
            std::thread::yield_now();
            later = m.sample();
        }
        stop.store(true, Ordering::Relaxed);
        h.join().unwrap();
        assert!(later.wall_ns >= first.wall_ns);
        assert!(later.own_cpu_ns >= first.own_cpu_ns);
        assert_eq!(thread_clock(1) & 7, 6, "a per-thread CPUCLOCK_SCHED clock");
    }
}
