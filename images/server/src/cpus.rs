//! How many workers to run and where: the CPUs in the affinity mask (never the host count), capped by
//! the cgroup CPU quota.
//!
//! Rounding decision: a quota of Q cores gives ceil(Q - 0.1) workers, at least one. A 500m pod gets one
//! worker; 1500m gets two (two workers sharing 1.5 cores use the whole quota, one would leave a third of it
//! idle); 1100m gets one (a second worker for a tenth of a core only adds throttling).
//! Workers are pinned one per CPU only when the mask holds exactly as many CPUs as there are workers
//! (e.g. a Kubernetes Guaranteed pod under the static CPU manager policy).

use std::fs;

/// Worker count from the affinity CPU count and an optional quota in cores.
pub fn worker_count(affinity_cpus: usize, quota_cores: Option<f64>) -> usize {
    let cpus = affinity_cpus.max(1);
    match quota_cores {
        Some(q) if q > 0.0 => {
            let by_quota = (q - 0.1).ceil().max(1.0) as usize;
            by_quota.min(cpus)
        }
        _ => cpus,
    }
}

/// Whether workers are pinned: exactly one worker per CPU of the mask.
pub fn should_pin(workers: usize, mask: &[usize]) -> bool {
    workers == mask.len()
}

pub use crate::sys::process::{affinity, pin};

/// cgroup v2 `cpu.max` content ("max 100000" or "50000 100000") as cores.
pub fn parse_cpu_max(s: &str) -> Option<f64> {
    let mut it = s.split_whitespace();
    let quota = it.next()?;
    let period: f64 = it.next().unwrap_or("100000").parse().ok()?;
    if quota == "max" || period <= 0.0 {
        return None;
    }
    let q: f64 = quota.parse().ok()?;
    Some(q / period)
}

/// cgroup v1 cfs quota and period files as cores (quota -1 = unlimited).
pub fn parse_cfs(quota: &str, period: &str) -> Option<f64> {
    let q: i64 = quota.trim().parse().ok()?;
    let p: i64 = period.trim().parse().ok()?;
    if q <= 0 || p <= 0 {
        return None;
    }
    Some(q as f64 / p as f64)
}

/// The CPU quota of this process's cgroup, in cores, if one is set (v2 `cpu.max`, or v1 cfs files).
pub fn cgroup_quota() -> Option<f64> {
    quota_from(&fs::read_to_string("/proc/self/cgroup").unwrap_or_default(), "/sys/fs/cgroup")
}

/// Looks up the quota under `root` for the cgroup paths in a /proc/self/cgroup text: the process's own
/// cgroup first, then the hierarchy root (inside a container the namespace makes them the same).
pub fn quota_from(proc_cgroup: &str, root: &str) -> Option<f64> {
    let mut best: Option<f64> = None;
    let mut consider = |q: Option<f64>| {
        if let Some(q) = q {
            best = Some(best.map_or(q, |b: f64| b.min(q)));
        }
    };
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), Some(c)) => (a, b, c),
            _ => continue,
        };
        if controllers.is_empty() {
            // v2 unified hierarchy
            for dir in [format!("{root}{path}"), root.to_string()] {
                if let Ok(s) = fs::read_to_string(format!("{}/cpu.max", dir.trim_end_matches('/'))) {
                    consider(parse_cpu_max(&s));
                    break;
                }
            }
        } else if controllers.split(',').any(|c| c == "cpu") {
            for mount in ["cpu,cpuacct", "cpu", "cpuacct,cpu"] {
                for dir in [format!("{root}/{mount}{path}"), format!("{root}/{mount}")] {
                    let dir = dir.trim_end_matches('/').to_string();
                    if let (Ok(q), Ok(p)) = (
                        fs::read_to_string(format!("{dir}/cpu.cfs_quota_us")),
                        fs::read_to_string(format!("{dir}/cpu.cfs_period_us")),
                    ) {
                        consider(parse_cfs(&q, &p));
                    }
                }
            }
        }
    }
    best
}

/// Comma-separated CPU list for the metric label.
pub fn list(cpus: &[usize]) -> String {
    cpus.iter().map(|c| c.to_string()).collect::<Vec<_>>().join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quota_caps_workers() {
        assert_eq!(worker_count(8, Some(0.5)), 1);
        assert_eq!(worker_count(8, Some(0.1)), 1);
        assert_eq!(worker_count(8, Some(1.0)), 1);
        assert_eq!(worker_count(8, Some(1.1)), 1);
        assert_eq!(worker_count(8, Some(1.5)), 2);
        assert_eq!(worker_count(8, Some(2.0)), 2);
        assert_eq!(worker_count(2, Some(4.0)), 2);
        assert_eq!(worker_count(4, None), 4);
        assert_eq!(worker_count(0, None), 1);
    }

    #[test]
    fn pinning_needs_exact_mask() {
        assert!(should_pin(2, &[2, 3]));
        assert!(!should_pin(1, &[0, 1]));
    }

    #[test]
    fn parses_cgroup_files() {
        assert_eq!(parse_cpu_max("max 100000\n"), None);
        assert_eq!(parse_cpu_max("50000 100000\n"), Some(0.5));
        assert_eq!(parse_cfs("-1\n", "100000\n"), None);
        assert_eq!(parse_cfs("150000\n", "100000\n"), Some(1.5));
    }

    #[test]
    fn finds_quota_in_v1_and_v2_trees() {
        let dir = std::env::temp_dir().join(format!("hs-cg-{}", std::process::id()));
        let v1 = dir.join("v1");
        fs::create_dir_all(v1.join("cpu,cpuacct/pod/ctr")).unwrap();
        fs::write(v1.join("cpu,cpuacct/pod/ctr/cpu.cfs_quota_us"), "50000\n").unwrap();
        fs::write(v1.join("cpu,cpuacct/pod/ctr/cpu.cfs_period_us"), "100000\n").unwrap();
        let q = quota_from("2:cpu,cpuacct:/pod/ctr\n1:memory:/x\n", v1.to_str().unwrap());
        assert_eq!(q, Some(0.5));
        let v2 = dir.join("v2");
        fs::create_dir_all(v2.join("kubepods/pod1")).unwrap();
        fs::write(v2.join("kubepods/pod1/cpu.max"), "150000 100000\n").unwrap();
        assert_eq!(quota_from("0::/kubepods/pod1\n", v2.to_str().unwrap()), Some(1.5));
        assert_eq!(quota_from("0::/nothing\n", dir.join("none").to_str().unwrap()), None);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn affinity_is_not_empty() {
        assert!(!affinity().is_empty());
        assert_eq!(list(&[0, 1, 3]), "0,1,3");
    }
}
