//! The memory charge held against what the process really uses (issue 38 item 11): a load of thousands of files
//! under a counting allocator (the encoder's codecs: tests/encoder_work.rs).
//!
//! - The table: after a load, the heap it keeps (less its content bytes) is at most `table_bytes`, the charge
//!   site/footprint.rs computes from the structures; during the load, the peak is at most the charge with the
//!   load's records (`Report::load_bytes`). And the charge is no inflated guess: it stays within 1.5 × what was
//!   measured.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use hyperstatic_server::config::Config;
use hyperstatic_server::site::{footprint, loader};

/// Counts live heap bytes as glibc's chunks (footprint::chunk: the model the charge uses) and their peak.
struct Counting;

static LIVE: AtomicU64 = AtomicU64::new(0);
static PEAK: AtomicU64 = AtomicU64::new(0);
/// One measurement at a time: the counters are the whole process's.
static SERIAL: Mutex<()> = Mutex::new(());

fn add(n: usize) {
    let now = LIVE.fetch_add(footprint::chunk(n), Ordering::Relaxed) + footprint::chunk(n);
    PEAK.fetch_max(now, Ordering::Relaxed);
}

fn sub(n: usize) {
    LIVE.fetch_sub(footprint::chunk(n), Ordering::Relaxed);
}

// SAFETY: every call is passed to the system allocator unchanged; the counters only observe sizes.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, l: Layout) -> *mut u8 {
        add(l.size());
        unsafe { System.alloc(l) }
    }
    unsafe fn alloc_zeroed(&self, l: Layout) -> *mut u8 {
        add(l.size());
        unsafe { System.alloc_zeroed(l) }
    }
    unsafe fn dealloc(&self, p: *mut u8, l: Layout) {
        sub(l.size());
        unsafe { System.dealloc(p, l) }
    }
    unsafe fn realloc(&self, p: *mut u8, l: Layout, n: usize) -> *mut u8 {
        add(n);
        sub(l.size());
        unsafe { System.realloc(p, l, n) }
    }
}

#[global_allocator]
static COUNTING: Counting = Counting;

/// A documentation-like tree: `n` pages in directories of 100 with an index each, some CSS with a `.gz` sibling.
fn tree(name: &str, n: usize) -> common::Site {
    let site = common::tempdir(name);
    for i in 0..n {
        let dir = site.join(format!("reference/section-{:03}", i / 100));
        if i % 100 == 0 {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("index.html"), format!("<h1>section {i}</h1>").repeat(40)).unwrap();
        }
        let page = format!("<p>page {i} of the reference, with a few words to compress</p>\n").repeat(10 + i % 50);
        if i % 10 == 0 {
            let css = dir.join(format!("style-{i:05}.css"));
            std::fs::write(&css, page.as_bytes()).unwrap();
            std::fs::write(css.with_extension("css.gz"), &page.as_bytes()[..page.len() / 4]).unwrap();
        } else {
            std::fs::write(dir.join(format!("the-page-called-{i:05}.html")), page.as_bytes()).unwrap();
        }
    }
    site
}

struct Measured {
    files: usize,
    /// Heap the table keeps besides its content, and the charge.
    kept: u64,
    table_bytes: u64,
    /// Peak heap during the load besides the content, and the charge with the load's records.
    peak: u64,
    load_charge: u64,
}

/// How a measured load is made: the single-site server's, or a pool's quick load (every body a path, no memory
/// plan: its table's cost measured on the table, loader.rs `all_on_disk`).
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Server,
    PoolQuick,
}

fn measure(root: &Path, budget: u64, mode: Mode) -> Measured {
    let cfg = Config {
        root: root.to_path_buf(),
        memory_limit: Some(0),
        memory_budget: Some(budget),
        compress: false,
        ..Config::default()
    };
    let mut settings = cfg.load_settings();
    if mode == Mode::PoolQuick {
        (settings.disk_by_path, settings.etag_from_metadata, settings.all_on_disk) = (true, true, true);
    }
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    let (t, r) = loader::load(&settings, &Default::default(), None, &mut |_| {}).expect("load");
    let after = LIVE.load(Ordering::Relaxed) - base;
    let peak = PEAK.load(Ordering::Relaxed) - base;
    assert!(r.errors.is_empty(), "{:?}", r.errors);
    // Content bytes are charged as content (each body's Arc header and malloc rounding are the table's).
    let content = t.memory_bytes;
    // The kernel's part of an open file is no heap: the heap is held against the rest of the charge.
    let kernel = if mode == Mode::PoolQuick { 0 } else { r.disk_files as u64 * footprint::OPEN_FILE };
    let m = Measured {
        files: r.files,
        kept: after - content,
        table_bytes: t.table_bytes - kernel,
        peak: peak - content,
        load_charge: t.table_bytes - kernel + r.load_bytes,
    };
    drop(t);
    m
}

#[test]
fn the_table_and_the_load_cost_no_more_than_they_are_charged() {
    let _one = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let site = tree("footprint", 4000);
    for (what, budget, mode) in [
        ("every file in memory", u64::MAX / 4, Mode::Server),
        ("every file on disk", 0, Mode::Server),
        ("a pool's quick load", 0, Mode::PoolQuick),
    ] {
        let m = measure(&site, budget, mode);
        eprintln!(
            "{what}: {} files; the table keeps {} B a file (charged {}); the load peaks at {} B a file (charged {})",
            m.files,
            m.kept / m.files as u64,
            m.table_bytes / m.files as u64,
            m.peak / m.files as u64,
            m.load_charge / m.files as u64,
        );
        assert!(m.kept <= m.table_bytes, "{what}: the table keeps {} B, charged {} B", m.kept, m.table_bytes);
        assert!(m.peak <= m.load_charge, "{what}: the load peaks at {} B, charged {} B", m.peak, m.load_charge);
        assert!(
            m.table_bytes * 2 <= m.kept * 3,
            "{what}: the charge ({} B) is more than 1.5 x what the table keeps ({} B): not measured",
            m.table_bytes,
            m.kept
        );
    }
}

/// A pool site that is in the index but not loaded: everything the index, the registry, the published snapshot
/// (host map, slot, counters for 2 workers) and the `/sites` report keep for it, with the contract's four hosts
/// per site and the value most sites have (shared). Measured 2026-12-04: 2,104 bytes (1,860 before the host map
/// held each name in a cache line of its own and the slot its counters: +244 bytes for a route that touches three
/// cache lines instead of seven, docs/bench/pools-route-2026-12-04.md) — the contract's goal is "a few hundred";
/// what is left is the site's record (its id three times, its four host names), the host map's buckets (96 bytes
/// a name), the registry's entry, the slot and the per-worker counter lines (64 bytes each). The bound keeps it
/// from growing unnoticed.
#[test]
fn an_unloaded_pool_site_costs_under_two_and_a_quarter_kilobytes() {
    use hyperstatic_server::pool::{registry::Registry, Pool};
    let _serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    const N: usize = 2000;
    let dir = common::tempdir("pool-footprint");
    std::fs::create_dir_all(dir.join("index")).unwrap();
    std::fs::create_dir_all(dir.join("content")).unwrap();
    let sites: Vec<String> = (0..N)
        .map(|i| {
            format!(
                r#"{{"id": "team-{i}.docs", "hosts": ["docs-{i}.example.com", "docs.team-{i}.svc.cluster.local", "docs.team-{i}.svc", "docs.team-{i}"], "value": {{"version": 1}}, "limits": {{"maxFiles": 20000, "maxBytes": 268435456, "requestsPerSecond": 2000}}, "content": {{"configMap": {{"name": "shared.c-{i:016x}"}}}}}}"#
            )
        })
        .collect();
    std::fs::write(dir.join("index/index-00.json"), format!(r#"{{"version": 1, "sites": [{}]}}"#, sites.join(",")))
        .unwrap();
    let pool = Pool::default();
    let mut reg = Registry::new(&dir, loader::Settings::for_root(&dir), 2, Default::default());
    let before = LIVE.load(Ordering::Relaxed);
    reg.read_index();
    reg.publish(&pool);
    let per_site = (LIVE.load(Ordering::Relaxed) - before) / N as u64;
    eprintln!("an unloaded pool site keeps {per_site} bytes");
    assert!(per_site <= 2304, "{per_site} bytes per unloaded site");
    drop((reg, pool));
}
