//! A memory cgroup of the test's own, for tests where memory is the point: the real server joins it between fork
//! and exec, and the test reads the group's usage, peak and OOM kills. Creating one needs root and a writable
//! cgroup hierarchy: without them a test says so loudly and skips, and under CI (`CI` set) it fails instead.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// A memory cgroup of our own (v2 at /sys/fs/cgroup/NAME, v1 at /sys/fs/cgroup/memory/NAME, as the bench harness
/// does for CPU), removed on drop.
pub struct MemCgroup {
    pub dir: PathBuf,
    pub v2: bool,
}

impl MemCgroup {
    pub fn create(name: &str, limit: u64) -> Result<MemCgroup, String> {
        let root = Path::new("/sys/fs/cgroup");
        let v2 = root.join("cgroup.controllers").exists();
        let base = if v2 { root.to_path_buf() } else { root.join("memory") };
        if !v2 && !base.join("memory.limit_in_bytes").exists() {
            return Err("no cgroup v2 and no cgroup v1 memory hierarchy under /sys/fs/cgroup".into());
        }
        if v2 {
            let ctl = std::fs::read_to_string(base.join("cgroup.subtree_control")).map_err(|e| format!("{e}"))?;
            if !ctl.split_whitespace().any(|c| c == "memory") {
                std::fs::write(base.join("cgroup.subtree_control"), "+memory")
                    .map_err(|e| format!("cannot enable the memory controller in {}: {e}", base.display()))?;
            }
        }
        let dir = base.join(format!("{name}-{}", std::process::id()));
        if dir.exists() {
            let _ = std::fs::remove_dir(&dir);
        }
        std::fs::create_dir(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
        let g = MemCgroup { dir, v2 };
        let (file, swap) = if v2 {
            ("memory.max", "memory.swap.max")
        } else {
            ("memory.limit_in_bytes", "memory.memsw.limit_in_bytes")
        };
        std::fs::write(g.dir.join(file), limit.to_string()).map_err(|e| format!("cannot set {file}: {e}"))?;
        // No escape into swap where the kernel offers the knob (v1 memsw needs the limit set first).
        let _ = std::fs::write(g.dir.join(swap), if v2 { "0".to_string() } else { limit.to_string() });
        Ok(g)
    }

    pub fn procs(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// OOM kills in the group so far (v2 memory.events, v1 memory.oom_control).
    pub fn oom_kills(&self) -> u64 {
        let file = if self.v2 { "memory.events" } else { "memory.oom_control" };
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap();
        text.lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .unwrap_or_else(|| panic!("no oom_kill in {file}: {text}"))
            .trim()
            .parse()
            .unwrap()
    }

    /// Peak memory charged to the group.
    pub fn peak(&self) -> u64 {
        let file = if self.v2 { "memory.peak" } else { "memory.max_usage_in_bytes" };
        std::fs::read_to_string(self.dir.join(file)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    }

    /// Makes `cmd` join the group between fork and exec, so the server is capped from its first instruction.
    pub fn join(&self, cmd: &mut std::process::Command) {
        use std::os::unix::process::CommandExt;
        let path = std::ffi::CString::new(self.procs().to_str().unwrap()).unwrap();
        // SAFETY: only async-signal-safe calls (getpid, open, write, close) on memory prepared before fork.
        unsafe {
            cmd.pre_exec(move || {
                let mut digits = [0u8; 12];
                let mut i = digits.len();
                let mut pid = libc::getpid() as u32;
                loop {
                    i -= 1;
                    digits[i] = b'0' + (pid % 10) as u8;
                    pid /= 10;
                    if pid == 0 {
                        break;
                    }
                }
                let fd = libc::open(path.as_ptr(), libc::O_WRONLY);
                if fd < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                let n = libc::write(fd, digits[i..].as_ptr() as *const libc::c_void, digits.len() - i);
                libc::close(fd);
                if n < 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
}

impl Drop for MemCgroup {
    fn drop(&mut self) {
        // The processes are gone (killed and reaped) before this runs; rmdir may still race their exit briefly.
        for _ in 0..100 {
            if std::fs::remove_dir(&self.dir).is_ok() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Says loudly, past the test harness's output capture, why a test did not run. Under CI (`CI` set, as `.ci/run`
/// does) it fails instead: CI runs as root on a machine with writable cgroups, so a skip there would hide a lost test.
pub fn skip(test: &str, why: &str) {
    let msg = format!("\n*** SKIPPED {test}: {why} (needs root and a writable memory cgroup) ***\n\n");
    assert!(std::env::var_os("CI").is_none(), "{msg}");
    let _ = std::io::stderr().write_all(msg.as_bytes());
}

impl MemCgroup {
    /// Memory charged to the group now.
    pub fn usage(&self) -> u64 {
        let file = if self.v2 { "memory.current" } else { "memory.usage_in_bytes" };
        std::fs::read_to_string(self.dir.join(file)).ok().and_then(|s| s.trim().parse().ok()).unwrap_or(0)
    }
}

impl MemCgroup {
    /// Times the group's usage hit its limit (v1 memory.failcnt, v2 the `max` line of memory.events): the kernel
    /// had to reclaim, or would have OOM-killed, to stay within it.
    pub fn limit_hits(&self) -> u64 {
        let (file, key) = if self.v2 { ("memory.events", Some("max ")) } else { ("memory.failcnt", None) };
        let text = std::fs::read_to_string(self.dir.join(file)).unwrap();
        let n = match key {
            Some(k) => text.lines().find_map(|l| l.strip_prefix(k)).unwrap_or_else(|| panic!("no {k}in {file}")),
            None => text.as_str(),
        };
        n.trim().parse().unwrap()
    }
}
