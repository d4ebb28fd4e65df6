//! Shared pools, the server side (issue 40; the contract is docs/design/pools.md): with `--sites DIR` one process
//! serves every site of an index, chosen by the request's host.
//!
//! - **What the workers read** is one immutable `Snapshot`, published as the single site's table is
//!   (`publish::Published`, one atomic load per loop iteration): the index's hosts → a slot (hosts.rs), and per
//!   slot what it serves now (`Slot`: a table, "load me", or "unavailable"). A request costs one hash of its
//!   normalised host over a stack buffer, whatever the number of sites, and three cache lines before the site's
//!   table (the host's bucket, the slot in its chunk, the worker's counters of the site); nothing is locked or
//!   allocated.
//! - **What the pool thread owns** (watch.rs) is the registry (registry.rs): the index as read (index.rs, strict,
//!   a refused shard keeping its last good form), each site's state and table. It rebuilds and republishes the
//!   snapshot on a change; a site's change replaces that site's slot only, the other slots (and their tables) are
//!   the same `Arc`s, and the host map is rebuilt only when the index changes.
//! - **Lazy load**: a site in the index with a tree starts unloaded (its slot says `Load`; its memory is its
//!   `Cell`, the index entry and the counters). The first request sets the site's `want` flag and wakes the pool
//!   thread (two stores and one eventfd write, by the first request only); the request gets `Route::Load`,
//!   which HTTP/1.1 holds for up to a second (server/h1.rs parks the connection; the worker goes on serving)
//!   and HTTP/2 answers 503 with `Retry-After: 1`: a worker never blocks on a load. The pool thread makes a quick
//!   load first (every body served from disk, nothing opened or read: registry.rs `Phase`) and publishes it — the
//!   held request is answered from it. The full load (bodies in memory) comes when the site is asked for again,
//!   more than once a second (registry.rs, "Who gets memory"), on its own thread (full.rs), so a cold site's
//!   quick load never waits for another site's full load. Full loads take the memory budget that the loaded
//!   sites leave (site/memory.rs: files past it are served from disk); once it is full, a site takes memory only
//!   from sites less than half as hot, coldest first, which go back to a quick load. A site served from disk
//!   costs only its table and stays loaded (its next request is answered without a reload); the coldest loaded
//!   sites are unloaded only when the tables alone are past the budget.
//! - **Descriptors are bounded**: a pool site's disk-served file is a path and the metadata its load saw
//!   (`Body::Path`, loader.rs `disk_by_path`), not an open descriptor. Each response opens it beneath the root
//!   (site/beneath.rs: one `openat2` following no symlink), serves it only if its size, time and inode are still the load's
//!   (else 503 with `Retry-After: 1`: its precomputed length and ETag would lie), and closes it once sent. The
//!   process's descriptors are its connections' and those of responses in flight, whatever the sites and files.
//! - **Per-site limits**: `maxFiles`/`maxBytes` refuse a larger tree at load (the site answers 503; `/sites` says
//!   why); `requestsPerSecond` is a per-worker share (limits.rs) → 429.
//! - **Counters** per site per worker (counters.rs) feed `/sites` and the two Prometheus families (report.rs).
//! - **Skew protection** (skew/attach.rs): a load of a site whose value sets a window attaches the previous trees
//!   listed in `deploys.json` beside its `current`, as the single site's load does. Only a previews site's
//!   production has such a list (its puller keeps its deploys' trees); a preview and a pool site have none.

pub mod counters;
pub mod full;
pub mod hosts;
pub mod index;
pub mod limits;
pub mod registry;
pub mod report;
pub mod watch;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::publish::Published;
use crate::site::content::Table;

/// What lives as long as the site is in the index, whatever its loads: its id, counters, and the flag its first
/// request sets.
pub struct Cell {
    pub id: Box<str>,
    pub counters: counters::SiteCounters,
    /// Set by the first request to an unloaded site; the pool thread clears it when it loads the site.
    pub want: AtomicBool,
}

/// A site's state, as `/sites` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// In the index with a tree, not in memory: its first request loads it.
    Unloaded,
    /// Loaded, every body served from disk (the budget left none for it).
    Disk,
    /// Loaded, bodies in memory (those past the budget from disk).
    Memory,
    /// Its tree (or its value with this tree) was refused: `error` says why; it answers 503.
    Refused,
    /// In the index, no tree yet (`DIR/content/<id>/current` absent): 503.
    Missing,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Unloaded => "unloaded",
            State::Disk => "disk",
            State::Memory => "memory",
            State::Refused => "refused",
            State::Missing => "missing",
        }
    }

    pub const ALL: [State; 5] = [State::Unloaded, State::Disk, State::Memory, State::Refused, State::Missing];
}

/// What a slot serves now.
#[derive(Clone)]
pub enum Serve {
    Table(Arc<Table>),
    /// In the index with a tree, not loaded: the first request asks for a load.
    Load,
    /// No tree yet, a refused tree, or a load under way: 503.
    Unavailable,
}

/// One site as the workers see it: held by value in the snapshot's chunks, with what every request reads of the
/// site (its counters' lines, what it serves, its rate share) one pointer away at most, not behind its `Cell`.
#[derive(Clone)]
pub struct Slot {
    pub cell: Arc<Cell>,
    /// The cell's counters (the same lines).
    pub counters: counters::SiteCounters,
    pub serve: Serve,
    /// This worker's share of `requestsPerSecond` (limits.rs).
    pub rps_share: u32,
}

impl Slot {
    /// What names the site in a worker's per-client buckets (answer/limit.rs): its cell's address, the site's
    /// while it is in the pool, across reloads of its table, and needing no hashing of the site's id.
    #[inline]
    pub fn key(&self) -> u64 {
        Arc::as_ptr(&self.cell) as u64
    }
}

/// What the workers read: every host → slot, and the slots.
#[derive(Default)]
pub struct Snapshot {
    pub hosts: Arc<hosts::Hosts>,
    pub slots: Slots,
}

/// The slots of a snapshot in chunks of `CHUNK`: a site's change rebuilds its chunk and the list of chunks (a
/// pointer per `CHUNK` sites), not a list of every site. A pool of 10,000 sites whose sites load one after the
/// other publishes a snapshot per load, and the worker that drops the last copy of the one before pays for its
/// list: with chunks, a publish copies and drops 157 pointers and one chunk instead of 10,000 pointers. A chunk
/// holds its slots by value (a slot is a few pointers), so the host map's answer leads to the slot directly.
#[derive(Default, Clone)]
pub struct Slots {
    chunks: Vec<Arc<[Slot]>>,
}

/// Sites per chunk of `Slots`.
pub const CHUNK: usize = 64;

impl Slots {
    /// The slot at `i` (an index the host map gave: always in range for the snapshot that holds both).
    #[inline]
    pub fn get(&self, i: usize) -> &Slot {
        &self.chunks[i / CHUNK][i % CHUNK]
    }

    /// These slots with the chunks marked in `dirty` rebuilt from `all` (the same sites in the same order).
    pub fn with_changes(&self, all: &[Slot], dirty: &[bool]) -> Slots {
        let chunks = all
            .chunks(CHUNK)
            .enumerate()
            .map(|(c, part)| match self.chunks.get(c) {
                Some(old) if !dirty.get(c).copied().unwrap_or(true) && old.len() == part.len() => old.clone(),
                _ => Arc::from(part),
            })
            .collect();
        Slots { chunks }
    }
}

/// Where a request goes.
pub enum Route<'s> {
    /// Answer it from this table, counting it on this slot's counters.
    Site(&'s Slot, &'s Table),
    /// Answer it with this status (404 for an unknown host, no site; 503 or 429 with `Retry-After: 1`).
    Status(Option<&'s Slot>, u16),
    /// The site is being loaded (its quick load is a walk away): a worker may hold the request a moment for it,
    /// else it is a 503 with `Retry-After: 1`.
    Load(&'s Slot),
}

/// The pool as the process shares it: the snapshot, the wake flag, and the registry's report for the admin port.
pub struct Pool {
    pub snapshot: Published<Snapshot>,
    /// Some site's `want` was set: the pool thread looks for loads to make.
    pub wake: AtomicBool,
    /// Written with the wake flag, so that the pool thread, polling it, starts the load at once (and sleeps
    /// otherwise); -1 if the kernel gave none (the thread then polls the flag every `watch::POLL_MS`).
    pub wake_fd: std::os::fd::RawFd,
    /// What `/sites` and the metrics show, rebuilt by the pool thread on every change (report.rs).
    pub report: Mutex<Arc<report::Report>>,
}

impl Default for Pool {
    fn default() -> Self {
        Pool {
            snapshot: Published::new(Arc::new(Snapshot::default())),
            wake: AtomicBool::new(false),
            wake_fd: crate::sys::io::eventfd(),
            report: Mutex::new(Arc::new(report::Report::default())),
        }
    }
}

impl Drop for Pool {
    fn drop(&mut self) {
        if self.wake_fd >= 0 {
            crate::sys::close(self.wake_fd);
        }
    }
}

impl Pool {
    /// Asks the pool thread to look for sites to load (a worker, once per cold site).
    fn wake(&self) {
        self.wake.store(true, Ordering::Release);
        if self.wake_fd >= 0 {
            // A full counter (never, at one write per load) only means the thread is already due to wake.
            let _ = crate::sys::io::write(self.wake_fd, &1u64.to_ne_bytes());
        }
    }
}

impl Snapshot {
    /// The route of a request for `host` on `worker` at second `now_s`. The rate limit is checked first, so a
    /// site past its share costs no more than a lookup; an unloaded site's first request asks for its load.
    #[inline]
    pub fn route(&self, pool: &Pool, host: Option<&[u8]>, worker: usize, now_s: u32) -> Route<'_> {
        let Some(i) = self.hosts.find(host) else { return Route::Status(None, 404) };
        let slot = self.slots.get(i as usize);
        let w = slot.counters.of(worker);
        if !w.window.admit(now_s, slot.rps_share) {
            crate::counters::bump(&w.rate_limited, 1);
            return Route::Status(Some(slot), 429);
        }
        match &slot.serve {
            Serve::Table(t) => Route::Site(slot, t),
            Serve::Load => {
                let cell = &*slot.cell;
                if !cell.want.load(Ordering::Relaxed) {
                    cell.want.store(true, Ordering::Release);
                    pool.wake();
                }
                Route::Load(slot)
            }
            Serve::Unavailable => Route::Status(Some(slot), 503),
        }
    }
}
