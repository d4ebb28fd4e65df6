//! The memory budget: how much content the server holds in memory, and which files.
//!
//! The server works under a memory limit: the cgroup's (v2 `memory.max`, v1 `memory.limit_in_bytes`, the
//! smallest along the process's cgroup path and its ancestors) unless `--memory-limit` says otherwise. Everything
//! that grows with the site stays within a budget derived from that limit: the content held in memory (identity
//! bodies and their variants), the table that indexes every file (wherever its body is), what a load holds while
//! it runs, and the background encoder's working memory. Every file the budget cannot hold is served from disk with
//! sendfile (`Body::Disk`), its siblings too. The page cache that sendfile reads through is charged to the cgroup
//! as well, but the kernel reclaims it under pressure: it never OOM-kills.
//!
//! ## The automatic budget
//!
//! `budget = (limit - RESERVE_FIXED - limit / RESERVE_DIVISOR) / 2`, i.e. `(7/8 limit - 16 MiB) / 2`.
//!
//! - Halved because a reload builds the new table while the old one still serves (in-flight responses hold it):
//!   for a moment the process holds two tables, each within the budget.
//! - `RESERVE_FIXED` (16 MiB) is the server itself: measured RSS of the release binary with an empty site and
//!   2 workers is about 3 MiB; per worker a 256 KiB batch buffer and a 64 KiB read buffer; 10,000 idle
//!   keep-alive connections about 1 MB more (README); the rest is room for the admin listener's `/content`
//!   list (one copy, ~60 bytes a file) and allocator slack. See the README for the measurements.
//! - `limit / 8` scales with the pod: unsent output of slow clients (`Pending` copies headers and bodies up to
//!   16 KiB), loader threads (`LOAD_THREAD_WORK`), and the kernel memory (socket buffers) charged to the same
//!   cgroup. Half of it bounds connections still waiting for their request head (`pre_head_per_worker`).
//!
//! So 64 MiB → 20 MiB, 128 MiB → 48 MiB, 256 MiB → 104 MiB, 1 GiB → 440 MiB. `--memory-budget` overrides the rule
//! (0 puts every body on disk; the table is still charged).
//!
//! ## What the budget charges (issue 38: a 32,891-file site was OOM-killed in a 256 MiB pod whose budget it "fit")
//!
//! 1. **The table, first.** Every file has an entry whether its body is in memory or on disk: the `Arc`ed
//!    `FileEntry`, its path and MIME, each variant's header blocks (HTTP/1.1 head, fields, 304 fields, the HTTP/2
//!    block, the ETag), its path in the map, and its share of the resolved headers. The loader builds each file's
//!    entry as it will be built (its real header blocks for its real size and siblings, empty bodies) and sums the
//!    real allocations (site/footprint.rs: glibc's chunk sizes, `size_of` of each structure). A file served from
//!    disk adds its open files (`footprint::OPEN_FILE`: 1.5 KiB each, the kernel's `struct file` and the dentry
//!    and inode it pins). A directory adds its two paths. Measured by tests/footprint.rs on 4,440 documentation
//!    pages with default headers, under a counting allocator: the table keeps 1,909 B a file and is charged
//!    1,942 B (bodies in memory; 1,912 and 1,933 with every body on disk, open files aside).
//! 2. **The load, while it runs.** The walk's records and the load's lists (`Item::load`, charged about 860 B a
//!    file where the same measurement peaks at 570 B above the table) are charged with the table; they are freed
//!    when the load ends, and that room goes to the encoder's variants.
//! 3. **Content**, smallest first (below) in what is left.
//! 4. **The encoder** (compress/encoder.rs): before it starts a file it needs `compress::codec::encoder_work(len)` free in the
//!    budget, its peak working memory with its outputs; what the file then keeps (its variants, its entry's three
//!    more header blocks, its place in the encoding store) is charged like content. It waits for memory as it
//!    waits for CPU: the first file that does not fit ends the pass (files go smallest first), and the rest stay
//!    identity until new content arrives (`hyperstatic_content_encodings_over_budget`). `encoder_work` is
//!    measured by tests/footprint.rs (peak RSS of `precompress` on one file, which sees zstd's C allocations
//!    too): about 2 MB for a 1 KB page, 23 MB for 256 KiB (brotli 11, zstd 19), 103 MB for 8 MiB; brotli's window is
//!    sized to the input (`codec::brotli_window`), so a small page no longer pays for a 4 MiB window.
//!
//! If the table alone (every body on disk) passes the budget, the plan says so (`Plan::table_fits`): a first load
//! serves anyway, every file from disk, and logs an error naming the limit that would fit
//! (`hyperstatic_content_table_over_memory_budget` 1); a reload is refused and the previous content keeps
//! serving (`/load-error` says why).
//!
//! ## Which files: smallest first
//!
//! Files (each with the siblings it serves as variants) are taken in increasing size while they fit. Smallest
//! first maximises the number of files, and so of requests, answered from memory for each byte of budget: the
//! per-request cost that memory saves (an open file's sendfile, a page-cache lookup, a second syscall) is the
//! same for a 2 KB icon as for a 2 MB PDF, while the large file's transfer time dwarfs it. A file smaller than
//! the open files it would need on disk is held in memory even over the budget: that lowers the total. On the
//! Python 3.11 docs (see README "Memory") a 64 MiB limit holds 840 of the 1,065 files (79 %, 31 % of the bytes)
//! in memory. Hotness is not known at load time and would change the table after every request mix; size is.

use std::fs;
use std::path::{Path, PathBuf};

const MIB: u64 = 1 << 20;
/// What the server needs besides content: see the module documentation.
pub const RESERVE_FIXED: u64 = 16 * MIB;
/// The share of the limit kept for buffers that grow with load.
pub const RESERVE_DIVISOR: u64 = 8;
/// Limits at or above this are "no limit" (cgroup v1 writes 9223372036854771712 for unlimited).
const NO_LIMIT_FROM: u64 = 1 << 60;

/// The content budget for a memory limit, by the automatic rule.
pub fn auto_budget(limit: u64) -> u64 {
    limit.saturating_sub(RESERVE_FIXED + limit / RESERVE_DIVISOR) / 2
}

/// The smallest memory limit, in whole MiB, whose automatic budget holds `content` bytes (and leaves the
/// server its reserve even with no content at all).
pub fn fit_limit(content: u64) -> u64 {
    // budget ≥ content ⇔ limit - limit/8 ≥ 2·content + RESERVE_FIXED; start from the real-number solution and
    // step to the exact integer answer.
    let need = content.saturating_mul(2).saturating_add(RESERVE_FIXED);
    let mut mib = need.saturating_mul(8).div_ceil(7).div_ceil(MIB).max(1);
    let ok = |mib: u64| {
        let l = mib * MIB;
        l - l / RESERVE_DIVISOR >= need
    };
    while !ok(mib) {
        mib += 1;
    }
    while mib > 1 && ok(mib - 1) {
        mib -= 1;
    }
    mib * MIB
}

/// A cgroup memory limit file's content: a number of bytes, or `max`; huge values mean no limit.
pub fn parse_limit(s: &str) -> Option<u64> {
    let n: u64 = s.trim().parse().ok()?;
    (n > 0 && n < NO_LIMIT_FROM).then_some(n)
}

/// The smallest limit set on `dir` or any of its ancestors up to `top` (inclusive), reading `file` in each.
fn smallest_up(top: &Path, rel: &str, file: &str) -> Option<u64> {
    let mut dir: PathBuf = top.join(rel.trim_start_matches('/'));
    let mut best: Option<u64> = None;
    loop {
        if let Some(n) = fs::read_to_string(dir.join(file)).ok().as_deref().and_then(parse_limit) {
            best = Some(best.map_or(n, |b| b.min(n)));
        }
        if dir.as_path() == top || !dir.pop() || !dir.starts_with(top) {
            return best;
        }
    }
}

/// The memory limit for the cgroup paths in a /proc/self/cgroup text, with the hierarchies mounted under
/// `root` (normally /sys/fs/cgroup): the smallest of v2 `memory.max` and v1 `memory.limit_in_bytes` along
/// the process's own cgroup and its ancestors. Inside a container the cgroup namespace makes the process's
/// path `/`, which is the container's own cgroup: the same walk finds it.
pub fn limit_from(proc_cgroup: &str, root: &Path) -> Option<u64> {
    let mut best: Option<u64> = None;
    let mut consider = |n: Option<u64>| {
        if let Some(n) = n {
            best = Some(best.map_or(n, |b: u64| b.min(n)));
        }
    };
    for line in proc_cgroup.lines() {
        let mut parts = line.splitn(3, ':');
        let (Some(_), Some(controllers), Some(path)) = (parts.next(), parts.next(), parts.next()) else { continue };
        if controllers.is_empty() {
            // v2: the unified hierarchy at the root (pure v2) or at root/unified (hybrid, no memory controller
            // there in practice, so usually nothing found).
            for top in [root.to_path_buf(), root.join("unified")] {
                if top.join("cgroup.controllers").exists() {
                    consider(smallest_up(&top, path, "memory.max"));
                }
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            consider(smallest_up(&root.join("memory"), path, "memory.limit_in_bytes"));
        }
    }
    best
}

/// This process's cgroup memory limit, if one is set.
pub fn cgroup_limit() -> Option<u64> {
    limit_from(&fs::read_to_string("/proc/self/cgroup").unwrap_or_default(), Path::new("/sys/fs/cgroup"))
}

/// The limit the server works under and the content budget it derives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Budget {
    /// None: no limit (neither a cgroup limit nor `--memory-limit`).
    pub limit: Option<u64>,
    /// None: unlimited (no limit and no `--memory-budget`).
    pub budget: Option<u64>,
}

impl Budget {
    /// From `--memory-limit` and `--memory-budget`, reading the cgroup unless a limit is given (`--memory-limit
    /// 0`: no limit).
    pub fn of(memory_limit: Option<u64>, memory_budget: Option<u64>) -> Budget {
        let limit = match memory_limit {
            Some(0) => None,
            Some(n) => Some(n),
            None => cgroup_limit(),
        };
        Budget { limit, budget: memory_budget.or(limit.map(auto_budget)) }
    }
}

/// One file as the planner sees it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Item {
    /// The file's own size.
    pub identity: u64,
    /// The sizes of the sibling variants it serves (`x.br`, `x.gz`), known at load.
    pub variants: u64,
    /// What its place in the table costs wherever its body is (entry, header blocks, names, map slot:
    /// footprint.rs). A directory is an item with only this (and `load`).
    pub table: u64,
    /// What serving it from disk adds: the open files of it and its siblings (footprint.rs `OPEN_FILE`), or for a
    /// pool site (loader.rs `disk_by_path`) their paths.
    pub disk: u64,
    /// What the load holds for it while it runs and frees at its end (the walk's record, the load's lists).
    pub load: u64,
}

impl Item {
    /// Its content bytes: what holding it in memory costs besides its table entry.
    pub fn cost(&self) -> u64 {
        self.identity.saturating_add(self.variants)
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Plan {
    /// Per item, in input order: held in memory (else served from disk).
    pub in_memory: Vec<bool>,
    /// Bytes the plan holds in memory (identity and sibling variants).
    pub memory_bytes: u64,
    /// What the table costs besides content: every item's `table`, and `disk` of those served from disk (the
    /// load's records are freed when it ends, and their room goes to the encoder's variants).
    pub table_bytes: u64,
    /// Files (and their identity bytes) left on disk because of the budget, not of `--max-memory-file-size`.
    pub over_budget_files: usize,
    pub over_budget_bytes: u64,
    /// Whether the table fits the budget (false: even with every body on disk it does not; the server says so).
    pub table_fits: bool,
    /// `fit_limit` of everything that may be held in memory (files up to `--max-memory-file-size`) with the table.
    pub fit_limit: u64,
}

/// Decides which files are held in memory. The table comes first: every item's `table` and `load` is charged
/// whatever happens to its body, and every body starts on disk (`disk`). Then files up to `max_file` bytes,
/// smallest content first (ties in input order), move to memory while the total stays within `budget` (None:
/// unlimited); past the first that does not, only files that cost less than their open files (a tiny file is
/// cheaper in memory, even over the budget; not with a budget of 0, which keeps every body on disk). Pure.
pub fn plan(items: &[Item], max_file: u64, budget: Option<u64>) -> Plan {
    let mut order: Vec<usize> = (0..items.len()).filter(|&i| items[i].identity <= max_file).collect();
    order.sort_by_key(|&i| items[i].cost());
    let sum = |f: &dyn Fn(&Item) -> u64| items.iter().map(f).fold(0u64, u64::saturating_add);
    let (table, load) = (sum(&|it| it.table), sum(&|it| it.load));
    let mut total = table.saturating_add(load).saturating_add(sum(&|it| it.disk));
    let eligible: u64 = order.iter().map(|&i| items[i].cost()).fold(0, u64::saturating_add);
    let ineligible_disk = sum(&|it| if it.identity <= max_file { 0 } else { it.disk });
    let mut in_memory = vec![false; items.len()];
    let (mut memory_bytes, mut over_budget_files, mut over_budget_bytes) = (0u64, 0usize, 0u64);
    // `--memory-budget 0` means every body on disk, cheaper or not; after the first file that does not fit only
    // files cheaper than their open files are taken, so memory holds the smallest files (and those).
    let cheaper_ok = budget != Some(0);
    let mut full = false;
    for &i in &order {
        let with = (total - items[i].disk).saturating_add(items[i].cost());
        if (with <= total && cheaper_ok) || (!full && budget.is_none_or(|b| with <= b)) {
            in_memory[i] = true;
            memory_bytes += items[i].cost();
            total = with;
        } else {
            full = true;
            over_budget_files += 1;
            over_budget_bytes += items[i].identity;
        }
    }
    Plan {
        in_memory,
        memory_bytes,
        table_bytes: total - memory_bytes - load,
        over_budget_files,
        over_budget_bytes,
        table_fits: budget.is_none_or(|b| total <= b),
        fit_limit: fit_limit(table.saturating_add(load).saturating_add(eligible).saturating_add(ineligible_disk)),
    }
}

/// Working memory of one loader thread besides the bodies it keeps (which the plan counts) and the records the
/// table's charge covers (footprint.rs): its 64 KiB hashing buffer, its stack and the free memory its malloc arena
/// keeps, bounded generously. It is paid from the reserve (the limit minus two budgets), so loader threads are as
/// many as the reserve's eighth-of-the-limit share pays for, at least one.
pub const LOAD_THREAD_WORK: u64 = 32 * MIB;

/// Loader threads for `cpus` CPUs under `limit` (None: no limit).
pub fn load_threads(cpus: usize, limit: Option<u64>) -> usize {
    let by_memory = limit.map_or(usize::MAX, |l| (l / RESERVE_DIVISOR / LOAD_THREAD_WORK) as usize);
    cpus.min(by_memory).max(1)
}

/// What one connection can hold before its request head completes, at worst: its partial head (under
/// `parser::MAX_REQUEST_LINE` + `parser::MAX_HEADER_SECTION` = 24 KiB, copied out of the worker's shared read
/// buffer) or, over TLS, its rustls handshake state, plus the socket's kernel memory and allocator slack. Issue 24
/// measured about 26 KB for a half-open handshake and 18 KB for a partial head, all of it charged to the pod.
pub const PRE_HEAD_COST: u64 = 32 * 1024;
/// The share of the limit that connections still waiting for their request head (handshake in progress, partial
/// head) may hold, all workers together: half of the `limit / RESERVE_DIVISOR` kept for buffers that grow with load.
pub const PRE_HEAD_DIVISOR: u64 = 16;
/// Per worker, with no memory limit: 1,024 × 32 KiB = 32 MiB.
pub const PRE_HEAD_UNLIMITED: usize = 1024;
/// Per worker, whatever the limit: a legitimate client's handshake is never the only one that can be in progress.
pub const PRE_HEAD_MIN: usize = 16;

/// How many connections still waiting for their request head one of `workers` workers holds under `limit`
/// (None: no limit): `limit / PRE_HEAD_DIVISOR / workers / PRE_HEAD_COST`, at least PRE_HEAD_MIN. Past it the
/// worker closes its oldest such connection (server/conn.rs, track_pre_head), so a flood of half-open handshakes and partial heads
/// costs at most this many × PRE_HEAD_COST per worker, whatever `--max-connections-per-worker` allows.
pub fn pre_head_per_worker(limit: Option<u64>, workers: usize) -> usize {
    let Some(limit) = limit else { return PRE_HEAD_UNLIMITED };
    let n = limit / PRE_HEAD_DIVISOR / workers.max(1) as u64 / PRE_HEAD_COST;
    (n.min(PRE_HEAD_UNLIMITED as u64) as usize).max(PRE_HEAD_MIN)
}

/// The memory side of a loaded table, for /metrics, the log and `--check`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// None: no limit.
    pub limit: Option<u64>,
    /// None: unlimited.
    pub budget: Option<u64>,
    /// Identity bytes of the files served from disk (over the budget or over `--max-memory-file-size`).
    pub disk_bytes: u64,
    pub over_budget_files: usize,
    pub over_budget_bytes: u64,
    pub fit_limit: u64,
    /// What the table costs besides content (Plan::table_bytes, then what encodings attached add).
    pub table_bytes: u64,
    /// True when the table alone does not fit the budget (not `Plan::table_fits`).
    pub table_over_budget: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn items(sizes: &[(u64, u64)]) -> Vec<Item> {
        sizes.iter().map(|&(identity, variants)| Item { identity, variants, ..Item::default() }).collect()
    }

    #[test]
    fn the_table_is_charged_before_any_content() {
        // Three files of 100, 200 and 300 bytes, each entry 50, each open file 10, the load's records 5 each.
        let it: Vec<Item> = [100, 200, 300]
            .iter()
            .map(|&identity| Item { identity, variants: 0, table: 50, disk: 10, load: 5 })
            .collect();
        // 150 of table + 15 of records + 30 of open files = 195; 500 leaves 305: the 100 and 200 files fit (each
        // freeing its open file: 195 + 90 + 190 = 475), the 300 one does not.
        let p = plan(&it, 1 << 20, Some(500));
        assert_eq!(p.in_memory, vec![true, true, false]);
        assert_eq!((p.memory_bytes, p.table_bytes), (300, 160), "the table: 3 entries and one open file");
        assert!(p.table_fits);
        assert_eq!(p.fit_limit, fit_limit(150 + 15 + 600));
        // A budget below the table alone: nothing in memory, and the plan says so.
        let p = plan(&it, 1 << 20, Some(100));
        assert_eq!(p.in_memory, vec![false; 3]);
        assert!(!p.table_fits);
        assert_eq!((p.memory_bytes, p.table_bytes, p.over_budget_files), (0, 180, 3));
    }

    #[test]
    fn a_file_smaller_than_its_open_file_goes_to_memory_even_over_the_budget() {
        let it = vec![
            Item { identity: 4, variants: 0, table: 50, disk: 100, load: 0 },
            Item { identity: 500, variants: 0, table: 50, disk: 100, load: 0 },
        ];
        let p = plan(&it, 1 << 20, Some(10));
        assert_eq!(p.in_memory, vec![true, false], "4 bytes in memory cost less than an open file");
        assert!(!p.table_fits);
        assert_eq!((p.memory_bytes, p.table_bytes), (4, 200));
    }

    #[test]
    fn budget_rule_and_its_inverse() {
        assert_eq!(auto_budget(0), 0);
        assert_eq!(auto_budget(16 * MIB), 0, "below the reserve nothing is held");
        assert_eq!(auto_budget(64 * MIB), 20 * MIB);
        assert_eq!(auto_budget(128 * MIB), 48 * MIB);
        assert_eq!(auto_budget(256 * MIB), 104 * MIB);
        for content in [0, 1, 1000, 20 * MIB, 20 * MIB + 1, 67_000_000, 104 * MIB, 3 << 30] {
            let l = fit_limit(content);
            assert_eq!(l % MIB, 0);
            assert!(auto_budget(l) >= content, "{content}: {l}");
            assert!(l == MIB || auto_budget(l - MIB) < content || content == 0, "{content}: {l} is not the smallest");
        }
        assert_eq!(fit_limit(20 * MIB), 64 * MIB);
        assert_eq!(fit_limit(20 * MIB + 1), 65 * MIB);
        assert_eq!(fit_limit(0), 19 * MIB, "the reserve alone");
    }

    #[test]
    fn smallest_first_within_the_budget() {
        let it = items(&[(500, 0), (100, 50), (300, 0), (10_000, 0), (200, 0)]);
        let p = plan(&it, 1 << 20, Some(650));
        // Costs: 500, 150, 300, 10000, 200 → 150 + 200 + 300 = 650 fit, then 500 does not.
        assert_eq!(p.in_memory, vec![false, true, true, false, true]);
        assert_eq!(p.memory_bytes, 650);
        assert_eq!((p.over_budget_files, p.over_budget_bytes), (2, 10_500));
        assert_eq!(p.fit_limit, fit_limit(11_150));
    }

    #[test]
    fn unlimited_holds_everything_but_files_over_the_size_cap() {
        let it = items(&[(5, 1), (2000, 0), (7, 0)]);
        let p = plan(&it, 1000, None);
        assert_eq!(p.in_memory, vec![true, false, true]);
        assert_eq!(p.memory_bytes, 13);
        assert_eq!(p.over_budget_files, 0, "the big file is on disk by --max-memory-file-size, not by the budget");
        assert_eq!(p.fit_limit, fit_limit(13));
        let p = plan(&it, 1000, Some(0));
        assert_eq!(p.in_memory, vec![false; 3]);
        assert_eq!((p.memory_bytes, p.over_budget_files, p.over_budget_bytes), (0, 2, 12));
    }

    #[test]
    fn equal_sizes_go_in_input_order() {
        let it = items(&[(10, 0); 5]);
        assert_eq!(plan(&it, 100, Some(35)).in_memory, vec![true, true, true, false, false]);
    }

    #[test]
    fn loader_threads_fit_the_reserve() {
        assert_eq!(load_threads(8, None), 8);
        assert_eq!(load_threads(8, Some(48 * MIB)), 1);
        assert_eq!(load_threads(8, Some(512 * MIB)), 2);
        assert_eq!(load_threads(2, Some(4 << 30)), 2);
        assert_eq!(load_threads(0, None), 1);
    }

    #[test]
    fn pre_head_connections_take_a_sixteenth_of_the_limit_across_workers() {
        // 256 MiB: 16 MiB for connections before their head, 512 of them at 32 KiB, split over the workers.
        assert_eq!(pre_head_per_worker(Some(256 * MIB), 1), 512);
        assert_eq!(pre_head_per_worker(Some(256 * MIB), 2), 256);
        assert_eq!(pre_head_per_worker(Some(256 * MIB), 0), 512, "zero workers counts as one");
        assert_eq!(pre_head_per_worker(Some(64 * MIB), 2), 64);
        for (limit, workers) in [(64 * MIB, 1), (256 * MIB, 3), (1 << 30, 8), (100_000_000, 2)] {
            let n = pre_head_per_worker(Some(limit), workers) as u64;
            assert!(n * workers as u64 * PRE_HEAD_COST <= limit / PRE_HEAD_DIVISOR, "{limit} {workers}: {n}");
        }
        // A tiny limit still leaves room for a few handshakes; a huge one or none stays at a sane fixed size.
        assert_eq!(pre_head_per_worker(Some(16 * MIB), 4), PRE_HEAD_MIN);
        assert_eq!(pre_head_per_worker(Some(1 << 40), 1), PRE_HEAD_UNLIMITED);
        assert_eq!(pre_head_per_worker(None, 2), PRE_HEAD_UNLIMITED);
    }

    #[test]
    fn limit_file_values() {
        assert_eq!(parse_limit("max\n"), None);
        assert_eq!(parse_limit("9223372036854771712\n"), None, "cgroup v1 unlimited");
        assert_eq!(parse_limit("268435456\n"), Some(256 * MIB));
        assert_eq!(parse_limit("0"), None);
        assert_eq!(parse_limit(""), None);
    }

    fn tree(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hs-memory-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        fs::create_dir_all(&d).unwrap();
        d
    }

    fn put(root: &Path, rel: &str, text: &str) {
        let p = root.join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn cgroup_v2_own_group_and_ancestors() {
        let r = tree("v2");
        put(&r, "cgroup.controllers", "cpu memory\n");
        put(&r, "memory.max", "max\n");
        put(&r, "kubepods/memory.max", "1073741824\n");
        put(&r, "kubepods/pod1/memory.max", "max\n");
        put(&r, "kubepods/pod1/c1/memory.max", "268435456\n");
        assert_eq!(limit_from("0::/kubepods/pod1/c1\n", &r), Some(256 * MIB));
        assert_eq!(limit_from("0::/kubepods/pod1\n", &r), Some(1 << 30), "an ancestor's limit applies");
        // In a container's cgroup namespace the path is "/": the root's own file.
        put(&r, "memory.max", "50331648\n");
        assert_eq!(limit_from("0::/\n", &r), Some(48 * MIB));
        assert_eq!(limit_from("0::/elsewhere\n", &r), Some(48 * MIB), "a missing directory falls back upwards");
        fs::write(r.join("memory.max"), "max\n").unwrap();
        assert_eq!(limit_from("0::/\n", &r), None);
        assert_eq!(limit_from("", &r), None);
        fs::remove_dir_all(&r).unwrap();
    }

    #[test]
    fn cgroup_v1_memory_hierarchy() {
        let r = tree("v1");
        put(&r, "memory/memory.limit_in_bytes", "9223372036854771712\n");
        put(&r, "memory/process_api/x/memory.limit_in_bytes", "104857600\n");
        put(&r, "cpu/cpu.cfs_quota_us", "-1\n");
        let text = "9:name=systemd:/\n4:memory:/process_api/x\n1:cpu:/\n0::/\n";
        assert_eq!(limit_from(text, &r), Some(100 * MIB));
        assert_eq!(limit_from("4:memory:/\n", &r), None, "unlimited root");
        assert_eq!(limit_from("4:cpuacct,memory:/process_api/x\n", &r), Some(100 * MIB), "co-mounted list");
        fs::remove_dir_all(&r).unwrap();
    }

    #[test]
    fn flags_override_the_cgroup() {
        assert_eq!(Budget::of(Some(256 * MIB), None), Budget { limit: Some(256 * MIB), budget: Some(104 * MIB) });
        assert_eq!(Budget::of(Some(256 * MIB), Some(5)).budget, Some(5));
        assert_eq!(Budget::of(Some(0), None), Budget { limit: None, budget: None });
        assert_eq!(Budget::of(Some(0), Some(7)), Budget { limit: None, budget: Some(7) });
    }
}
