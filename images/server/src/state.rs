//! State shared by workers, the admin listener and the control thread. Workers read the content table
//! through a generation counter: one atomic load per loop iteration, the mutex only when it changed.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use crate::publish::Published;

use crate::compress::encoder_state;
use crate::config::Config;
use crate::site::content::Table;

/// Status codes counted in hyperstatic_requests_total.
/// 204 (OPTIONS, cors.rs), 308 (--https-redirect, redirect rules), 302 and 307 (redirect rules, rules/) came
/// later and sit at the end, so the older slots keep their indexes; so did 429 (a pool site past its requests per
/// second, pool/limits.rs), and 425 (a request in HTTP/3 early data other than GET or HEAD, server/h3_conn.rs).
pub const CODES: [u16; 22] =
    [200, 206, 301, 304, 400, 404, 405, 408, 412, 414, 416, 431, 500, 501, 503, 505, 204, 308, 302, 307, 429, 425];

#[inline]
pub fn code_index(status: u16) -> usize {
    match status {
        200 => 0,
        206 => 1,
        301 => 2,
        304 => 3,
        400 => 4,
        404 => 5,
        405 => 6,
        408 => 7,
        412 => 8,
        414 => 9,
        416 => 10,
        431 => 11,
        501 => 13,
        503 => 14,
        505 => 15,
        204 => 16,
        308 => 17,
        302 => 18,
        307 => 19,
        429 => 20,
        425 => 21,
        _ => 12,
    }
}

/// Counters of one worker. Only that worker writes them (load + store, no locked instruction); the admin
/// thread reads. Aligned so two workers never share a cache line.
#[repr(align(128))]
#[derive(Default)]
pub struct WorkerStats {
    pub requests: [AtomicU64; CODES.len()],
    pub response_bytes: AtomicU64,
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
    /// hyperstatic_request_duration_seconds (timing.rs).
    pub durations: crate::timing::Histogram,
    /// hyperstatic_tls_handshakes_total by outcome.
    pub tls_handshakes_full: AtomicU64,
    pub tls_handshakes_resumed: AtomicU64,
    pub tls_handshake_failures: AtomicU64,
    /// hyperstatic_connections_refused_total{reason="count"}: connections closed at accept because the worker was
    /// at `--max-connections-per-worker` and none of its connections could make room.
    pub connections_refused: AtomicU64,
    /// hyperstatic_connections_evicted_total{reason="count"}: idle or head-less connections closed to make room for
    /// a new one at `--max-connections-per-worker`.
    pub connections_evicted: AtomicU64,
    /// hyperstatic_connections_refused_total{reason="memory"} and hyperstatic_connections_evicted_total{reason=
    /// "memory"}: a new connection closed at accept, or idle connections closed, because the worker's connections
    /// would have held more than its connection memory budget (server/budget.rs).
    pub connections_refused_memory: AtomicU64,
    pub connections_evicted_memory: AtomicU64,
    /// hyperstatic_connection_memory_bytes: what this worker's open connections are charged now (server/budget.rs).
    pub connection_memory: AtomicU64,
    /// hyperstatic_pre_head_connections_evicted_total: connections closed while still waiting for their request
    /// head (handshake in progress or partial head) because a newer one took the worker past its pre-head budget.
    pub pre_head_evicted: AtomicU64,
    /// hyperstatic_slow_readers_closed_total: connections cut because their unsent output still held content a
    /// reload had already replaced (see `Shared::retire_below`).
    pub slow_readers_closed: AtomicU64,
    /// hyperstatic_proxy_protocol_refused_total: with `--proxy-protocol`, connections closed because they did not
    /// open with a valid PROXY v2 header (server/proxy.rs).
    pub proxy_refused: AtomicU64,
    /// hyperstatic_http2_connections_total and hyperstatic_http2_streams_total, by transport: [tls, cleartext].
    pub h2_connections: [AtomicU64; 2],
    pub h2_streams: [AtomicU64; 2],
    /// hyperstatic_http3_*_total (server/h3.rs): connections accepted, requests answered, Retry packets sent to
    /// unvalidated clients during a handshake flood, connections refused at the cap or while draining.
    pub h3_connections: AtomicU64,
    pub h3_streams: AtomicU64,
    pub h3_retries: AtomicU64,
    pub h3_refused: AtomicU64,
    /// hyperstatic_http3_connections_open: connections the worker holds (handshaking, open, or closing until
    /// drained); stored by the worker, each of which has its own HTTP/3 socket and connections.
    pub h3_open: AtomicU64,
    /// hyperstatic_requests_limited_total and hyperstatic_client_table_evictions_total (fairshare/).
    pub fair: crate::fairshare::table::Counters,
    /// hyperstatic_basic_auth_checks_total (guard/verified.rs): `Authorization` values checked against the htpasswd
    /// file, a worker's cache misses; shared with the worker's `Verified`, which counts them.
    pub basic_auth_checks: std::sync::Arc<AtomicU64>,
}

/// The counters' bump lives in counters.rs (timing.rs and tls/ count without importing this file); kept here
/// under its old path for the callers that still use it.
pub use crate::counters::bump;

pub struct Shared {
    pub cfg: Config,
    /// The content table the workers serve (swapped whole at reload).
    pub table: Published<Table>,
    /// First load done.
    pub loaded: AtomicBool,
    /// SIGTERM received: /readyz fails.
    pub draining: AtomicBool,
    /// POST /drain/release came while draining with a hold (--drain-hold): the drain delay runs from then.
    pub drain_released: AtomicBool,
    /// Drain delay over: workers stop accepting and close connections after their next response.
    pub stop_accepting: AtomicBool,
    pub reloads_ok: AtomicU64,
    pub reloads_failed: AtomicU64,
    /// Why the last load or reload failed (None after a success): hyperstatic_content_load_failed, /load-error.
    pub load_error: crate::site::load_error::LastLoadError,
    /// The site value serving and its loads (site_value/status.rs).
    pub site_value: crate::site_value::status::Status,
    pub stats: Vec<WorkerStats>,
    pub workers: usize,
    pub worker_cpus: String,
    pub pinned: bool,
    pub start_time: f64,
    /// The background encoder's store and progress (encoder.rs).
    pub encoder: encoder_state::State,
    /// HTTPS configuration and certificate reload state; None when TLS is off (set before the Arc is made).
    pub tls: Option<crate::tls::TlsState>,
    /// Set to the serving generation when a content load starts: a connection whose unsent output still holds a
    /// table older than this is closed by its worker, so a slow reader never keeps a third generation alive
    /// (the memory budget counts two: the serving table and the one being loaded).
    pub retire_below: AtomicU64,
    /// Connections still waiting for their request head that one worker holds at most
    /// (`memory::pre_head_per_worker` of the memory limit): the oldest is closed past it.
    pub pre_head_per_worker: usize,
    /// Bytes one worker's connections may hold together (`conn_budget::per_worker` of the memory limit; None
    /// without a limit): past it idle connections are closed, oldest idle first, or new ones refused.
    pub conn_budget_per_worker: Option<u64>,
    /// `--sites`: the pool the workers route requests into by host (pool/); None for a single site.
    pub pool: Option<Arc<crate::pool::Pool>>,
}

impl Shared {
    pub fn new(cfg: Config, workers: usize, worker_cpus: String, pinned: bool) -> Shared {
        let start_time =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64());
        let limit = crate::site::memory::Budget::of(cfg.memory_limit, cfg.memory_budget).limit;
        let pre_head_per_worker = crate::site::memory::pre_head_per_worker(limit, workers);
        let conn_budget_per_worker = crate::site::conn_budget::per_worker(limit, workers);
        Shared {
            encoder: encoder_state::State::new(&cfg),
            cfg,
            table: Published::new(Arc::new(Table::default())),
            loaded: AtomicBool::new(false),
            draining: AtomicBool::new(false),
            drain_released: AtomicBool::new(false),
            stop_accepting: AtomicBool::new(false),
            reloads_ok: AtomicU64::new(0),
            reloads_failed: AtomicU64::new(0),
            load_error: Default::default(),
            site_value: Default::default(),
            stats: (0..workers.max(1)).map(|_| WorkerStats::default()).collect(),
            workers,
            worker_cpus,
            pinned,
            start_time,
            tls: None,
            retire_below: AtomicU64::new(0),
            pre_head_per_worker,
            conn_budget_per_worker,
            pool: None,
        }
    }

    pub fn generation(&self) -> u64 {
        self.table.generation()
    }

    /// The current table and its generation (takes the mutex: not for the per-request path).
    pub fn table(&self) -> (Arc<Table>, u64) {
        self.table.get()
    }

    /// Installs a new table; workers pick it up on their next loop iteration.
    pub fn swap(&self, t: Table) {
        self.table.set(Arc::new(t));
    }

    /// Installs `t` only if no other table was installed since `generation` was read; false otherwise.
    pub fn swap_if(&self, generation: u64, t: Table) -> bool {
        self.table.set_if(generation, Arc::new(t))
    }

    pub fn ready(&self) -> bool {
        self.loaded.load(Ordering::Acquire) && !self.draining.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counted_code_has_its_own_slot() {
        let mut seen = std::collections::HashSet::new();
        for c in CODES {
            assert!(seen.insert(code_index(c)), "{c}");
            assert_eq!(CODES[code_index(c)], c);
        }
    }

    #[test]
    fn swap_bumps_generation() {
        let s = Shared::new(Config::default(), 1, "0".into(), false);
        let g0 = s.generation();
        s.swap(Table::default());
        assert_eq!(s.generation(), g0 + 1);
        assert!(!s.swap_if(g0, Table::default()), "a table read before the last swap is not installed");
        assert!(s.swap_if(g0 + 1, Table::default()));
        assert_eq!(s.generation(), g0 + 2);
        assert!(!s.ready());
        s.loaded.store(true, Ordering::Release);
        assert!(s.ready());
        s.draining.store(true, Ordering::Release);
        assert!(!s.ready());
    }
}
