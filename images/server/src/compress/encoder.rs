//! The background encoder: after content is served (identity, plus any `.br`/`.gz`/`.zst` siblings), one thread at
//! `SCHED_IDLE` gives every compressible in-memory file its brotli, zstd and gzip variants and swaps them in.
//! The idle class alone is not enough: under a CFS quota it spends the quota the workers need a moment later, and
//! without one it still evicts their caches. So before each slice of work (each codec of each file, and each cache
//! read) it asks slack.rs, fed with the workers' CPU time and the cgroup's throttling (cgroup_cpu.rs), and pauses
//! while serving needs the CPU, trickling at 0.5 % of capacity meanwhile. Smallest files first (most files
//! compressed soonest), within what the memory budget leaves: a file is started only when the budget holds its
//! encoder's working memory, and what it keeps is charged (`pass`). Each encoding is read from `--compress-cache`
//! when there, written there when made.
//!
//! `pending` (the `hyperstatic_content_encodings_pending` gauge) counts files whose variants are still to come;
//! it is set with each new content and reaches 0 only once every variant that will be made is being served.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::compress::cgroup_cpu::{self, Meter};
use crate::compress::codec;
use crate::compress::encoder_state::State;
use crate::compress::encodings::{self, Encoded};
use crate::compress::slack::{Governor, Verdict};
use crate::counters::bump;
use crate::log::{self, V};
use crate::site::content::Body;
use crate::site::{footprint, loader};
use crate::state::Shared;

/// Encodings made are swapped in at least this often, so a long pass serves what it has.
const PUBLISH_EVERY: Duration = Duration::from_secs(1);

/// Starts the encoder thread (with `--compress`).
pub fn spawn(shared: Arc<Shared>) {
    std::thread::Builder::new()
        .name("encoder".into())
        .spawn(move || {
            lower_priority();
            let mut seen = 0;
            let mut slack = Slack::new(shared.workers);
            loop {
                seen = shared.encoder.wait(seen);
                pass(&shared, seen, &mut slack);
            }
        })
        .expect("spawn encoder thread");
}

/// `SCHED_IDLE` for this thread (Linux applies it per thread); where a profile forbids that, nice 19.
fn lower_priority() {
    if let Err(e) = crate::sys::process::sched_idle() {
        let err = e.to_string();
        crate::sys::process::nice(19);
        log::warn("encoder: SCHED_IDLE refused, running at nice 19", &[("error", V::S(&err))]);
    }
}

/// The encoder's side of slack.rs: the governor, its meter, and the accounting behind the metrics.
struct Slack {
    governor: Governor,
    meter: Meter,
    workers: usize,
}

impl Slack {
    fn new(workers: usize) -> Slack {
        // Capacity: the quota in cores, at most the workers' CPUs; without a quota, the workers' CPUs.
        let (capacity, quota) = match crate::cpus::cgroup_quota() {
            Some(q) => (q.min(workers as f64), true),
            None => (workers as f64, false),
        };
        Slack { governor: Governor::new(capacity, quota), meter: Meter::new(), workers }
    }

    /// Blocks until the governor lets the next slice run (true), or new content arrived (false).
    fn gate(&mut self, st: &State, epoch: u64) -> bool {
        if self.meter.workers() < self.workers {
            self.meter.rescan_workers(); // a worker had not named itself yet when the meter was made
        }
        loop {
            let sample = self.meter.sample();
            st.cpu_ns.store(sample.own_cpu_ns, Ordering::Relaxed);
            match self.governor.decide(sample) {
                Verdict::Run => return true,
                Verdict::Pause(d) => {
                    let t = Instant::now();
                    let same = st.pause(epoch, d);
                    bump(&st.paused_ns, t.elapsed().as_nanos() as u64);
                    if !same {
                        return false;
                    }
                }
            }
        }
    }
}

/// Encodes the files of the current content that want it, publishing as it goes. Returns early when newer
/// content arrives (the next pass starts from it; what was encoded stays in the store).
///
/// memory: it waits for memory as it waits for CPU. What the budget leaves besides the table and its content
/// (`left`) must hold the next file's working memory at its peak (`codec::encoder_work`, which includes its three
/// outputs) before that file is started; what the file keeps (its variants' bytes, its entry's new header blocks,
/// its place in the store: the charge `encodings::attach` makes) is then taken from `left`. Files go smallest
/// first, so the first one that does not fit ends the pass: the rest stay identity until new content (a reload,
/// the only thing that frees memory) starts a pass again.
fn pass(shared: &Shared, epoch: u64, slack: &mut Slack) {
    let st = &shared.encoder;
    let started = Instant::now();
    let (table, _) = shared.table();
    let mut todo: Vec<_> =
        table.entries.iter().filter(|e| encodings::wants_encoding(e) && !st.store.contains(&e.digest)).collect();
    todo.sort_by_key(|e| e.identity().len);
    let mut left = table.memory.budget.map_or(u64::MAX, |b| b.saturating_sub(table.memory_bytes + table.table_bytes));
    let (mut from_cache, mut computed, mut over_budget) = (0u64, 0u64, 0usize);
    let mut last_publish = Instant::now();
    for (k, e) in todo.iter().enumerate() {
        if st.epoch() != epoch {
            return;
        }
        let Body::Mem(data) = &e.identity().body else { continue };
        if st.store.contains(&e.digest) {
            continue; // the same content under another name
        }
        if codec::encoder_work(data.len() as u64) > left {
            over_budget = todo.len() - k;
            break;
        }
        if !slack.gate(st, epoch) {
            return;
        }
        let enc = match st.store.read_disk(&e.digest) {
            Some(enc) => {
                from_cache += 1;
                bump(&st.from_cache, 1);
                enc
            }
            None => {
                let Some(all) = crate::compress::codec::all_gated(data, || slack.gate(st, epoch)) else { return };
                let enc = Encoded::from(all);
                st.store.write_disk(&e.digest, &enc);
                computed += 1;
                bump(&st.computed, 1);
                enc
            }
        };
        let grows = footprint::entry(&loader::with_encodings(e, &enc)).saturating_sub(footprint::entry(e));
        let keeps = enc.bytes() + grows + encodings::STORE_ENTRY;
        if keeps > left {
            over_budget = todo.len() - k;
            break;
        }
        left -= keeps;
        st.store.insert(e.digest, enc);
        if last_publish.elapsed() >= PUBLISH_EVERY {
            publish(shared);
            st.set_pending(epoch, todo.len() - k - 1);
            last_publish = Instant::now();
        }
    }
    st.cpu_ns.store(cgroup_cpu::own_thread_ns(), Ordering::Relaxed);
    publish(shared);
    // Over budget before pending 0: a reader that sees nothing pending also sees how many files wait for memory.
    st.over_budget.store(over_budget as u64, Ordering::Relaxed);
    st.set_pending(epoch, 0);
    st.store.retain(&encodings::digests(&shared.table().0));
    // The codecs' working memory is free again: give it back rather than keep it resident beside the table.
    crate::sys::mem::trim_heap();
    if over_budget > 0 {
        log::warn(
            "encoder: waiting for memory: the budget leaves too little for the next file's encodings; the remaining \
             files are served without compression until the content changes",
            &[("files", V::U(over_budget as u64)), ("budget_left_bytes", V::U(left))],
        );
    }
    log::info(
        "encodings ready",
        &[
            ("files", V::U(todo.len() as u64)),
            ("from_cache", V::U(from_cache)),
            ("computed", V::U(computed)),
            ("ms", V::U(started.elapsed().as_millis() as u64)),
        ],
    );
}

/// Swaps in the current table with every encoding the store holds. A reload that lands in between wins; its
/// table already has them (the loader attaches the store's encodings).
fn publish(shared: &Shared) {
    let (cur, generation) = shared.table();
    let mut t = (*cur).clone();
    drop(cur);
    if encodings::attach(&mut t, &shared.encoder.store) > 0 {
        shared.swap_if(generation, t);
    }
}
