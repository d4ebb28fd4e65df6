//! The pool thread's record of every site (pool/mod.rs has the design): the index read into entries, each site's
//! state (`unloaded`, `disk`, `memory`, `refused`, `missing`), its table while loaded, and what `/sites` reports.
//! Only the pool thread holds a `Registry`; the workers see what `publish` makes of it.
//!
//! A site's entry keeps its `Cell` (counters) across reloads, and its slot is made from the entry (`slot_of`)
//! whenever the entry changes; an index change that leaves a site's value and limits alone leaves its table
//! alone, and a reload of one site replaces one slot.
//!
//! **Who gets memory** (the budget, site/memory.rs). A site's first request makes its quick load (served from
//! disk). Its full load (bodies in memory) follows at once only while the budget has room for it beside the loaded
//! sites; once the budget is full, a site takes memory from others only when it is asked for in two looks in a row
//! (seconds, `tick`) and every site that would leave memory for it is less than half as hot (`heat`: requests per
//! look, halved at each look). A site asked for now and then (the long tail of a pool) therefore stays on disk
//! instead of trading places with another site of the tail at each request: each trade cost a full load and a
//! walk of the site that left, and on a 10,000-site mix they took most of the server's CPU (docs/bench/pools-*).

use std::collections::{BTreeMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::counters::SiteCounters;
use super::full::{self, FullLoads};
use super::hosts::Hosts;
use super::index::{self, Index, Reading};
use super::report::{Report, SiteReport};
pub use super::State;

/// How a load reads a tree.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// Walk, open and stat every file, read none: every body served from disk, ETags from metadata
    /// (loader.rs `etag_from_metadata`). What a site serves first, so that a big tree is not read whole first.
    Quick,
    /// The full load: bodies read and hashed, held in memory within the budget the other sites leave.
    Full,
}
use super::{limits, Cell, Pool, Serve, Slot, Slots, Snapshot, CHUNK};
use crate::log::{self, V};
use crate::site::content::Table;
use crate::site::loader::{self, Settings};
use crate::site::memory::Budget;
use crate::site_value::Revised;

struct Entry {
    site: Arc<index::Site>,
    cell: Arc<Cell>,
    /// Its slot's place in the snapshot (the order of `entries` at the last index read).
    index: usize,
    state: State,
    table: Option<Arc<Table>>,
    files: usize,
    /// Content in memory plus the table's own cost: what the site is charged against the budget.
    memory_bytes: u64,
    /// The table's own cost (part of `memory_bytes`): what stays charged when its content leaves memory.
    table_bytes: u64,
    /// The tree's identity bytes (what a full load would like to hold).
    bytes: u64,
    content_revision: Option<String>,
    /// The value revision the loaded table was built with.
    loaded_value: Option<String>,
    /// The table is a quick load's (every body on disk, ETags from metadata): a full load may follow.
    quick: bool,
    /// Loads made (`/sites` `loads`).
    loads: u64,
    error: Option<String>,
    /// Requests seen at the last look, and the look at which it last had any (eviction: coldest first).
    seen_requests: u64,
    last_used: u64,
    /// Requests per look, halved at each look (`tick`): who is hotter when memory is short.
    heat: u64,
    /// Looks in a row with requests.
    streak: u32,
    /// In `upgrades`.
    queued: bool,
    /// What `/sites` shows of it, until it changes (None: to be made at the next report).
    report: Option<Arc<SiteReport>>,
    /// Bumped by every change of its state or table: a full load made meanwhile on the full loads' thread no
    /// longer applies.
    gen: u64,
}

/// The heat from which a site served from disk is read into memory: asked for more than once a look (a second),
/// as `heat` counts (halved, rounded down, at each look). A full load reads and hashes the whole tree: worth it
/// for a site that is asked for again and again, not for one of the long tail asked for now and then.
const SECOND_ASK: u64 = 2;

/// The full load under way on the full loads' thread.
struct InFlight {
    id: String,
    /// The room made for it (charged as used until it comes back).
    room: u64,
    why: &'static str,
    value: Revised,
    limits: index::Limits,
}

pub struct Registry {
    index_dir: PathBuf,
    content_dir: PathBuf,
    /// The process's load settings; each load sets the root and the budget left.
    settings: Settings,
    workers: usize,
    /// How the index's values are read (TLS, access files).
    reading: Reading,
    index: Index,
    entries: BTreeMap<String, Entry>,
    hosts: Arc<Hosts>,
    problems: Vec<String>,
    /// Looks taken (`tick`): the clock of `last_used`.
    looks: u64,
    /// Sites served from a quick load, waiting for their full one (one per pool-thread turn, `upgrade_one`).
    upgrades: VecDeque<String>,
    /// The sum of the entries' `memory_bytes`.
    total: u64,
    /// Every entry's slot by `index`, the snapshot last published, and its chunks changed since.
    slots: Vec<Slot>,
    published: Slots,
    dirty: Vec<bool>,
    /// The full loads' thread (None: full loads are made on the calling thread, as the unit tests want).
    full: Option<FullLoads>,
    in_flight: Option<InFlight>,
}

impl Registry {
    /// `dir` holds `index/` and `content/`.
    pub fn new(dir: &Path, settings: Settings, workers: usize, reading: Reading) -> Registry {
        Registry {
            index_dir: dir.join("index"),
            content_dir: dir.join("content"),
            settings,
            workers,
            reading,
            index: Index::default(),
            entries: BTreeMap::new(),
            hosts: Arc::new(Hosts::default()),
            problems: Vec::new(),
            looks: 0,
            upgrades: VecDeque::new(),
            total: 0,
            slots: Vec::new(),
            published: Slots::default(),
            dirty: Vec::new(),
            full: None,
            in_flight: None,
        }
    }

    /// Full loads from now on run on their own thread, which wakes the pool thread through `wake_fd`.
    pub fn full_loads_on_a_thread(&mut self, wake_fd: std::os::fd::RawFd) {
        self.full = Some(FullLoads::start(wake_fd));
    }

    pub fn index_dir(&self) -> &Path {
        &self.index_dir
    }

    /// `DIR/content/.ready`, where the puller says which site it flipped.
    pub fn ready_dir(&self) -> PathBuf {
        self.content_dir.join(".ready")
    }

    fn tree(&self, id: &str) -> PathBuf {
        self.content_dir.join(id).join("current")
    }

    fn content_revision(&self, id: &str) -> Option<String> {
        std::fs::read_link(self.tree(id)).ok().and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
    }

    /// Reads the index again: new sites enter unloaded (or missing), sites gone are dropped with their tables,
    /// a site whose value or limits changed is reloaded if it was loaded; the others keep everything.
    pub fn read_index(&mut self) {
        let merged = self.index.read(&self.index_dir, &self.reading);
        for p in &merged.problems {
            if !self.problems.contains(p) {
                log::error("pool index problem", &[("problem", V::S(p))]);
            }
        }
        self.problems = merged.problems;
        let mut old = std::mem::take(&mut self.entries);
        let mut reload = Vec::new();
        for site in merged.sites {
            let id = site.id.clone();
            match old.remove(&id) {
                Some(mut e) => {
                    let changed = e.site.value.revision != site.value.revision || e.site.limits != site.limits;
                    e.site = site;
                    if changed && matches!(e.state, State::Disk | State::Memory | State::Refused) {
                        reload.push(id.clone());
                    }
                    self.entries.insert(id, e);
                }
                None => {
                    let cell = Arc::new(Cell {
                        id: id.as_str().into(),
                        counters: SiteCounters::new(self.workers),
                        want: Default::default(),
                    });
                    let state = if self.tree(&id).exists() { State::Unloaded } else { State::Missing };
                    let content_revision = self.content_revision(&id);
                    log::info("pool site added", &[("site", V::S(&id)), ("state", V::S(state.name()))]);
                    self.entries.insert(
                        id,
                        Entry {
                            site,
                            cell,
                            index: 0,
                            state,
                            table: None,
                            files: 0,
                            memory_bytes: 0,
                            table_bytes: 0,
                            bytes: 0,
                            content_revision,
                            loaded_value: None,
                            quick: false,
                            loads: 0,
                            error: None,
                            seen_requests: 0,
                            last_used: self.looks,
                            heat: 0,
                            streak: 0,
                            queued: false,
                            report: None,
                            gen: 0,
                        },
                    );
                }
            }
        }
        for id in old.keys() {
            log::info("pool site removed", &[("site", V::S(id))]);
        }
        for (i, e) in self.entries.values_mut().enumerate() {
            (e.index, e.report) = (i, None);
        }
        self.total = self.entries.values().map(|e| e.memory_bytes).sum();
        // Every slot made anew from its entry: a changed requestsPerSecond changes its share.
        self.slots = self.entries.values().map(|e| slot_of(e, self.workers)).collect();
        self.published = Slots::default();
        self.dirty = vec![true; self.slots.len().div_ceil(CHUNK)];
        let pairs =
            self.entries.values().enumerate().flat_map(|(i, e)| e.site.hosts.iter().map(move |h| (h, i as u32)));
        self.hosts = Arc::new(Hosts::build(pairs));
        for id in reload {
            self.load(&id, "index", Phase::Quick);
        }
    }

    fn set(&mut self, id: &str, state: State, table: Option<Arc<Table>>) {
        let Some(e) = self.entries.get_mut(id) else { return };
        (e.state, e.table) = (state, table);
        (e.gen, e.report) = (e.gen + 1, None);
        if let Some(s) = self.slots.get_mut(e.index) {
            *s = slot_of(e, self.workers);
            self.dirty[e.index / CHUNK] = true;
        }
        if state == State::Unloaded {
            // A request that came while it was loaded asks anew.
            e.cell.want.store(false, Ordering::Release);
        }
        if e.table.is_none() {
            self.total -= e.memory_bytes;
            (e.files, e.memory_bytes, e.table_bytes) = (0, 0, 0);
        }
    }

    /// The puller flipped (or removed) `id`'s tree: a loaded or refused site loads again now; an unloaded one
    /// stays unloaded (its next request loads the new tree); a missing one becomes unloaded.
    pub fn ready(&mut self, id: &str) {
        let Some(e) = self.entries.get(id) else { return };
        let exists = self.tree(id).exists();
        match (e.state, exists) {
            (_, false) => self.set(id, State::Missing, None),
            (State::Disk | State::Memory | State::Refused, true) => self.load(id, ".ready", Phase::Quick),
            (State::Missing, true) => self.set(id, State::Unloaded, None),
            (State::Unloaded, true) => {}
        }
        let rev = self.content_revision(id);
        if let Some(e) = self.entries.get_mut(id) {
            (e.content_revision, e.report) = (rev, None);
        }
    }

    /// Loads every site a request asked for.
    pub fn load_wanted(&mut self) {
        let wanted: Vec<String> = self
            .entries
            .iter()
            .filter(|(_, e)| e.cell.want.load(Ordering::Acquire) && e.state == State::Unloaded)
            .map(|(id, _)| id.clone())
            .collect();
        for id in wanted {
            if let Some(e) = self.entries.get(&id) {
                e.cell.want.store(false, Ordering::Release);
            }
            self.load(&id, "request", Phase::Quick);
        }
    }

    /// Bytes the loaded sites other than `but` are charged, and the room held for a full load under way.
    fn used(&self, but: &str) -> u64 {
        let own = self.entries.get(but).map_or(0, |e| e.memory_bytes);
        let flying = self.in_flight.as_ref().map_or(0, |f| f.room);
        (self.total - own).saturating_add(flying)
    }

    /// The coldest site with bodies in memory other than `keep`: the least heat, then the longest unasked.
    fn coldest_in_memory(&self, keep: &str) -> Option<(&String, &Entry)> {
        self.entries
            .iter()
            .filter(|(id, e)| id.as_str() != keep && e.table.is_some() && e.state == State::Memory)
            .min_by_key(|(_, e)| (e.heat, e.last_used))
    }

    /// Makes room for `room` more bytes (for `keep`), of which `table` are its table's own cost. Content leaves
    /// first: the coldest site with bodies in memory goes back to a quick load (served from disk, its table kept),
    /// until the loaded sites fit or none holds content. A site served from disk costs only its table (no open
    /// file: its bodies are paths), so it stays loaded and its next request is answered without a reload; only
    /// when the tables alone are past the budget does the coldest disk site's table go (`unload_for`).
    fn evict_for(&mut self, keep: &str, room: u64, table: u64) {
        let Some(budget) = self.settings.budget.budget else { return };
        while self.used(keep).saturating_add(room) > budget {
            let Some((id, before)) = self.coldest_in_memory(keep).map(|(id, e)| (id.clone(), e.memory_bytes)) else {
                break;
            };
            log::info("pool site leaves memory: the budget needs its room", &[("site", V::S(&id))]);
            let (last_used, heat) = (self.entries[&id].last_used, self.entries[&id].heat);
            self.read(&id, "evicted", Phase::Quick, Some(0));
            if let Some(e) = self.entries.get_mut(&id) {
                // Still the coldest: a reload for room is no use.
                (e.last_used, e.heat) = (last_used, heat);
            }
            if !self.entries.get(&id).is_some_and(|e| e.table.is_some() && e.memory_bytes < before) {
                log::info("pool site unloaded: the budget needs its room", &[("site", V::S(&id))]);
                self.set(&id, State::Unloaded, None);
            }
        }
        self.unload_for(keep, budget, table);
    }

    /// Unloads the coldest loaded sites other than `keep` while the loaded sites and `table` more bytes are past
    /// `budget` (what is left after content has left memory: tables the budget cannot hold).
    fn unload_for(&mut self, keep: &str, budget: u64, table: u64) {
        while self.used(keep).saturating_add(table) > budget {
            let coldest = self
                .entries
                .iter()
                .filter(|(id, e)| id.as_str() != keep && e.table.is_some())
                .min_by_key(|(_, e)| (e.last_used, e.state == State::Memory))
                .map(|(id, _)| id.clone());
            let Some(id) = coldest else { return };
            log::info("pool site unloaded: the budget cannot hold its table", &[("site", V::S(&id))]);
            self.set(&id, State::Unloaded, None);
        }
    }

    /// Whether the pool thread has a full load to start (none is under way and one waits).
    pub fn upgrades_pending(&self) -> bool {
        self.in_flight.is_none() && !self.upgrades.is_empty()
    }

    /// Whether `id`'s full load may take memory now: it fits beside the loaded sites, or it was asked for in two
    /// looks in a row and every site that would leave memory for it (coldest first, as `evict_for` takes them) is
    /// less than half as hot.
    fn admit(&self, id: &str) -> bool {
        let Some(budget) = self.settings.budget.budget else { return true };
        let Some(e) = self.entries.get(id) else { return false };
        let need = self.used(id).saturating_add(e.bytes.saturating_add(e.memory_bytes));
        if need <= budget {
            return true;
        }
        if e.streak < 2 {
            return false;
        }
        let mut others: Vec<&Entry> = self
            .entries
            .iter()
            .filter(|(k, v)| k.as_str() != id && v.table.is_some() && v.state == State::Memory)
            .map(|(_, v)| v)
            .collect();
        others.sort_unstable_by_key(|v| (v.heat, v.last_used));
        let mut over = need - budget;
        for v in others {
            if v.heat.saturating_mul(2) >= e.heat {
                return false;
            }
            over = over.saturating_sub(v.memory_bytes - v.table_bytes);
            if over == 0 {
                return true;
            }
        }
        false
    }

    /// Starts the next full load that may take memory now, if none is under way (the pool thread calls it when
    /// it has nothing else to do; with the full loads' thread, a cold site's quick load never waits for one).
    pub fn upgrade_one(&mut self) -> bool {
        if self.in_flight.is_some() {
            return false;
        }
        while let Some(id) = self.upgrades.pop_front() {
            if let Some(e) = self.entries.get_mut(&id) {
                e.queued = false;
            }
            if self.entries.get(&id).is_some_and(|e| e.quick && e.table.is_some()) && self.admit(&id) {
                self.load(&id, "full load", Phase::Full);
                return true;
            }
        }
        false
    }

    /// Installs the full load the thread finished, if any; true when one came back (installed or stale).
    pub fn finish_full(&mut self) -> bool {
        let Some(done) = self.full.as_ref().and_then(|f| f.finished()) else { return false };
        let Some(f) = self.in_flight.take() else { return true };
        debug_assert_eq!(f.id, done.id);
        if self.entries.get(&done.id).is_some_and(|e| e.gen == done.gen) {
            self.install(&done.id, f.why, Phase::Full, f.value, f.limits, done.result, done.ms);
            // Quick loads made while it ran took their room too: the coldest leave for the sites asked for.
            let cost = self.entries.get(&done.id).map_or(0, |e| e.memory_bytes);
            self.evict_for(&done.id, cost, cost);
        }
        true
    }

    /// Loads `id`'s tree with its value, checked against its limits. A quick load serves the site from disk; its
    /// full load comes when the site is asked for again (`tick`). A full load first makes room for what the site
    /// held (coldest sites leave memory first), then takes the budget the other loaded sites leave (files past it
    /// are served from disk).
    pub fn load(&mut self, id: &str, why: &'static str, phase: Phase) {
        let Some(e) = self.entries.get(id) else { return };
        let budget = match phase {
            Phase::Quick => Some(0),
            Phase::Full => {
                // Its whole tree and what its table costs now: the newest asked for is the hottest.
                let room = e.bytes.saturating_add(e.memory_bytes).max(1);
                self.evict_for(id, room, e.memory_bytes);
                let budget = self.settings.budget.budget.map(|b| b.saturating_sub(self.used(id)));
                if self.full.is_some() {
                    self.send_full(id, why, budget, room);
                    return;
                }
                budget
            }
        };
        self.read(id, why, phase, budget);
        if phase == Phase::Quick {
            // A quick load's table costs memory too (entries, header blocks, open files): the others make room.
            let cost = self.entries.get(id).map_or(0, |e| e.memory_bytes);
            self.evict_for(id, cost, cost);
        }
    }

    /// Hands `id`'s full load to the full loads' thread.
    fn send_full(&mut self, id: &str, why: &'static str, budget: Option<u64>, room: u64) {
        let Some(e) = self.entries.get(id) else { return };
        let root = self.tree(id);
        let settings = self.load_settings(root, Phase::Full, budget);
        let (value, limits, gen) = (e.site.value.clone(), e.site.limits, e.gen);
        self.in_flight = Some(InFlight { id: id.to_string(), room, why, value: value.clone(), limits });
        if let Some(f) = &self.full {
            f.send(full::Job { id: id.to_string(), gen, settings, value: value.value });
        }
    }

    fn load_settings(&self, root: PathBuf, phase: Phase, budget: Option<u64>) -> Settings {
        Settings {
            root,
            budget: Budget { limit: self.settings.budget.limit, budget },
            etag_from_metadata: phase == Phase::Quick,
            // Descriptors must not grow with the pool's sites and files: disk bodies are paths, opened per response.
            disk_by_path: true,
            // A quick load has every body on disk: its table's cost is measured, not planned (loader.rs).
            all_on_disk: phase == Phase::Quick,
            ..self.settings.clone()
        }
    }

    /// One load of `id`'s tree with a content budget of `budget` (None: unlimited); the result installed (or the
    /// site refused, or missing).
    fn read(&mut self, id: &str, why: &str, phase: Phase, budget: Option<u64>) {
        let Some(e) = self.entries.get(id) else { return };
        let root = self.tree(id);
        if !root.exists() {
            self.set(id, State::Missing, None);
            return;
        }
        let (value, lim) = (e.site.value.clone(), e.site.limits);
        let settings = self.load_settings(root, phase, budget);
        let started = std::time::Instant::now();
        let result = loader::load(&settings, &value.value, None, &mut |_| {});
        self.install(id, why, phase, value, lim, result, started.elapsed().as_millis() as u64);
    }

    /// Installs a load's result: the table and its charge, or the site refused.
    #[allow(clippy::too_many_arguments)]
    fn install(
        &mut self,
        id: &str,
        why: &str,
        phase: Phase,
        value: Revised,
        lim: index::Limits,
        result: Result<(Table, loader::Report), String>,
        ms: u64,
    ) {
        let refused = match &result {
            Err(e) => Some(e.clone()),
            Ok((_, r)) if !r.missing_pages.is_empty() => Some(format!("site value: {}", r.missing_pages.join("; "))),
            Ok((_, r)) if r.files as u64 > lim.max_files => {
                Some(format!("{} files, more than maxFiles {}", r.files, lim.max_files))
            }
            Ok((_, r)) if r.bytes > lim.max_bytes => {
                Some(format!("{} bytes, more than maxBytes {}", r.bytes, lim.max_bytes))
            }
            Ok(_) => None,
        };
        let rev = self.content_revision(id);
        match (refused, result) {
            (Some(why_refused), _) => {
                log::error(
                    "pool site refused",
                    &[("site", V::S(id)), ("reason", V::S(why)), ("error", V::S(&why_refused))],
                );
                self.set(id, State::Refused, None);
                let e = self.entries.get_mut(id).expect("looked up above");
                (e.error, e.content_revision, e.report) = (Some(why_refused), rev, None);
            }
            (None, Ok((mut table, r))) => {
                // Skew protection, as for a single site (skew/attach.rs): the previous trees listed in
                // `deploys.json` beside the entry's `current`. Only production's Store in a site's own pods has
                // one (the puller writes none for a preview, the pool puller none for a pool site).
                if let Some(window) = value.value.skew_window {
                    table.skew = crate::skew::attach::previous_deploys(&self.tree(id), window, why, Some(id));
                }
                let state = if r.memory_bytes > 0 { State::Memory } else { State::Disk };
                let table_bytes = table.table_bytes;
                let cost = r.memory_bytes.saturating_add(table_bytes);
                log::info(
                    "pool site loaded",
                    &[
                        ("site", V::S(id)),
                        ("reason", V::S(why)),
                        ("phase", V::S(if phase == Phase::Quick { "quick" } else { "full" })),
                        ("files", V::U(r.files as u64)),
                        ("memory_bytes", V::U(r.memory_bytes)),
                        ("disk_files", V::U(r.disk_files as u64)),
                        ("ms", V::U(ms)),
                    ],
                );
                self.set(id, state, Some(Arc::new(table)));
                let e = self.entries.get_mut(id).expect("looked up above");
                self.total = self.total - e.memory_bytes + cost;
                (e.files, e.memory_bytes, e.table_bytes, e.bytes, e.error, e.content_revision) =
                    (r.files, cost, table_bytes.min(cost), r.bytes, None, rev);
                e.loaded_value = Some(value.revision);
                e.quick = phase == Phase::Quick;
                e.last_used = self.looks;
                e.loads += 1;
                e.report = None;
            }
            (None, Err(_)) => unreachable!("a failed load is refused above"),
        }
    }

    /// Once a second: which sites were asked for since the last look (the eviction order, each site's heat).
    /// A site served from disk that was asked for since the last look, and asked for more than once lately (its
    /// heat at least `SECOND_ASK`: a site of the long tail asked for once is served from disk, never read whole),
    /// goes to memory when the budget has room for it without making anyone leave (so two hot sites over the
    /// budget do not trade places each second), or, asked for in two looks in a row, when it is more than twice
    /// as hot as the coldest site in memory (`admit` decides when its turn comes).
    pub fn tick(&mut self) {
        self.looks += 1;
        let mut asked = Vec::new();
        let mut coldest = u64::MAX;
        for (id, e) in self.entries.iter_mut() {
            let n = e.cell.counters.totals().requests();
            let new = n.saturating_sub(e.seen_requests);
            e.heat = e.heat / 2 + new;
            if n != e.seen_requests {
                (e.seen_requests, e.last_used) = (n, self.looks);
                e.streak = e.streak.saturating_add(1);
                if e.quick && e.table.is_some() {
                    asked.push(id.clone());
                }
            } else {
                e.streak = 0;
            }
            if e.state == State::Memory && e.table.is_some() {
                coldest = coldest.min(e.heat);
            }
        }
        let budget = self.settings.budget.budget.unwrap_or(u64::MAX);
        for id in asked {
            let e = &self.entries[&id];
            if e.heat < SECOND_ASK {
                continue;
            }
            let fits = self.used("").saturating_add(e.bytes) < budget;
            let hotter = e.streak >= 2 && e.heat > coldest.saturating_mul(2);
            if (fits || hotter) && !e.queued {
                self.entries.get_mut(&id).expect("looked up above").queued = true;
                self.upgrades.push_back(id);
            }
        }
    }

    /// Publishes the snapshot the workers read: the host map and the slots, only the chunks that changed rebuilt.
    pub fn publish_snapshot(&mut self, pool: &Pool) {
        self.published = self.published.with_changes(&self.slots, &self.dirty);
        self.dirty.iter_mut().for_each(|d| *d = false);
        let snap = Snapshot { hosts: self.hosts.clone(), slots: self.published.clone() };
        pool.snapshot.set(Arc::new(snap));
    }

    /// Publishes the report the admin port shows (after the snapshot it describes: the pool thread may publish it
    /// later than the snapshot, never before). Only the sites changed since the last report are made again.
    pub fn publish_report(&mut self, pool: &Pool) {
        let sites = self
            .entries
            .values_mut()
            .map(|e| {
                if e.report.is_none() {
                    e.report = Some(Arc::new(report_of(e)));
                }
                e.report.clone().expect("made above")
            })
            .collect();
        *pool.report.lock().unwrap_or_else(|e| e.into_inner()) =
            Arc::new(Report { sites, problems: self.problems.clone() });
    }

    /// Publishes both (tests, and the first read).
    pub fn publish(&mut self, pool: &Pool) {
        self.publish_snapshot(pool);
        self.publish_report(pool);
    }

    /// The state of `id` (tests).
    pub fn state(&self, id: &str) -> Option<State> {
        self.entries.get(id).map(|e| e.state)
    }
}

/// What `/sites` shows of a site.
fn report_of(e: &Entry) -> SiteReport {
    SiteReport {
        cell: e.cell.clone(),
        state: e.state,
        // Published after the snapshot that holds it: the host map it names is the one the workers read.
        entry_revision: e.site.entry_revision.clone(),
        value_revision: e.loaded_value.clone().unwrap_or_else(|| e.site.value.revision.clone()),
        content_revision: e.content_revision.clone(),
        files: e.files,
        memory_bytes: e.memory_bytes,
        loads: e.loads,
        error: e.error.clone(),
    }
}

/// What the workers see of `e`: its slot, made from its cell, limits, state and table.
fn slot_of(e: &Entry, workers: usize) -> Slot {
    let rps_share = limits::share(e.site.limits.requests_per_second, workers);
    Slot { cell: e.cell.clone(), counters: e.cell.counters.clone(), serve: serve_of(e.state, &e.table), rps_share }
}

fn serve_of(state: State, table: &Option<Arc<Table>>) -> Serve {
    match (state, table) {
        (State::Disk | State::Memory, Some(t)) => Serve::Table(t.clone()),
        (State::Unloaded, _) => Serve::Load,
        _ => Serve::Unavailable,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::site::content::Target;
    use std::os::unix::fs::symlink;

    fn pool_dir(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("hs-pool-registry-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(d.join("index")).unwrap();
        std::fs::create_dir_all(d.join("content/a.one/r1")).unwrap();
        std::fs::write(d.join("content/a.one/r1/index.html"), "one").unwrap();
        symlink("r1", d.join("content/a.one/current")).unwrap();
        let site = |id: &str, host: &str| {
            format!(
                r#"{{"id":"{id}","hosts":["{host}"],"value":{{"version":1}},"limits":{{"maxFiles":10,"maxBytes":1000,"requestsPerSecond":10}}}}"#
            )
        };
        let shard =
            format!(r#"{{"version":1,"sites":[{},{}]}}"#, site("a.one", "one.example"), site("b.two", "two.example"));
        std::fs::write(d.join("index/index-00.json"), shard).unwrap();
        d
    }

    fn body_of(r: &Registry, id: &str) -> (bool, Box<[u8]>) {
        let t = r.entries[id].table.as_ref().unwrap();
        let Some(Target::File(i)) = t.lookup(b"/") else { panic!("/ in the table") };
        let v = t.entry(i).identity();
        (v.body.on_disk(), v.etag.clone())
    }

    #[test]
    fn a_site_serves_its_quick_load_from_disk_then_its_full_load_from_memory() {
        let d = pool_dir("phases");
        let mut r = Registry::new(&d, Settings::for_root(&d), 2, Reading::default());
        r.read_index();
        assert_eq!((r.state("a.one"), r.state("b.two")), (Some(State::Unloaded), Some(State::Missing)));
        r.load("a.one", "test", Phase::Quick);
        assert_eq!(r.state("a.one"), Some(State::Disk));
        let (disk, quick_etag) = body_of(&r, "a.one");
        assert!(disk, "a quick load reads no body");
        let cell = r.entries["a.one"].cell.clone();
        cell.counters.count(0, 200, 1);
        r.tick();
        assert!(!r.upgrade_one(), "asked for once: served from disk");
        cell.counters.count(0, 200, 1);
        cell.counters.count(0, 200, 1);
        r.tick();
        assert!(r.upgrade_one(), "asked for again: the full load was queued");
        assert_eq!(r.state("a.one"), Some(State::Memory));
        let (disk, full_etag) = body_of(&r, "a.one");
        assert!(!disk);
        assert_ne!(quick_etag, full_etag, "ETags from metadata, then from content");
        assert!(!r.upgrade_one(), "nothing else waits");

        // The snapshot: hosts to slots, each slot what its site serves.
        let pool = Pool::default();
        r.publish(&pool);
        let (snap, _) = pool.snapshot.get();
        assert!(matches!(snap.route(&pool, Some(b"one.example"), 0, 1), crate::pool::Route::Site(..)));
        assert!(matches!(snap.route(&pool, Some(b"two.example"), 0, 1), crate::pool::Route::Status(Some(_), 503)));
        assert!(matches!(snap.route(&pool, Some(b"three.example"), 0, 1), crate::pool::Route::Status(None, 404)));
        let _ = std::fs::remove_dir_all(&d);
    }

    /// Skew protection per entry (skew/attach.rs): an entry whose value sets a window gets the previous trees
    /// listed beside its own `current`, in quick and full loads alike; an entry with no list (a preview, a pool
    /// site) gets none, and neither does one whose value sets no window, list or not.
    #[test]
    fn an_entry_gets_the_previous_trees_listed_beside_its_own_tree_only() {
        let d = pool_dir("skew");
        let hex = |c: char| std::iter::repeat_n(c, 40).collect::<String>();
        let (cur, old) = (hex('b'), hex('a'));
        for (id, tree) in [("a.one", &cur), ("a.one", &old), ("b.two", &cur)] {
            std::fs::create_dir_all(d.join("content").join(id).join(tree)).unwrap();
            std::fs::write(d.join("content").join(id).join(tree).join("index.html"), "x").unwrap();
        }
        for id in ["a.one", "b.two"] {
            let _ = std::fs::remove_file(d.join("content").join(id).join("current"));
            symlink(&cur, d.join("content").join(id).join("current")).unwrap();
        }
        let list = format!(
            r#"{{"deploys":[{{"tree":"{cur}","commit":"{cur}"}},{{"tree":"{old}","commit":"{old}","servedUntil":"2999-01-01T00:00:00Z"}}]}}"#
        );
        std::fs::write(d.join("content/a.one/deploys.json"), list).unwrap();
        let site = |id: &str, host: &str, value: &str| {
            format!(
                r#"{{"id":"{id}","hosts":["{host}"],"value":{value},"limits":{{"maxFiles":10,"maxBytes":1000,"requestsPerSecond":10}}}}"#
            )
        };
        let shard = |value: &str| {
            let sites = [site("a.one", "one.example", value), site("b.two", "two.example", value)];
            format!(r#"{{"version":1,"sites":[{}]}}"#, sites.join(","))
        };
        let trees = |r: &Registry, id: &str| r.entries[id].table.as_ref().unwrap().skew.as_ref().map(|p| p.trees.len());
        std::fs::write(d.join("index/index-00.json"), shard(r#"{"version":1,"skewProtection":{"window":"1h"}}"#))
            .unwrap();
        let mut r = Registry::new(&d, Settings::for_root(&d), 1, Reading::default());
        r.read_index();
        for phase in [Phase::Quick, Phase::Full] {
            r.load("a.one", "test", phase);
            r.load("b.two", "test", phase);
            assert_eq!(trees(&r, "a.one"), Some(1), "{phase:?}: the tree before, not the current one");
            assert_eq!(trees(&r, "b.two"), None, "{phase:?}: no list beside its tree");
        }
        std::fs::write(d.join("index/index-00.json"), shard(r#"{"version":1}"#)).unwrap();
        r.read_index();
        assert_eq!(trees(&r, "a.one"), None, "no window: reloaded without");
        let _ = std::fs::remove_dir_all(&d);
    }

    #[test]
    fn the_first_request_of_an_unloaded_site_asks_for_its_load_once() {
        let d = pool_dir("want");
        let mut r = Registry::new(&d, Settings::for_root(&d), 1, Reading::default());
        r.read_index();
        let pool = Pool::default();
        r.publish(&pool);
        let (snap, _) = pool.snapshot.get();
        assert!(matches!(snap.route(&pool, Some(b"one.example"), 0, 1), crate::pool::Route::Load(_)));
        assert!(pool.wake.swap(false, Ordering::AcqRel), "the pool thread is woken");
        let _ = snap.route(&pool, Some(b"one.example"), 0, 1);
        assert!(!pool.wake.load(Ordering::Acquire), "only the first request wakes it");
        r.load_wanted();
        assert_eq!(r.state("a.one"), Some(State::Disk));
        let _ = std::fs::remove_dir_all(&d);
    }
}
